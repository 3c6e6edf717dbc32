"""``attnlab class autograde``: a class's submissions autograded on every core, one nbgrader process each.

    cd course
    attnlab class autograde lesson_04                  # every submission of lesson 04, as many at once as cores
    attnlab class autograde lesson_05 lesson_06 ... lesson_12 --jobs 8
    attnlab class autograde lesson_04 --students ann bob --force

``nbgrader autograde lesson_04`` grades one submission after another. Here each submission is graded by
its own ``nbgrader autograde ASSIGNMENT --student S`` in the course folder, up to ``--jobs`` at once
(default: the CPU cores this process may use), so every graded run is the one nbgrader makes itself: its
kernel starts in ``autograded/<student>/<assignment>/``, on the class's model, with the student's own
results folder (:mod:`attnlab.core.class_setting`). Several assignments are graded in the order given,
student by student (one student's lessons never run at once, so lesson 12 reads that student's graded
lessons 05-11), different students side by side.

The gradebook is SQLite, and nbgrader does not retry a write that finds the database locked by another
writer: it removes that submission's graded copy and stops ("There was an error accessing the nbgrader
database"). So every process here gets the gradebook with a long busy wait (:data:`BUSY_WAIT_S`, in the
database address, which makes a writer wait for another's lock instead of failing after SQLite's 5 s),
the gradebook, the course and the students are made once before any grading starts (no two processes
create the same row), and a submission that still failed on a locked database is graded again
(:data:`LOCK_RETRIES` times).

Each grader's kernel talks over local sockets of its own, not TCP ports (:func:`grader_command`). Each
kernel gets ``cores // jobs`` threads (at least one) unless ``OMP_NUM_THREADS`` is set, and a
relative ``ATTNLAB_CLASS`` is made absolute from the folder the command starts in. Every submission's
nbgrader output goes to ``autograde-logs/<assignment>/<student>.log`` in the course folder. A failed
submission is named with the last error line of its log and its later assignments are not started;
A grader whose processes (nbgrader and its kernel) have done nothing for :data:`STALL_S` seconds waits on a
kernel that stopped answering (ipython/ipykernel#1554; nbgrader would wait out the cell's whole limit): it
is stopped and the submission graded again, once. Ctrl-C (or SIGTERM) stops the running graders the way nbgrader stops itself (its graded copy removed,
``submitted/`` untouched), and the same command grades what is left: without ``--force`` nbgrader skips
what is already graded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from attnlab.core import class_setting
from attnlab.tools.class_server import COURSE_ID

#: seconds a gradebook writer waits for another writer's lock before SQLite says "database is locked"
BUSY_WAIT_S = 300
#: how many more times a submission is graded when its grader still found the database locked
LOCK_RETRIES = 3
LOCKED = "database is locked"
LOGS = "autograde-logs"
GRADEBOOK = "gradebook.db"
#: seconds the graders get to stop cleanly after Ctrl-C before they are killed
STOP_WAIT_S = 30
#: a grader whose processes (nbgrader and its kernel) used under :data:`STALL_SHARE` of a core for this many
#: seconds has stalled: a kernel that stopped answering (ipython/ipykernel#1554) leaves nbgrader waiting for
#: the cell's whole limit. It is stopped and the submission graded again, once. Waiting, nbgrader and an idle
#: kernel together use about 0.5-1% of a core (their polls and heartbeats, measured on a 2-core Xeon), a
#: grading cell close to a whole core: 5% lies far from both
STALL_S = 120
STALL_SHARE = 0.05
#: seconds between two looks at a running grader
POLL_S = 2.0


def cores() -> int:
    """The CPU cores this process may run on (its affinity where the system says, else every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class Outcome:
    """One submission's grading: ``status`` is ``graded``, ``skipped`` (nbgrader kept an earlier grading),
    ``failed``, ``interrupted`` or ``not started``; ``seconds`` of its nbgrader run(s); ``tries``."""

    student: str
    assignment: str
    status: str = "not started"
    seconds: float = 0.0
    tries: int = 0
    reason: str = ""
    log: Path | None = None
    stalls: int = 0


@dataclass
class Plan:
    """What one run grades: ``chains`` maps each student to their assignments, in the order given."""

    course: Path
    chains: dict[str, list[str]]
    jobs: int
    force: bool = False
    create: bool = False
    env: dict[str, str] = field(default_factory=dict)


def db_url(course: Path, busy_wait_s: float = BUSY_WAIT_S) -> str:
    """The gradebook's address for SQLAlchemy, with SQLite's busy wait (seconds) in it."""
    return f"sqlite:///{(course / GRADEBOOK).resolve()}?timeout={busy_wait_s:g}"


def submissions(course: Path, assignments: Sequence[str], students: Sequence[str] | None = None) -> dict[str, list[str]]:
    """``{student: [assignment, ...]}``: who handed in which of ``assignments`` (``submitted/<student>/<a>/``),
    in the order of ``assignments``; only ``students`` where given.

    Raises:
        ValueError: no such assignment in ``source/``, or a named student handed in none of them.
    """
    unknown = [a for a in assignments if not (course / "source" / a).is_dir()]
    if unknown:
        raise ValueError(f"no assignment {', '.join(unknown)} in {course / 'source'}: run this in the course folder "
                         "(the one `attnlab class assignments` wrote), or give it with --course")
    submitted = course / "submitted"
    names = sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []
    if students:
        missing = [s for s in students if s not in names]
        if missing:
            raise ValueError(f"no submission from {', '.join(missing)} in {submitted}")
        names = [s for s in names if s in students]
    chains = {s: [a for a in assignments if (submitted / s / a).is_dir()] for s in names}
    return {s: chain for s, chain in chains.items() if chain}


def prepare_gradebook(course: Path, assignments: Sequence[str], students: Sequence[str], create: bool) -> None:
    """Make the gradebook, the course and (with ``create``) the students once, before the graders start.

    Raises:
        ValueError: an assignment nbgrader does not know yet (``nbgrader generate_assignment`` first), or
            (without ``create``) a student missing from the gradebook.
    """
    from nbgrader.api import Gradebook, MissingEntry  # the classroom extra

    with Gradebook(db_url(course), course_id=COURSE_ID) as gb:
        for name in assignments:
            try:
                gb.find_assignment(name)
            except MissingEntry:
                raise ValueError(f"nbgrader does not know {name} yet: run `nbgrader generate_assignment {name}` "
                                 "in the course folder first") from None
        known = {s.id for s in gb.students}
        unknown = [s for s in students if s not in known]
        if unknown and not create:
            raise ValueError(f"not in the gradebook: {', '.join(unknown)} (add them with `attnlab class roster`, "
                             "or grade with --create)")
        for name in unknown:
            gb.update_or_create_student(name)


def grader_env(jobs: int, environ: dict[str, str] | None = None, start: Path | None = None) -> dict[str, str]:
    """The graders' environment: ``cores // jobs`` threads per kernel (unless ``OMP_NUM_THREADS`` is set) and
    ``ATTNLAB_CLASS`` made absolute from ``start`` (default: the current folder)."""
    env = dict(os.environ if environ is None else environ)
    threads = str(max(1, cores() // max(1, jobs)))
    if not env.get("OMP_NUM_THREADS", "").strip():
        env["OMP_NUM_THREADS"] = threads
        env.setdefault("MKL_NUM_THREADS", threads)
    named = env.get(class_setting.ENV, "").strip()
    if named:
        env[class_setting.ENV] = str(((start or Path.cwd()) / Path(named).expanduser()).resolve())
    return env


def grader_command(plan: Plan, student: str, assignment: str, sockets: Path) -> list[str]:
    """``nbgrader autograde ASSIGNMENT --student STUDENT`` with the gradebook's busy wait, its kernel talking
    over local sockets in the folder ``sockets`` (its own): kernels started at the same moment on TCP can pick
    the same ports and answer each other's requests, and a request answered elsewhere leaves its cell
    waiting (seen as a kernel that stopped answering)."""
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--student", student,
               f"--CourseDirectory.db_url={db_url(plan.course)}", "--KernelManager.transport=ipc",
               f"--KernelManager.ip={sockets / 'kernel'}"]
    return command + (["--force"] if plan.force else []) + (["--create"] if plan.create else [])


def _children() -> dict[int, list[int]]:
    """``{pid: [child pids]}`` of every process (Linux's /proc; empty elsewhere)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else []:
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by ``pid`` and the processes under it, or None where the
    system does not say (not Linux)."""
    if not Path("/proc/self/stat").exists():
        return None
    tree, total, todo = _children(), 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
        todo += tree.get(current, [])
    return total


class Stall:
    """Watches one grader: :meth:`stalled` once its processes used under ``share`` of a core for ``seconds``."""

    def __init__(self, pid: int, seconds: float = STALL_S, share: float = STALL_SHARE) -> None:
        self.pid, self.seconds, self.share = pid, seconds, share
        self.since, self.cpu = time.monotonic(), tree_cpu_seconds(pid)

    def stalled(self) -> bool:
        cpu, now = tree_cpu_seconds(self.pid), time.monotonic()
        if cpu is None or self.cpu is None or cpu - self.cpu > self.share * max(now - self.since, POLL_S):
            self.since, self.cpu = now, cpu  # working: the window starts again
            return False
        return now - self.since >= self.seconds


def _reason(text: str) -> str:
    """The last error line nbgrader logged, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "[ERROR]" in line or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


class Runner:
    """Runs a :class:`Plan`'s chains, up to ``plan.jobs`` at once; :meth:`stop` ends the running graders."""

    def __init__(self, plan: Plan, command: Callable[[Plan, str, str, Path], list[str]] = grader_command,
                 say: Callable[[str], None] = print, stall_s: float = STALL_S) -> None:
        self.plan, self.command, self.say, self.stall_s = plan, command, say, stall_s
        self.outcomes = {(s, a): Outcome(s, a) for s, chain in plan.chains.items() for a in chain}
        self.running: dict[tuple[str, str], subprocess.Popen] = {}
        self.stopping = False

    def _run_once(self, outcome: Outcome) -> int | None:
        log = self.plan.course / LOGS / outcome.assignment / f"{outcome.student}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        outcome.log, outcome.tries = log, outcome.tries + 1
        sockets = Path(tempfile.mkdtemp(prefix="attnlab-grader-"))
        command = self.command(self.plan, outcome.student, outcome.assignment, sockets)
        with log.open("a", encoding="utf-8") as out:
            out.write(f"--- try {outcome.tries}: {' '.join(command)}\n")
            out.flush()
            process = subprocess.Popen(command, cwd=self.plan.course, env=self.plan.env, stdout=out,
                                       stderr=subprocess.STDOUT,
                                       start_new_session=True)  # Ctrl-C reaches it through stop(), not twice
            self.running[(outcome.student, outcome.assignment)] = process
            try:
                return self._watch(process, outcome)
            finally:
                self.running.pop((outcome.student, outcome.assignment), None)
                shutil.rmtree(sockets, ignore_errors=True)

    def _watch(self, process: subprocess.Popen, outcome: Outcome) -> int | None:
        """The grader's exit code, or None when it stalled (:class:`Stall`) and was stopped."""
        stall = Stall(process.pid, self.stall_s)
        while True:
            try:
                return process.wait(POLL_S)
            except subprocess.TimeoutExpired:
                if not self.stopping and self.stall_s and stall.stalled():
                    _stop([process])
                    outcome.stalls += 1
                    return None

    def grade(self, outcome: Outcome) -> Outcome:
        """Grade one submission, again while its grader found the gradebook locked."""
        start = time.monotonic()
        while not self.stopping:
            code = self._run_once(outcome)
            text = outcome.log.read_text(encoding="utf-8", errors="replace").split("--- try ")[-1]
            if code is None and not self.stopping:
                if outcome.stalls <= 1:
                    continue
                outcome.status = "failed"
                outcome.reason = (f"its kernel stopped answering twice (nothing ran for {self.stall_s:g} s; "
                                  "ipython/ipykernel#1554): grade it again")
                break
            if code == 0:
                outcome.status = "skipped" if "Skipping existing assignment" in text else "graded"
                break
            if self.stopping:
                outcome.status, outcome.reason = "interrupted", "stopped before it finished"
                break
            if LOCKED in text and outcome.tries <= LOCK_RETRIES:
                time.sleep(1 + outcome.tries)
                continue
            outcome.status, outcome.reason = "failed", _reason(text)
            break
        else:
            outcome.status, outcome.reason = "interrupted", "stopped before it started"
        outcome.seconds = round(time.monotonic() - start, 1)
        return outcome

    def chain(self, student: str) -> list[Outcome]:
        """One student's assignments in order; after a failure the rest are not started."""
        done = []
        for assignment in self.plan.chains[student]:
            outcome = self.outcomes[(student, assignment)]
            if self.stopping:
                break
            done.append(self.grade(outcome))
            self.say(_line(outcome))
            if outcome.status not in ("graded", "skipped"):
                break
        for assignment in self.plan.chains[student][len(done):]:
            self.outcomes[(student, assignment)].reason = (
                "an earlier assignment of this student did not grade" if not self.stopping else "stopped")
        return done

    def stop(self) -> None:
        """Stop: no new grader starts, each running one gets SIGINT (nbgrader removes its half-graded copy), and
        is killed after :data:`STOP_WAIT_S`."""
        self.stopping = True
        _stop(list(self.running.values()))

    def run(self) -> list[Outcome]:
        """Every chain, ``plan.jobs`` at once; on Ctrl-C (KeyboardInterrupt) :meth:`stop`, then half-graded
        copies removed (:func:`remove_partial`), and the outcomes returned."""
        pool = ThreadPoolExecutor(max_workers=max(1, self.plan.jobs))
        futures: list[Future] = [pool.submit(self.chain, s) for s in self.plan.chains]
        try:
            pending = set(futures)
            while pending:
                _done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            self.stop()
            wait(futures)
        finally:
            pool.shutdown(wait=True)
        for outcome in self.outcomes.values():
            if outcome.status in ("interrupted", "failed", "not started"):
                remove_partial(self.plan.course, outcome)
        return list(self.outcomes.values())


def _stop(processes: list[subprocess.Popen]) -> None:
    """SIGINT to each grader's process group (nbgrader removes its half-graded copy), SIGKILL to those still
    running after :data:`STOP_WAIT_S`."""
    for process in processes:
        _signal(process, signal.SIGINT)
    deadline = time.monotonic() + STOP_WAIT_S
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            process.wait()


def _signal(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def remove_partial(course: Path, outcome: Outcome) -> None:
    """Remove the graded copy of a submission that did not finish (``autograded/<student>/<assignment>``),
    so that the next run grades it; the student's results folder and ``submitted/`` are kept."""
    if outcome.status == "not started":
        return
    folder = course / class_setting.AUTOGRADED / outcome.student / outcome.assignment
    if folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)


def _line(outcome: Outcome) -> str:
    text = f"{outcome.student} {outcome.assignment}: {outcome.status}"
    if outcome.status in ("graded", "skipped"):
        again = " (its kernel stopped answering, graded again)" if outcome.stalls else (
            f" ({outcome.tries} tries)" if outcome.tries > 1 else "")
        return text + f" in {outcome.seconds:.1f} s" + again
    return text + (f": {outcome.reason}" if outcome.reason else "") + (f" (log: {outcome.log})" if outcome.log else "")


def summary(outcomes: Sequence[Outcome], seconds: float, jobs: int) -> list[str]:
    """The closing lines: counts, and for what did not grade, the command that grades it."""
    counts = {k: sum(o.status == k for o in outcomes) for k in ("graded", "skipped", "failed", "interrupted",
                                                                 "not started")}
    lines = [f"{counts['graded']} graded, {counts['skipped']} already graded (kept), {counts['failed']} failed, "
             f"{counts['interrupted']} interrupted, {counts['not started']} not started; {seconds:.1f} s with "
             f"{jobs} at once"]
    left = [o for o in outcomes if o.status not in ("graded", "skipped")]
    for o in left:
        if o.status != "interrupted":
            lines.append(_line(o))
    if left:
        students = sorted({o.student for o in left})
        assignments = [a for a in dict.fromkeys(o.assignment for o in outcomes) if any(x.assignment == a for x in left)]
        lines.append("nothing of theirs is lost (submitted/ is untouched); grade the rest with: attnlab class autograde "
                     f"{' '.join(assignments)} --students {' '.join(students)}")
    return lines


def autograde(course: str | Path, assignments: Sequence[str], *, jobs: int | None = None,
              students: Sequence[str] | None = None, force: bool = False, create: bool = False,
              say: Callable[[str], None] = print, stall_s: float = STALL_S) -> list[Outcome]:
    """Autograde ``assignments`` (in order, per student) for every submission in ``course``, ``jobs`` at once
    (default :func:`cores`); a grader idle for ``stall_s`` seconds is stopped and run again (:class:`Stall`).
    Returns each submission's :class:`Outcome`."""
    course = Path(course).resolve()
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # started in the background: SIGINT still stops
    chains = submissions(course, assignments, students)
    if not chains:
        say(f"no submission of {', '.join(assignments)} in {course / 'submitted'}")
        return []
    jobs = max(1, min(jobs or cores(), len(chains)))
    prepare_gradebook(course, assignments, list(chains), create)
    plan = Plan(course, chains, jobs, force, create, grader_env(jobs))
    say(f"grading {sum(map(len, chains.values()))} submissions of {len(chains)} students, {jobs} at once, "
        f"{plan.env['OMP_NUM_THREADS']} thread(s) each; logs in {course / LOGS}")
    start = time.monotonic()
    outcomes = Runner(plan, say=say, stall_s=stall_s).run()
    for line in summary(outcomes, time.monotonic() - start, jobs):
        say(line)
    return outcomes


def _terminate_as_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _autograde_cmd(args: argparse.Namespace) -> int:
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        outcomes = autograde(args.course, args.assignments, jobs=args.jobs, students=args.students,
                             force=args.force, create=args.create)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if any(o.status == "interrupted" for o in outcomes):
        return 130
    return 1 if any(o.status not in ("graded", "skipped") for o in outcomes) else 0


def add_class_cli(sub: argparse._SubParsersAction) -> None:
    """Register ``attnlab class autograde`` under ``attnlab class``."""
    g = sub.add_parser("autograde", help="nbgrader autograde for the whole class, on every core")
    g.add_argument("assignments", nargs="+", help="assignments to grade, in this order per student (e.g. lesson_04)")
    g.add_argument("--course", default=".", help="the nbgrader course folder (default: this folder)")
    g.add_argument("--jobs", "-j", type=int, default=None,
                   help=f"submissions graded at once (default: the CPU cores, {cores()} here)")
    g.add_argument("--students", nargs="*", default=None, help="only these students (default: every submission)")
    g.add_argument("--force", action="store_true", help="grade again what is already graded (nbgrader's --force)")
    g.add_argument("--create", action="store_true", help="add students missing from the gradebook (nbgrader's --create)")
    g.set_defaults(func=_autograde_cmd)
