"""attnlab: what multi-head self-attention does inside BERT-like models.

A small package behind a notebook course. Typical use::

    import attnlab as al
    m = al.load_model("auto")            # the best model this machine has, and why
    att = al.attention(m, ["how do you play chess"])
    att.tensor.shape                     # [texts, layers, heads, query, key]

The top level holds the few names every lesson types. Everything else lives
in a layer of its own (see ``docs/architecture.md``)::

    attnlab.core      loading, extraction, gates, the position hook, streaming means
    attnlab.data      query sets and generators (Chinese and English)
    attnlab.analysis  measurements on attention maps, and their statistics
    attnlab.scratch   what the lessons build by hand (attention, a tiny trained model)
    attnlab.viz       plots, fonts, offline HTML views, widgets
    attnlab.course    the article's claims and verdicts, saved results, exercises, figures
    attnlab.tools     the ``attnlab`` command, the doctor, the model kit, the distributed run

Names are imported lazily, so ``import attnlab`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from attnlab.core import offline as _offline

# First, before anything imports huggingface_hub or transformers: under ATTNLAB_OFFLINE the hub
# libraries must see HF_HUB_OFFLINE=1 when they load (see attnlab.core.offline).
_offline.enforce_from_env()

from attnlab._meta import VERSION as __version__  # noqa: E402 - one version, in _meta

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "load_model": "attnlab.core.models",
    "LoadedModel": "attnlab.core.models",
    "ModelLoadError": "attnlab.core.models",
    "NoAttentionError": "attnlab.core.models",
    "wrap_model": "attnlab.core.models",
    "attention": "attnlab.core.extract",
    "Attention": "attnlab.core.extract",
    "mean_attention": "attnlab.core.streaming",
    "MeanAttention": "attnlab.core.streaming",
    "mask_heads": "attnlab.core.gates",
    "no_position": "attnlab.core.position",
    "pick": "attnlab.core.config",
    "is_smoke": "attnlab.core.config",
    "mode_line": "attnlab.core.config",
    "example_for": "attnlab.data.examples",
    "plot_head": "attnlab.viz.plot",
    "plot_heads_grid": "attnlab.viz.plot",
    "head_label": "attnlab.viz.plot",
    "use_cjk_font": "attnlab.viz.fonts",
    "doctor": "attnlab.tools.doctor",
    "set_language": "attnlab.core.language",
    "current_language": "attnlab.core.language",
}

#: public name -> a module imported with it: what follows ``al.set_language`` (the figures' CJK font)
#: listens from the moment the switch is in a lesson's hands; the door's advice is printed under
#: ``al.load_model``'s line from the moment a lesson can load
_FOLLOWERS: dict[str, str] = {"set_language": "attnlab.viz.fonts", "load_model": "attnlab.tools.door_advice"}

_SUBPACKAGES = ("core", "data", "analysis", "scratch", "viz", "course", "tools")

__all__ = sorted(_EXPORTS) + list(_SUBPACKAGES) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(
            f"module 'attnlab' has no attribute {name!r}; look in its layers "
            f"({', '.join('attnlab.' + s for s in _SUBPACKAGES)})"
        )
    value = getattr(importlib.import_module(module), name)
    if name in _FOLLOWERS:
        importlib.import_module(_FOLLOWERS[name])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
