"""Offline means offline: the hub libraries are switched off before they load, and connections are counted.

``ATTNLAB_OFFLINE=1`` promises no network at all. The hub libraries decide
for themselves when to go online: huggingface_hub (2.4 and later) fetches a
registry of "agent harnesses" from ``{HF_ENDPOINT}/api/agent-harnesses``
whenever it builds request headers or checks the terminal, even for a model
read from the local cache. It skips that request only when its constant
``huggingface_hub.constants.HF_HUB_OFFLINE`` is true, which it reads from the
environment *when it is imported*. So the switch must come first:

* :func:`enforce_from_env` runs first thing in ``attnlab/__init__.py``, before
  anything imports huggingface_hub or transformers. Under ``ATTNLAB_OFFLINE``
  it sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` in
  ``os.environ`` and, if a hub library was imported earlier all the same (a
  notebook that imported transformers before attnlab), switches its constant.
* :func:`hub_offline` does the same for a block of code, and undoes it
  afterwards: ``load_model("auto")`` uses it when it decides to stay offline
  (the article's model is not available), so loading the fallback asks nobody.
* :func:`install_counter` adds an audit hook (:func:`sys.addaudithook`) on
  ``socket.connect``: every connection the process opens is recorded as
  ``(host, port)``; :func:`connections` lists them and ``attnlab doctor``
  reports them (``check_connections``).

This module imports only the standard library, so importing it switches
nothing on by itself and costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Iterator

#: environment variables the hub libraries read; set to "1" when attnlab is offline
HUB_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

_TRUE = ("1", "true", "yes", "on")

_lock = threading.Lock()
_seen: list[tuple[str, int]] = []
_installed = False
_depth = 0  # how many hub_offline blocks are open
_saved: dict[str, str | None] = {}
_saved_constant: bool | None = None


def requested() -> bool:
    """True when ``ATTNLAB_OFFLINE`` forbids every network access (the same rule as ``config.is_offline``)."""
    return os.environ.get("ATTNLAB_OFFLINE", "").strip().lower() in _TRUE


def hub_switched_off() -> bool:
    """True when the hub libraries are told to stay offline (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``)."""
    return any(os.environ.get(var, "").strip().lower() in _TRUE for var in HUB_VARIABLES)


def enforce_from_env() -> bool:
    """Install the connection counter; under ``ATTNLAB_OFFLINE``, switch the hub libraries off.

    Returns:
        True when the hub libraries were switched off.
    """
    install_counter()
    if not requested():
        return False
    for var in HUB_VARIABLES:
        os.environ[var] = "1"
    _switch_constants(True)
    return True


def _switch_constants(value: bool) -> bool | None:
    """Set huggingface_hub's offline constant when it is already imported; return its old value.

    transformers asks huggingface_hub (``is_offline_mode()``), so one constant covers both.
    """
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is None or not hasattr(constants, "HF_HUB_OFFLINE"):
        return None
    old = bool(constants.HF_HUB_OFFLINE)
    constants.HF_HUB_OFFLINE = value
    return old


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Keep the hub libraries offline inside the block (environment and constants), then restore them.

    Blocks may nest; the state before the outermost one comes back at its end.
    """
    global _depth, _saved_constant
    with _lock:
        if _depth == 0:
            _saved.clear()
            _saved.update({var: os.environ.get(var) for var in HUB_VARIABLES})
            for var in HUB_VARIABLES:
                os.environ[var] = "1"
            _saved_constant = _switch_constants(True)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for var, value in _saved.items():
                    if value is None:
                        os.environ.pop(var, None)
                    else:
                        os.environ[var] = value
                if _saved_constant is not None:
                    _switch_constants(_saved_constant)


# --------------------------------------------------------------------------- counting connections


def _audit(event: str, args: tuple) -> None:
    """The audit hook: record the address of every ``socket.connect`` (IPv4 and IPv6 addresses only)."""
    if event != "socket.connect":
        return
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and len(address) >= 2:
        _seen.append((str(address[0]), int(address[1])))


def install_counter() -> None:
    """Count every connection this process opens from now on (once per process; hooks cannot be removed)."""
    global _installed
    with _lock:
        if _installed:
            return
        sys.addaudithook(_audit)
        _installed = True


def connections() -> list[tuple[str, int]]:
    """Every ``(host, port)`` this process connected to since :func:`install_counter`, in order."""
    return list(_seen)
