"""The teacher's worked solutions (``classroom/solutions/lesson_NN.py``), which the installed package does
not hold: tests load them from the course's source folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parents[1] / "classroom" / "solutions"


def teacher(lesson: str) -> ModuleType:
    """The module ``classroom/solutions/lesson_<lesson>.py``, loaded once."""
    name = f"classroom_solutions_{lesson}"
    spec = importlib.util.spec_from_file_location(name, FOLDER / f"lesson_{lesson}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
