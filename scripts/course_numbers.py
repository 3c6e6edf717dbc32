"""Write the course's generated numbers and every document that quotes them (attnlab.tools.course_numbers).

    python scripts/course_numbers.py            # write attnlab/core/numbers.json, then every quoted number
    python scripts/course_numbers.py --check    # exit 1 (and say where) when a file is out of date
"""

from attnlab.tools.course_numbers import main

if __name__ == "__main__":
    raise SystemExit(main())
