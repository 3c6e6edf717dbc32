"""The door's advice where a lesson or the ``attnlab`` command loads a model.

:mod:`attnlab.core.door` knows the facts (which door the course came through, what the course costs
on a Colab runtime, how much memory this container has left) and :func:`attnlab.core.models.load_model`
loads and says which model runs and why; this module prints what a student should know on top: on
Colab, which runtime this is, what the course costs on the chosen model and how to change either; on
a container short of memory (Binder with other lessons' kernels still running), that this lesson may
be stopped. ``al.load_model``, the name every lesson types, is :func:`load_model` here.
"""

from __future__ import annotations

from typing import Any

from attnlab.core import door, models
from attnlab.core.models import LoadedModel


def door_advice(m: LoadedModel) -> list[str]:
    """The lines this door adds under the loading line of ``m``: Colab's runtime line, and the memory
    warning of a container with too little left for a lesson (none on a machine of one's own)."""
    lines = []
    if door.which_door() == door.COLAB:
        lines.append(door.colab_line(m.name, m.device.type == "cuda"))
    warning = door.memory_warning()
    if warning:
        lines.append(warning)
    return lines


def load_model(name: str = "auto", *, verbose: bool = True, **options: Any) -> LoadedModel:
    """:func:`attnlab.core.models.load_model` (same arguments), then, with ``verbose``, the door's advice
    (:func:`door_advice`) under its line."""
    m = models.load_model(name, verbose=verbose, **options)
    if verbose:
        for line in door_advice(m):
            print(line)
    return m
