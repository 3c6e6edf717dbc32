"""A SentencePiece "precompiled charsmap" built from a per-code-point map.

SentencePiece stores its text normalisation as one binary blob, and the
``tokenizers`` library can run such a blob (``normalizers.Precompiled``). The
blob is::

    u32 trie_bytes
    trie: trie_bytes / 4 units (u32), a double-array trie over UTF-8 bytes
    normalized: the replacement strings, UTF-8, each ended by a NUL byte

The trie maps the UTF-8 bytes of a source string to the offset of its
replacement in ``normalized``. Here every key is one code point, so a key is
1 to 4 bytes.

How a double-array trie is walked. Every node sits at a position ``p`` of the
unit array and has a *base* ``b``; the child reached by byte ``c`` sits at
``b ^ c``. A unit packs:

* bits 0-7: the label, the byte that leads to this node (the walk checks it,
  so an empty slot or another node's child is not mistaken for a child);
* bit 8: the node ends a key; its value is stored in the unit at ``b ^ 0``;
* bits 10-30: ``p ^ b``, the XOR distance to the base (bit 9 set would mean
  "shifted left by 8", not needed for small tries);
* a value unit has bit 31 set and the value in bits 0-30.

Two nodes must never share a base: if they did, a byte that is a child of one
would also be found under the other. Unused units hold bit 31 only, whose
label matches no byte, and the array reaches past every base's 256 slots
(``tokenizers`` reads the slot of any byte without a bounds check).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

LEAF_BIT = 1 << 31
HAS_LEAF_BIT = 1 << 8
OFFSET_SHIFT = 10
#: offsets must fit in 21 bits (the unit array stays below 2**21 entries)
MAX_UNITS = 1 << 21
#: what unused units hold: a label no byte can match
EMPTY_UNIT = LEAF_BIT


class _Node:
    __slots__ = ("children", "value")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.value: int | None = None


def is_encodable(code_point: int) -> bool:
    """True for code points that can appear in text (all but the UTF-16 surrogates)."""
    return 0 <= code_point <= 0x10FFFF and not 0xD800 <= code_point <= 0xDFFF


def build_charsmap(table: Mapping[int, str]) -> bytes:
    """The precompiled charsmap for ``table`` (code point -> replacement string).

    Code points not in ``table`` are left unchanged by the charsmap; a
    replacement may be empty (the code point is deleted). Surrogate code
    points cannot occur in text and are skipped.
    """
    normalized, value_of = _replacement_blob(table)
    root = _Node()
    for code_point, replacement in table.items():
        if not is_encodable(code_point):
            continue
        node = root
        for byte in chr(code_point).encode("utf-8"):
            node = node.children.setdefault(byte, _Node())
        node.value = value_of[replacement]
    units = _place(root)
    return struct.pack("<I", 4 * len(units)) + units.astype("<u4").tobytes() + normalized


def _replacement_blob(table: Mapping[int, str]) -> tuple[bytes, dict[str, int]]:
    """Every distinct replacement once, NUL-ended: the blob and replacement -> byte offset."""
    blob = bytearray()
    value_of: dict[str, int] = {}
    for replacement in sorted(set(table.values())):
        if "\x00" in replacement:
            raise ValueError("a replacement string may not contain U+0000 (the blob's terminator)")
        value_of[replacement] = len(blob)
        blob += replacement.encode("utf-8") + b"\x00"
    return bytes(blob), value_of


def _place(root: _Node) -> np.ndarray:
    """Lay the trie out as a double array: ``(n_units,)`` uint32.

    Breadth first: for each node, find a base not used by any other node whose
    slots ``base ^ label`` (label 0 for the value) are all free.
    """
    units: list[int] = [0]                 # position 0: the root (label 0)
    used = {0}                             # occupied positions
    bases: set[int] = set()                # bases already taken
    queue: deque[tuple[_Node, int]] = deque([(root, 0)])
    search_from = 1
    while queue:
        node, pos = queue.popleft()
        labels = sorted(node.children) + ([0] if node.value is not None else [])
        base = _free_base(labels, used, bases, search_from)
        while search_from in bases or search_from in used:
            search_from += 1
        bases.add(base)
        slots = [base ^ label for label in labels]
        if max(slots) >= MAX_UNITS:
            raise ValueError("the map is too large for a 21-bit double-array trie")
        if max(slots) >= len(units):
            units.extend([EMPTY_UNIT] * (max(slots) + 1 - len(units)))
        used.update(slots)
        units[pos] |= (pos ^ base) << OFFSET_SHIFT
        if node.value is not None:
            units[pos] |= HAS_LEAF_BIT
            units[base] = LEAF_BIT | node.value
        for label, child in sorted(node.children.items()):
            units[base ^ label] = label
            queue.append((child, base ^ label))
    # a walk may probe any byte under any base: keep every base's 256 slots inside the array
    units.extend([EMPTY_UNIT] * ((max(bases) | 0xFF) + 1 - len(units)))
    return np.array(units, dtype=np.uint32)


def _free_base(labels: list[int], used: set[int], bases: set[int], start: int) -> int:
    """The smallest base >= ``start``, not yet a base, whose slots are all free."""
    base = start
    while base in bases or any((base ^ label) in used for label in labels):
        base += 1
    return base


def parse_charsmap(charsmap: bytes) -> tuple[np.ndarray, bytes]:
    """Split a charsmap into its trie units ``(n_units,)`` uint32 and the replacement blob."""
    (trie_bytes,) = struct.unpack_from("<I", charsmap, 0)
    units = np.frombuffer(charsmap, dtype="<u4", count=trie_bytes // 4, offset=4)
    return units, charsmap[4 + trie_bytes:]


def prefix_values(units: Sequence[int], key: bytes) -> list[int]:
    """Values of every key that is a prefix of ``key``, shortest first (a common-prefix search).

    ``units`` as from :func:`parse_charsmap` (a list is fastest).
    """
    found = []
    unit = int(units[0])
    pos = _offset(unit)                     # the root's base
    for byte in key:
        pos ^= byte
        if pos >= len(units):
            break
        unit = int(units[pos])
        if unit & (LEAF_BIT | 0xFF) != byte:
            break
        pos ^= _offset(unit)                # this node's base
        if unit & HAS_LEAF_BIT:
            found.append(int(units[pos]) & (LEAF_BIT - 1))
    return found


def _offset(unit: int) -> int:
    return (unit >> OFFSET_SHIFT) << ((unit & (1 << 9)) >> 6)


def lookup(charsmap: bytes, code_point: int) -> str:
    """What the charsmap turns one code point into (itself when it has no entry)."""
    units, normalized = parse_charsmap(charsmap)
    return _lookup(units.tolist(), normalized, code_point)


def _lookup(units: Sequence[int], normalized: bytes, code_point: int) -> str:
    values = prefix_values(units, chr(code_point).encode("utf-8"))
    if not values:
        return chr(code_point)
    start = values[0]
    return normalized[start:normalized.index(b"\x00", start)].decode("utf-8")


def mismatches(charsmap: bytes, table: Mapping[int, str],
               code_points: range = range(0x110000)) -> list[int]:
    """Code points (surrogates skipped) where the charsmap and ``table`` disagree; [] when they agree."""
    units, normalized = parse_charsmap(charsmap)
    unit_list = units.tolist()
    return [cp for cp in code_points if is_encodable(cp)
            and _lookup(unit_list, normalized, cp) != table.get(cp, chr(cp))]
