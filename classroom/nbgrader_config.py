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
