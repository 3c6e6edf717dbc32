"""Small JSON results that lessons save for later lessons (lesson 12 reads them).

Each lesson stores a summary under its own name, e.g.
``save("06_perturbation", {...})``. The folder is ``ATTNLAB_RESULTS`` when set,
else ``results/`` at the top of the course checkout. Every record carries the model
name and run mode, so a later lesson can tell whether it matches the model
that is running and recompute when it does not.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.core.config import is_smoke


def results_dir() -> Path:
    """``ATTNLAB_RESULTS`` when set; else ``results/`` at the top of the course
    (lessons run inside ``notebooks/``, the ``attnlab`` command at the top: both
    share one folder); else ``results/`` in the current directory."""
    if os.environ.get("ATTNLAB_RESULTS"):
        return Path(os.environ["ATTNLAB_RESULTS"])
    here = Path.cwd()
    if here.name == "notebooks" and (here.parent / "attnlab").is_dir():
        return here.parent / "results"
    return here / "results"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def save(name: str, data: dict, *, model: str = "") -> Path:
    """Write ``data`` (arrays become lists) to ``<results>/<name>.json``."""
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    record = {"name": name, "model": model, "smoke": is_smoke(), "time": time.time(), "data": _plain(data)}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def load(name: str, *, model: str | None = None) -> dict | None:
    """The saved ``data`` of ``name``, or None when absent or made by another model
    (or in another run mode)."""
    path = results_dir() / f"{name}.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if model is not None and record.get("model") != model:
        return None
    if record.get("smoke") != is_smoke():
        return None
    return record["data"]
