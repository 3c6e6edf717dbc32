"""Which door the course was opened through (Colab, Binder, or a machine of one's own), and what
the course costs there.

:func:`which_door` reads only what each door leaves in the process: Colab imports
``google.colab`` at start-up and sets ``COLAB_RELEASE_TAG``; Binder sets
``BINDER_LAUNCH_HOST`` (and the course's own ``start`` script sets ``ATTNLAB_DOOR=binder``).
``load_model("auto")`` uses it: on a Colab runtime with no GPU the article's
``bert-base-chinese`` would make the course far longer (the minutes measured on a 2-core CPU, from
:mod:`attnlab.core.measured`), so "auto" takes the offline Chinese model there and says that the
article's model is one setting away.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from attnlab.core import measured
from attnlab.core.language import _

COLAB, BINDER, LOCAL = "colab", "binder", "local"
#: set by the course's Binder ``start`` script; also lets a test stand in for a door
DOOR_ENV = "ATTNLAB_DOOR"


def which_door() -> str:
    """``"colab"``, ``"binder"`` or ``"local"``."""
    named = os.environ.get(DOOR_ENV, "").strip().lower()
    if named in (COLAB, BINDER, LOCAL):
        return named
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return COLAB
    if os.environ.get("BINDER_LAUNCH_HOST") or os.environ.get("BINDER_REQUEST"):
        return BINDER
    return LOCAL


def has_gpu() -> bool:
    """True when torch sees a CUDA GPU."""
    return bool(torch.cuda.is_available())


def course_minutes(model: str) -> int | None:
    """The course's full-mode minutes on a 2-core CPU for a model of this name, if measured
    (:mod:`attnlab.core.measured`: the package's generated numbers)."""
    for name, minutes in measured.course_minutes_on_cpu().items():
        if name in model:
            return minutes
    return None


def colab_cpu_reason() -> str:
    """Why "auto" does not take the article's model on a Colab runtime with no GPU."""
    return _("this Colab runtime has no GPU, and on its CPU the article's {model} would make the course "
             "about {minutes} minutes long").format(model="bert-base-chinese",
                                                    minutes=course_minutes("bert-base-chinese"))


def colab_line(model: str, on_gpu: bool) -> str:
    """The line Colab adds under the loading line: which runtime this is, what the course costs on
    the chosen model, and how to change either."""
    if on_gpu:
        return _("Colab, GPU runtime: {model} runs on the GPU (the course's time on a GPU is not yet "
                 "measured; on a 2-core CPU it is about {minutes} minutes).").format(
                     model=model, minutes=course_minutes(model) or "?")
    minutes = course_minutes(model)
    cost = (_("the whole course takes about {minutes} minutes on {model} in full mode").format(
        minutes=minutes, model=model) if minutes else _("{model} runs on the CPU").format(model=model))
    return _("Colab, CPU runtime (no GPU): {cost}. For the article's bert-base-chinese (about {bert} minutes "
             "on this CPU), choose Runtime > Change runtime type > a GPU, or run "
             "os.environ['ATTNLAB_MODEL'] = 'bert-base-chinese' before loading.").format(
                 cost=cost, bert=course_minutes("bert-base-chinese"))


#: where a container's memory limit and use are read (cgroup v2, then v1)
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def memory_room(files: tuple[tuple[str, str], ...] = CGROUP_FILES) -> tuple[int, int] | None:
    """(limit, in use) in bytes of this container's memory, or None where no limit is set or readable."""
    for limit_file, usage_file in files:
        try:
            limit_text = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or not limit_text.isdigit() or int(limit_text) >= 1 << 50:
            return None
        return int(limit_text), usage
    return None


def memory_warning(files: tuple[tuple[str, str], ...] = CGROUP_FILES) -> str:
    """A sentence when this container has too little memory left for a lesson (other lessons' kernels
    still running, as on Binder), else ''."""
    room = memory_room(files)
    if room is None:
        return ""
    limit, used = room
    if limit - used >= measured.lesson_needs_bytes():  # the highest kernel peak on the offline default
        return ""
    return _("Only {free:.1f} GB of this session's {limit:.1f} GB are free ({used:.1f} GB in use, probably by the "
             "kernels of lessons opened before): this lesson may be stopped for lack of memory. Shut the other "
             "lessons' kernels down first (Kernel > Shut Down Kernel, or the Running panel on the left).").format(
                 free=(limit - used) / 1e9, limit=limit / 1e9, used=used / 1e9)
