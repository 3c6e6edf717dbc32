"""nbgrader's settings for the attnlab course (copied into the course folder by `attnlab class assignments`).

Run nbgrader in the course folder (the one that holds this file, source/ and, later, release/,
submitted/, autograded/ and feedback/):

    nbgrader generate_assignment lesson_00 --force      # students' version: no solutions, no hidden tests
    nbgrader autograde lesson_00 --create --force        # runs each submission with the hidden tests
    nbgrader generate_feedback lesson_00 --force         # HTML feedback per student

On the class server (classroom/hub/) the exchange is /srv/nbgrader/exchange, shared by the teacher
and the students; set NBGRADER_EXCHANGE to move it.
"""

import os
import sys

c = get_config()  # noqa: F821 - nbgrader provides get_config when it reads this file

c.CourseDirectory.course_id = "attnlab"
# the teacher's worked solutions (solutions_NN.py beside each source notebook) never leave the source
# folder; a student's results folder travels with the submission (class collect reads it)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "solutions_*.py"]
c.CourseDirectory.max_file_size = 10_000  # kB: a lesson's results folder fits, a stray model folder does not

# a student's answer cell keeps the lesson's own `answer = None` line above the region: the region
# itself becomes an empty line (and a build-it-yourself function keeps its `raise NotImplementedError`)
c.ClearSolutions.code_stub = {"python": ""}
c.ClearSolutions.text_stub = ""

# grading runs a whole lesson: allow a slow machine ten minutes per cell, and say what failed
c.Execute.timeout = 600
c.Execute.interrupt_on_timeout = True
# a graded run's kernel is stopped as soon as its last cell is done (the grades are in the notebook by
# then), not asked to exit: a kernel that imported torch takes a second or two tearing itself down
c.Execute.shutdown_kernel = "immediate"

c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")

# graded runs: the class file is found however the grader is started. A relative ATTNLAB_CLASS (the
# guide's `ATTNLAB_CLASS=class.json nbgrader autograde ...`) is made absolute here, from the folder the
# grader starts in, before any kernel (each runs in autograded/<student>/<assignment>/) reads it; without
# one, the course folder's class.json (`attnlab class assignments DIR --class FILE` puts it there) is the
# class file. The kernels read both from the environment they start with, which no notebook can change.
_course = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("ATTNLAB_CLASS", "").strip():
    os.environ["ATTNLAB_CLASS"] = os.path.abspath(os.path.expanduser(os.environ["ATTNLAB_CLASS"].strip()))
elif os.path.isfile(os.path.join(_course, "class.json")):
    os.environ["ATTNLAB_CLASS"] = os.path.join(_course, "class.json")
if "autograde" in sys.argv[1:3]:
    os.environ["ATTNLAB_GRADED_COURSE"] = _course
    # nbgrader's client polls for each cell's reply every second: a lesson's widget can make it miss the
    # wake-up for the reply on a busy machine, and the submission would wait for the cell's whole limit
    from attnlab.tools.kernel_replies import poll_every_client_in_slices

    poll_every_client_in_slices()
