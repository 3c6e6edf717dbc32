"""The helpers that talk to a server started on this machine: a free port, a JSON call, a wait."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from attnlab.tools.local_http import api, free_port, hub_server_ready, wait_until


class _Hub(BaseHTTPRequestHandler):
    """Answers like JupyterHub's user API: ``ann``'s server is ready, ``bob``'s is not, others are unknown."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.headers.get("Authorization") != "token secret":
            self.send_response(403)
            self.end_headers()
            return
        users = {"/hub/api/users/ann": {"servers": {"": {"ready": True}}}, "/hub/api/users/bob": {"servers": {}}}
        if self.path not in users:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps(users[self.path]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.dumps({"echo": json.loads(self.rfile.read(length)) if length else None}).encode()
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_free_port_can_be_bound():
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_the_call_gives_the_status_and_the_json_answer(hub):
    assert api(hub, "secret", "GET", "/hub/api/users/ann") == (200, {"servers": {"": {"ready": True}}})
    assert api(hub, "wrong", "GET", "/hub/api/users/ann") == (403, None)
    assert api(hub, "secret", "POST", "/anything", {"type": "directory"}) == (201, {"echo": {"type": "directory"}})
    assert api(hub, "secret", "POST", "/anything") == (201, {"echo": None})


def test_nothing_listening_is_status_zero():
    assert api(f"http://127.0.0.1:{free_port()}", "secret", "GET", "/") == (0, None)


def test_a_server_is_ready_only_when_the_hub_says_so(hub):
    assert hub_server_ready(hub, "secret", "ann")
    assert not hub_server_ready(hub, "secret", "bob")  # no default server yet
    assert not hub_server_ready(hub, "secret", "carol")  # unknown: 404
    assert not hub_server_ready(hub, "wrong", "ann")  # refused: 403


def test_the_wait_returns_when_ready_and_names_what_it_waited_for():
    answers = iter([False, True])
    wait_until("the hub", 5, lambda: next(answers))
    with pytest.raises(TimeoutError, match="the hub not ready within 0.1 s"):
        wait_until("the hub", 0.1, lambda: False)
