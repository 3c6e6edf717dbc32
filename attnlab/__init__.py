"""attnlab: what multi-head self-attention does inside BERT-like models.

A small package behind a notebook course. Typical use::

    import attnlab as al
    m = al.load_model("auto")            # bert-base-chinese if available, else the bundled MiniLM
    att = al.attention(m, ["how do you play chess"])
    att.tensor.shape                     # [texts, layers, heads, query, key]

Public names are imported lazily, so ``import attnlab`` stays fast and a
lesson only pays for the modules it uses.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # foundation
    "load_model": "models",
    "wrap_model": "models",
    "LoadedModel": "models",
    "ModelLoadError": "models",
    "NoAttentionError": "models",
    "bundled_model_path": "models",
    "attention": "extract",
    "Attention": "extract",
    "iter_attention_batches": "extract",
    "check_texts": "extract",
    "to_word_level": "extract",
    "is_smoke": "config",
    "pick": "config",
    "example_query": "examples",
    "example_for": "examples",
    "use_cjk_font": "fonts",
    "plot_head": "plot",
    "plot_heads_grid": "plot",
    "head_label": "plot",
    "save_figure": "plot",
    # lessons 01-04
    "scaled_dot_product_attention": "self_attention",
    "split_heads": "self_attention",
    "merge_heads": "self_attention",
    "MultiHeadSelfAttention": "self_attention",
    "recompute_layer_attention": "self_attention",
    # lesson 05
    "head_stats": "metrics",
    "classify_heads": "taxonomy",
    "head_stats_for": "metrics",
    "HeadStats": "metrics",
    "HeadLabels": "taxonomy",
    "head_view": "views",
    "model_view": "views",
    "explorer": "widgets",
    # lessons 06-07
    "no_position": "position",
    "position_change": "position",
    "perturbation_study": "compare",
    # lessons 08-09
    "mean_attention": "aggregate",
    "MeanAttention": "aggregate",
    "head_distances": "diversity",
    "HeadDistances": "diversity",
    "depth_trend": "diversity",
    "QueryGenerator": "querygen",
    "same_length_queries": "querygen",
    # lessons 10-12
    "mask_heads": "gates",
    "head_importance": "importance",
    "regroup_attention": "regroup",
    "gate_heads": "gates",
    "make_objective": "importance",
    "ablation_effects": "importance",
    "pruning_study": "pruning",
    "head_count_study": "train",
    # classroom kit (attnlab.doctor is a callable submodule: al.doctor())
    "download_model": "kit",
    "verify_folder": "kit",
    "KitError": "kit",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f".{name}", __name__)  # a submodule: al.config, al.plot ...
        raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
