"""What a token is, read from its text: punctuation, a word piece, or neither.

One rule for every measurement that sorts tokens (:mod:`attnlab.analysis.head_stats`'s
punctuation mass, :mod:`attnlab.analysis.sinks`' kinds of token): a token's word-piece,
byte-BPE or SentencePiece mark (``##``, ``Ġ``, ``▁``) is not part of what it is, so the
offline default's ``▁,`` is punctuation like ``,`` and ``，``, and a bare ``▁`` is neither
punctuation nor a word.
"""

from __future__ import annotations

import unicodedata

#: word-piece, byte-BPE and SentencePiece prefixes
PIECE_MARKS = ("##", "\u0120", "\u2581")


def strip_piece_mark(token: str) -> str:
    """The token without its word-piece, byte-BPE or SentencePiece prefix (``"##ing"`` -> ``"ing"``,
    ``"▁,"`` -> ``","``)."""
    for mark in PIECE_MARKS:
        if token.startswith(mark):
            return token[len(mark):]
    return token


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation once its piece mark is off (``"?"``, ``"，"``,
    ``"##."``, ``"▁,"``); False for a bare mark (``"▁"``, ``"##"``), words and special tokens."""
    token = strip_piece_mark(token)
    return bool(token) and all(unicodedata.category(ch).startswith("P") for ch in token)


def is_word(token: str) -> bool:
    """True for a piece with at least one letter or digit (``"chess"``, ``"##s"``, ``"▁2020"``);
    False for a bare ``"▁"``, punctuation or symbols."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in strip_piece_mark(token))
