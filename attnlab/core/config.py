"""Course-wide switches read from the environment.

``ATTNLAB_SMOKE=1`` shrinks every lesson to a quick pass (used by CI and by
teachers who want to check a machine before class). ``ATTNLAB_MODEL`` picks the
model that ``load_model("auto")`` uses, e.g. a local folder prepared offline.
``ATTNLAB_DEVICE`` overrides the device that ``load_model`` picks (``cpu``, ``cuda``, ``mps``).
``ATTNLAB_OFFLINE=1`` means no network at all: no model hub, no CDN, not even a probe.
``ATTNLAB_HUB_TIMEOUT`` is how many seconds the model hub may stay silent (15 by default).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TypeVar

from attnlab.core import class_setting
from attnlab.core.language import _

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}


def is_smoke() -> bool:
    """True when ``ATTNLAB_SMOKE`` asks for the fast, reduced run; a class setting's mode decides instead
    (:mod:`attnlab.core.class_setting`)."""
    setting = class_setting.current()
    if setting is not None:
        return setting.smoke
    return os.environ.get("ATTNLAB_SMOKE", "").strip().lower() in _TRUE


def pick(full: T, smoke: T) -> T:
    """Return ``smoke`` in smoke mode, ``full`` otherwise.

    Lessons use it for every size knob, e.g. ``n_queries = pick(100_000, 300)``.
    """
    return smoke if is_smoke() else full


def is_offline() -> bool:
    """True when ``ATTNLAB_OFFLINE`` forbids every network access (hub, CDN, probes)."""
    return os.environ.get("ATTNLAB_OFFLINE", "").strip().lower() in _TRUE


#: seconds the model hub may stay silent before ``load_model`` gives up on it
HUB_TIMEOUT_S = 15.0


def hub_timeout() -> float:
    """Seconds the model hub may take to answer (``ATTNLAB_HUB_TIMEOUT``, default 15).

    Raises:
        ValueError: the variable is set but is not a positive number.
    """
    raw = os.environ.get("ATTNLAB_HUB_TIMEOUT", "").strip()
    if not raw:
        return HUB_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"ATTNLAB_HUB_TIMEOUT={raw!r} is not a positive number of seconds (e.g. 15)")
    return value


def device_override() -> str | None:
    """The device named by ``ATTNLAB_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``), or None."""
    value = os.environ.get("ATTNLAB_DEVICE", "").strip()
    return value or None


def model_override() -> str | None:
    """The model named by ``ATTNLAB_MODEL``, or None when it is unset or empty."""
    value = os.environ.get("ATTNLAB_MODEL", "").strip()
    return value or None


def mode_line() -> str:
    """One human-readable line describing the current run mode."""
    line = _("smoke mode (ATTNLAB_SMOKE=1): reduced sizes") if is_smoke() else _("full mode")
    setting = class_setting.current()
    if setting is not None:
        line += " · " + _("class setting {setting} ({source})").format(setting=setting.describe(),
                                                                       source=setting.source)
    return line


@contextlib.contextmanager
def smoke_mode(smoke: bool) -> Iterator[None]:
    """Set ``ATTNLAB_SMOKE`` for the duration of a ``with`` block, restoring the previous value."""
    previous = os.environ.get("ATTNLAB_SMOKE")
    os.environ["ATTNLAB_SMOKE"] = "1" if smoke else "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("ATTNLAB_SMOKE", None)
        else:
            os.environ["ATTNLAB_SMOKE"] = previous
