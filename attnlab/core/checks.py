"""Checks of the arguments people type: one place, one wording.

Every function that takes a layer or head index, a batch size or a tolerance
checks it here, so a student gets the same clear message everywhere. numpy
integers (``np.int64`` from ``argmax``) are indices like any other; ``True`` is
not a number of heads.
"""

from __future__ import annotations

import numbers
from typing import Any


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
        raise TypeError(f"{what} index must be an int, got {type(value).__name__} ({value!r})")
    value = int(value)
    if not 0 <= value < size:
        raise ValueError(
            f"{what} index {value} is out of range: there are {size} {plural or what + 's'}, "
            f"numbered 0..{size - 1} in code (the article's '{what} 1' is index 0)."
        )
    return value


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an ``int`` >= 1 (numpy integers accepted), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__} ({value!r})")
    if int(value) < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def check_fraction(value: Any, name: str, *, allow_zero: bool = True) -> float:
    """``value`` as a float in [0, 1] (or (0, 1] without ``allow_zero``), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    value = float(value)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        raise ValueError(f"{name} must be in {'[0' if allow_zero else '(0'}, 1], got {value}")
    return value


def check_positive_number(value: Any, name: str) -> float:
    """``value`` as a float > 0 (a tolerance, a time limit), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    if not float(value) > 0:
        raise ValueError(f"{name} must be greater than 0, got {value}")
    return float(value)
