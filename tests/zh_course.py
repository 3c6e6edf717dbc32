"""Chinese lessons 05 and 12, run once per test session in a course folder of their own (conftest's
``zh_course`` fixture), for every test that reads them: the Chinese edition's check that a lesson shows
only Chinese, the doors' check that lesson 12 reads what lesson 05 saved in the course's one results
folder, and the course to read's Chinese page of lesson 05 (tests/test_html_course.py, whose command runs
the English lesson 05 that ``test_notebook_runs_in_smoke_mode`` reads). Lesson 05 runs first and saves its
record; lessons 06-11's records are hand-made (tests/lesson_records.py, through ``seed_earlier_lessons``);
lesson 12 then judges the conclusions.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnlab.course.lesson_results import HeadPatternsResult
from attnlab.tools import figure_texts, lesson_runner

ROOT = Path(__file__).resolve().parents[1]
#: the lessons run, in this order
LESSONS = ("05_reading_heatmaps", "12_conclusions")
#: the tests that read the run share one test worker, so that it runs once
GROUP = pytest.mark.xdist_group("zh-course")


@dataclass
class ZhCourseRun:
    """What the run left: the course folder, each executed notebook and its figures' texts, and lesson
    05's record as lesson 05 saved it (None if it saved none), read before lesson 12 ran."""

    course: Path
    books: dict
    figures: dict
    saved_by_05: str | None

    @property
    def lessons(self) -> Path:
        return self.course / "notebooks" / "zh"

    @property
    def saved(self) -> Path:
        """Lesson 05's record in the course's one results folder."""
        return self.course / "results" / f"{HeadPatternsResult.file_name}.json"


@dataclass
class HtmlCourse:
    """The course to read made from the run (conftest's ``html_course``): the pages' folder, and the folder of
    the executed copies, which holds the English lesson 05 the command ran itself."""

    out: Path
    executed: Path


def run(folder: Path) -> ZhCourseRun:
    """Run Chinese lessons 05 and 12 in ``folder / "course"`` (a course root: ``attnlab/`` beside
    ``notebooks/``), the caller having set smoke mode and unset ATTNLAB_RESULTS, ATTNLAB_LANG and MPLBACKEND."""
    from test_notebooks import seed_earlier_lessons  # tests/test_notebooks.py

    done = ZhCourseRun(course=folder / "course", books={}, figures={}, saved_by_05=None)
    (done.course / "attnlab").mkdir(parents=True)
    done.lessons.mkdir(parents=True)
    for name in LESSONS:
        shutil.copy2(ROOT / "notebooks" / "zh" / f"{name}.ipynb", done.lessons / f"{name}.ipynb")
    for name in LESSONS:
        texts = folder / f"{name}-figure-texts.jsonl"
        done.books[name] = lesson_runner.execute_recording(done.lessons / f"{name}.ipynb", texts)
        done.figures[name] = figure_texts.read(texts)
        if name == "05_reading_heatmaps":
            done.saved_by_05 = done.saved.read_text() if done.saved.is_file() else None
            others = folder / "others"
            seed_earlier_lessons(others)  # lessons 06-11, by hand (05's own record is the one just saved)
            (done.course / "results").mkdir(exist_ok=True)
            for path in others.glob("*.json"):
                if path.name != done.saved.name:
                    shutil.copy2(path, done.course / "results" / path.name)
    return done
