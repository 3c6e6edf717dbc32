"""The door's advice where a lesson or the ``attnlab`` command loads a model.

:mod:`attnlab.core.door` knows the facts (which door the course came through, what the course costs
on a Colab runtime, how much memory this container has left) and :func:`attnlab.core.models.load_model`
loads and says which model runs and why; this module words what a student should know on top: on
Colab, which runtime this is, what the course costs on the chosen model and how to change either; on
a container short of memory (Binder with other lessons' kernels still running), that this lesson may
be stopped. Importing it registers :func:`door_advice` with :func:`attnlab.core.models.on_model_loaded`,
so every verbose load prints it; ``al.load_model``, the name every lesson types, is core's
:func:`~attnlab.core.models.load_model`, with this module imported beside it.
"""

from __future__ import annotations

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


models.on_model_loaded(door_advice)
