"""Pad text to a width in terminal columns, for tables whose cells may hold Chinese.

A wide character (Chinese, Japanese, Korean: ``unicodedata.east_asian_width`` is
``'W'`` or ``'F'``) takes two columns in a terminal; every other character one.
``str.ljust`` and ``f"{s:<14}"`` count characters, so a column of Chinese cells
comes out too wide and the next column misaligns. Standard library only, so the
doctor can use it on a broken installation.
"""

from __future__ import annotations

import unicodedata


def display_width(text: str) -> int:
    """The number of terminal columns ``text`` takes (wide characters count 2)."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def pad_right(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` columns (unchanged when already as wide)."""
    return text + " " * max(0, width - display_width(text))


def pad_left(text: str, width: int) -> str:
    """Spaces up to ``width`` columns, then ``text`` (right-aligned; unchanged when already as wide)."""
    return " " * max(0, width - display_width(text)) + text


def pad_center(text: str, width: int) -> str:
    """``text`` centred in ``width`` columns (the odd space goes right, as ``str.center`` does)."""
    room = max(0, width - display_width(text))
    return " " * (room // 2) + text + " " * (room - room // 2)
