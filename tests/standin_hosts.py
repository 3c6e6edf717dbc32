"""Local stand-ins for the hosts a set-up talks to, each on 127.0.0.1 and each recording every request:

* :func:`wheel_index`: a PEP 503 simple index of a folder of wheels (a PyPI mirror, a mirror of
  PyTorch's CPU index);
* :func:`files`: a folder served as it is (the teacher's mirror of the course's release zip);
* :func:`nothing`: answers 404 to everything (a model-hub mirror with no model);
* :func:`refusing_proxy`: the proxy every other host is reached through; it records the host and
  refuses, so a default host asked for anything shows up in its record.

Each returns a :class:`Host`; ``with host:`` serves it in a thread and stops it afterwards.
"""

from __future__ import annotations

import html
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import unquote


class Host:
    """A local server and the request lines it received (``"GET /simple/numpy/"``)."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]):
        self.requests: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                host.requests.append(f"{self.command} {self.path}")
                answer(self)

            do_GET = do_HEAD = do_CONNECT = do_POST = _any

            def log_message(self, *args) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> "Host":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", kind: str = "text/html") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def _project(wheel: str) -> str:
    return re.sub(r"[-_.]+", "-", wheel.split("-")[0]).lower()


def wheel_index(folder: Path) -> Host:
    """A PEP 503 index at ``/simple/`` of the wheels in ``folder`` (files at ``/files/``)."""
    wheels = sorted(p.name for p in folder.glob("*.whl"))

    def answer(handler: BaseHTTPRequestHandler) -> None:
        path = unquote(handler.path.split("?")[0])
        if path.startswith("/files/") and (folder / path[7:]).is_file():
            return _send(handler, 200, (folder / path[7:]).read_bytes(), "application/octet-stream")
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["simple"] and len(parts) <= 2:
            chosen = [w for w in wheels if len(parts) == 1 or _project(w) == parts[1]]
            if len(parts) == 2 and not chosen:
                return _send(handler, 404)
            links = "".join(f'<a href="/files/{html.escape(w)}">{html.escape(w)}</a>\n' for w in chosen)
            return _send(handler, 200, f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode())
        _send(handler, 404)

    return Host(answer)


def files(folder: Path) -> Host:
    """The files of ``folder`` at ``/<name>``."""
    def answer(handler: BaseHTTPRequestHandler) -> None:
        target = folder / handler.path.lstrip("/")
        if target.is_file() and target.parent == folder:
            return _send(handler, 200, target.read_bytes(), "application/zip")
        _send(handler, 404)

    return Host(answer)


def nothing() -> Host:
    """Answers 404 to every request."""
    return Host(lambda handler: _send(handler, 404, b"{}", "application/json"))


def refusing_proxy() -> Host:
    """A proxy that records the host of every request and refuses it (403)."""
    return Host(lambda handler: _send(handler, 403))
