"""The class setting: one model, one precision and one run mode for every student of a class.

A teacher fixes them once in a small JSON file::

    {"schema": 1, "kind": "attnlab-class", "name": "attention-2027",
     "model": "multilingual-e5-small", "precision": "fp32", "mode": "full"}

and installs it where every student's Python finds it: the file named by
``ATTNLAB_CLASS`` (one environment variable, the same on every door), else
``<sys.prefix>/etc/attnlab/class.json`` (the class server installs it there, in the
environment the students share and cannot write). While a class setting is in force,
``load_model("auto")`` loads its model (from disk: the class's model is installed once,
nothing downloads), ``"auto"`` precision is its precision, and its mode decides smoke or
full sizes whatever ``ATTNLAB_SMOKE`` says. Each lesson's header prints it
(:func:`attnlab.core.config.mode_line`), each saved attempt records it, and
``attnlab class collect`` flags work done under another setting.

A file that is missing, damaged or names an unknown precision or mode stops with one
sentence (:class:`ClassSettingError`): a class must not run half on another model.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ENV = "ATTNLAB_CLASS"
KIND = "attnlab-class"
SCHEMA = 1
PRECISIONS = ("fp32", "bf16")
MODES = ("full", "smoke")


class ClassSettingError(ValueError):
    """The class setting file cannot be used; the message is one sentence saying why and what to do."""


@dataclass(frozen=True)
class ClassSetting:
    """What a class fixes: ``model`` (a name ``load_model`` accepts), ``precision`` and ``mode``."""

    model: str
    precision: str = "fp32"
    mode: str = "full"
    name: str = ""
    source: str = ""

    @property
    def smoke(self) -> bool:
        return self.mode == "smoke"

    def describe(self) -> str:
        """``"attention-2027: multilingual-e5-small, fp32, full mode"``."""
        label = f"{self.name}: " if self.name else ""
        return f"{label}{self.model}, {self.precision}, {self.mode} mode"

    def as_record(self) -> dict[str, str]:
        """What a saved attempt records of the setting it ran under."""
        return {"model": self.model, "precision": self.precision, "mode": self.mode}


def default_file() -> Path:
    """Where a class server installs the setting: ``<sys.prefix>/etc/attnlab/class.json``."""
    return Path(sys.prefix) / "etc" / "attnlab" / "class.json"


def setting_file() -> Path | None:
    """The file in force: ``ATTNLAB_CLASS`` when set (it must exist), else :func:`default_file` if present."""
    named = os.environ.get(ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return default_file() if default_file().is_file() else None


def parse(text: str, source: str = "") -> ClassSetting:
    """A class setting from the file's text; :class:`ClassSettingError` when it is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClassSettingError(f"the class setting {source} is not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise ClassSettingError(f"the class setting {source} is not a class file "
                                f"(it needs \"kind\": \"{KIND}\" and \"schema\": {SCHEMA})")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip() or model.strip() == "auto":
        raise ClassSettingError(f"the class setting {source} names no model: set \"model\" to a model name or folder")
    precision, mode = data.get("precision", "fp32"), data.get("mode", "full")
    if precision not in PRECISIONS:
        raise ClassSettingError(f"the class setting {source} asks for precision {precision!r}; use one of {PRECISIONS}")
    if mode not in MODES:
        raise ClassSettingError(f"the class setting {source} asks for mode {mode!r}; use one of {MODES}")
    return ClassSetting(model=model.strip(), precision=precision, mode=mode, name=str(data.get("name", "")),
                        source=source)


def current() -> ClassSetting | None:
    """The class setting in force, or None when this machine has none."""
    path = setting_file()
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClassSettingError(f"{ENV}={path} cannot be read ({exc.strerror or exc}); "
                                f"fix the path or unset {ENV}") from exc
    return parse(text, str(path))


def write(path: str | Path, model: str, precision: str = "fp32", mode: str = "full", name: str = "") -> Path:
    """Write a class setting file (checked by reading it back) and return its path."""
    text = json.dumps({"schema": SCHEMA, "kind": KIND, "name": name, "model": model, "precision": precision,
                       "mode": mode}, indent=1, ensure_ascii=False)
    parse(text, str(path))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return out
