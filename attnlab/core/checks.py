"""Checks of the arguments people type: one place, one wording.

Every function that takes a layer or head index, a batch size or a tolerance
checks it here, so a student gets the same clear message everywhere. numpy
integers (``np.int64`` from ``argmax``) are indices like any other; ``True`` is
not a number of heads.
"""

from __future__ import annotations

import numbers
from typing import Any

from attnlab.core.language import _


def check_index(value: Any, size: int, what: str, plural: str | None = None) -> int:
    """``value`` as a plain ``int`` in ``0..size-1``, or a clear error.

    Args:
        value: an ``int`` or a numpy integer (bools and floats are refused).
        size: how many there are (e.g. the model's number of layers).
        what: the thing indexed, e.g. ``"layer"`` or ``"head"``.
        plural: its plural for the message (default ``what + "s"``).

    Raises:
        TypeError: not an integer.
        ValueError: out of range; the message says the valid range and that
            indices are 0-based (the article's "layer 1" is index 0).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(_("{what} index must be an int, got {kind} ({value!r})").format(
            what=_shown(what), kind=type(value).__name__, value=value))
    value = int(value)
    if not 0 <= value < size:
        raise ValueError(
            _("{what} index {value} is out of range: there are {size} {things}, "
              "numbered 0..{last} in code (the article's '{what} 1' is index 0).").format(
                what=_shown(what), value=value, size=size, things=_shown(plural or what + "s"), last=size - 1))
    return value


def _shown(thing: str) -> str:
    """The name of a thing that is indexed (``"layer"``, ``"heads"``), in the current language."""
    names = {"layer": _("layer"), "layers": _("layers"), "head": _("head"), "heads": _("heads"),
             "text": _("text"), "texts": _("texts"), "token": _("token"), "tokens": _("tokens"),
             "row": _("row"), "rows": _("rows"), "column": _("column"), "columns": _("columns"),
             "query token": _("query token"), "query tokens": _("query tokens")}
    return names.get(thing, thing)


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an ``int`` >= 1 (numpy integers accepted), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(_("{name} must be a positive int, got {kind} ({value!r})").format(
            name=name, kind=type(value).__name__, value=value))
    if int(value) < 1:
        raise ValueError(_("{name} must be at least 1, got {value}").format(name=name, value=value))
    return int(value)


def check_fraction(value: Any, name: str, *, allow_zero: bool = True) -> float:
    """``value`` as a float in [0, 1] (or (0, 1] without ``allow_zero``), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(_("{name} must be a number, got {kind} ({value!r})").format(
            name=name, kind=type(value).__name__, value=value))
    value = float(value)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        raise ValueError((_("{name} must be in [0, 1], got {value}") if allow_zero
                          else _("{name} must be in (0, 1], got {value}")).format(name=name, value=value))
    return value


def check_positive_number(value: Any, name: str) -> float:
    """``value`` as a float > 0 (a tolerance, a time limit), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(_("{name} must be a number, got {kind} ({value!r})").format(
            name=name, kind=type(value).__name__, value=value))
    if not float(value) > 0:
        raise ValueError(_("{name} must be greater than 0, got {value}").format(name=name, value=value))
    return float(value)
