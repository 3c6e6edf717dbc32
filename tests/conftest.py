"""Shared fixtures: tiny random models saved to disk, and the bundled MiniLM.

Tiny models are built once per test session with
:func:`attnlab.tools.testing.save_tiny_model` and loaded through the public
``load_model(folder)`` path, so loading is tested every time.
"""

from __future__ import annotations

import os

import pytest
import torch

import attnlab as al
from attnlab.tools.testing import save_tiny_model

#: torch's threads in this process: the share scripts/test.sh gives each worker (OMP_NUM_THREADS), else at
#: most 2; a worker taking more than its share makes the workers' threads wait for each other
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or min(2, os.cpu_count() or 1)))

#: the order tests are handed to the workers in: the longest first, the many short ones last to fill the gaps
START_FIRST = ("slow", "notebooks")


def start_rank(item: pytest.Item) -> int:
    """0 for a ``slow`` test, 1 for a lesson execution (``notebooks``), 2 for the rest; 0 for every test of
    an ``xdist_group``: a group is one unit of work whatever its tests' ranks, and its tests keep the files'
    order (a test that reads what an earlier test of its group recorded comes after it, and a module's
    fixtures are made once)."""
    if group_of(item):
        return 0
    for rank, marker in enumerate(START_FIRST):
        if item.get_closest_marker(marker) is not None:
            return rank
    return len(START_FIRST)


def group_of(item: pytest.Item) -> str:
    """The ``xdist_group`` name(s) of ``item``, joined as xdist joins them ("" for none)."""
    return "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                            for m in item.iter_markers("xdist_group")}))


def name_groups(items: list[pytest.Item]) -> None:
    """Put each test's ``xdist_group`` at the end of its node id (``...@doors``), where
    ``--dist loadgroup`` reads it. xdist writes it into ``item._nodeid``, which pytest 9 no longer reads
    (its node ids are ``item._id``), so without this every group would be split across the workers;
    where xdist's own renaming took, nothing is done."""
    from _pytest.nodeid import NodeId

    for item in items:
        group = group_of(item)
        if group and not item.nodeid.endswith(f"@{group}") and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """With several workers (``pytest -n``), the slow tests and the lesson executions start first, so
    that no long test begins when the short ones are done (xdist hands tests out in collection order,
    a group of tests, ``xdist_group``, as one unit), and each group runs on one worker. One worker
    keeps the files' order, and with it each module's fixtures built once."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=start_rank)  # stable: within a rank, the files' order
        if getattr(config.option, "loadgroup", False):
            name_groups(items)


@pytest.fixture(scope="session")
def tiny_factory(tmp_path_factory):
    """``tiny_factory(arch="bert", language="en", **kw)`` -> LoadedModel, cached per argument set."""
    cache: dict = {}

    def make(arch: str = "bert", language: str = "en", **kw) -> "al.LoadedModel":
        key = (arch, language, tuple(sorted(kw.items())))
        if key not in cache:
            folder = tmp_path_factory.mktemp(f"tiny-{arch}-{language}")
            save_tiny_model(folder, arch=arch, language=language, **kw)
            cache[key] = al.load_model(str(folder), verbose=False)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def tiny_en(tiny_factory):
    """Tiny random English BERT: 2 layers x 12 heads, hidden 48."""
    return tiny_factory("bert", "en")


@pytest.fixture(scope="session")
def tiny_zh(tiny_factory):
    """Tiny random Chinese character-level BERT shaped like bert-base-chinese (12 heads)."""
    return tiny_factory("bert", "zh")


@pytest.fixture(scope="session")
def bundled():
    """The real bundled MiniLM (6 layers x 12 heads)."""
    return al.load_model("bundled", verbose=False)


@pytest.fixture(params=["tiny_en", "tiny_zh", "bundled"])
def each_model(request):
    """The tiny English, the tiny Chinese and the bundled model in turn: a test taking it runs once with each."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def zh_course_run(tmp_path_factory):
    """Chinese lessons 05 and 12 run once, in smoke mode, in a course folder of their own
    (tests/zh_course.py): a :class:`zh_course.ZhCourseRun`."""
    import zh_course  # tests/zh_course.py

    with pytest.MonkeyPatch.context() as patch:
        for key in ("ATTNLAB_RESULTS", "ATTNLAB_LANG", "MPLBACKEND"):
            patch.delenv(key, raising=False)  # the course's one results folder; the lessons' own cells switch
        patch.setenv("ATTNLAB_SMOKE", "1")
        return zh_course.run(tmp_path_factory.mktemp("zh-course"))


@pytest.fixture(scope="session")
def html_course(zh_course_run, tmp_path_factory):
    """``scripts/course_html.py`` on lesson 05 of both editions, in smoke mode: the Chinese lesson as the
    course run executed it, the English one executed by the command first. A :class:`zh_course.HtmlCourse`:
    the pages' folder and the executed copies' (the English lesson 05 the command ran, kept there)."""
    import subprocess
    import sys

    import nbformat
    import zh_course  # tests/zh_course.py

    lesson = zh_course.LESSONS[0]
    out, executed = tmp_path_factory.mktemp("html"), tmp_path_factory.mktemp("executed")
    (executed / "zh").mkdir()
    nbformat.write(zh_course_run.books[lesson], str(executed / "zh" / f"{lesson}.ipynb"))
    env = {**os.environ, "ATTNLAB_SMOKE": "1", "ATTNLAB_OFFLINE": "1",
           "ATTNLAB_RESULTS": str(tmp_path_factory.mktemp("results"))}
    env.pop("MPLBACKEND", None)
    built = subprocess.run([sys.executable, str(zh_course.ROOT / "scripts" / "course_html.py"), lesson[:2],
                            "--out", str(out), "--executed", str(executed)], cwd=zh_course.ROOT, env=env, check=True,
                           timeout=1800, capture_output=True, text=True)
    assert f"running notebooks/{lesson}.ipynb first" in built.stdout  # the English lesson had no executed copy
    assert f"running notebooks/zh/{lesson}.ipynb" not in built.stdout  # the Chinese one had
    assert (executed / f"{lesson}.ipynb").is_file()  # the English copy the command executed, kept
    return zh_course.HtmlCourse(out=out, executed=executed)


@pytest.fixture
def chinese():
    """Chinese for the duration of a test, then back to what it was (figures drawn in it closed)."""
    import matplotlib.pyplot as plt

    from attnlab.core import language

    before = language.current_language()
    language.set_language("zh")
    yield
    language.set_language(before)
    plt.close("all")


@pytest.fixture
def attempts_folder(tmp_path, monkeypatch):
    """A results folder of the test's own, where checked exercises save their attempts; the teacher's
    solutions off (unless a test switches them on)."""
    from attnlab.course import attempts

    folder = tmp_path / "results"
    monkeypatch.setenv("ATTNLAB_RESULTS", str(folder))
    monkeypatch.delenv(attempts.SOLUTIONS_ENV, raising=False)
    monkeypatch.setitem(attempts._switch, "solutions", None)
    return folder
