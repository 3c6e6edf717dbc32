"""Texts of one token length for the tiny English models (the tests of lessons 08-09 share them)."""

from __future__ import annotations

import random

from attnlab.tools.testing import _EN_WORDS

#: Words of the tiny English vocabulary that are one token each ("a" and "i" left out).
WORDS = [w for w in _EN_WORDS if w not in ("a", "i")]


def same_length_texts(n: int, words: int = 5, seed: int = 0) -> list[str]:
    """``n`` texts of ``words`` single-token words each (``words + 2`` tokens with [CLS]/[SEP])."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]
