"""Talking to a server started on this machine: a free port for it, a JSON call to its API (and
whether the class server's hub has a student's server ready), and a wait until it is ready. Used by
the tests and the benchmark that start the class server or the course.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Callable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
    """``(status, JSON answer or None)`` of ``method base+path`` with ``token`` (and ``body`` as JSON);
    status 0 when nothing answers (not listening yet)."""
    request = urllib.request.Request(base + path, method=method, headers={"Authorization": f"token {token}"},
                                     data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            data = answer.read()
            return answer.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError):  # not listening (yet)
        return 0, None


def hub_server_ready(base: str, token: str, name: str) -> bool:
    """Whether JupyterHub at ``base`` says ``name``'s default server is ready (asked with ``token``)."""
    status, user = api(base, token, "GET", f"/hub/api/users/{name}")
    return status == 200 and bool((user or {}).get("servers", {}).get("", {}).get("ready"))


def wait_until(what: str, seconds: float, ready: Callable[[], bool]) -> None:
    """Ask ``ready()`` every half second until it says yes; ``TimeoutError`` naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} not ready within {seconds} s")
