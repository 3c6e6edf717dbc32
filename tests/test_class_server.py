"""The class server (classroom/hub/): a real JupyterHub with its proxy on 127.0.0.1, three students.

Each student gets a system user with a private home (created by the hub's pre-spawn hook, as on the
school's server, the hub set to the Chinese edition; where the course's Python cannot be run by other users, e.g. under /root, every server
runs as the hub's user with a home folder per student: ATTNLAB_HUB_ACCOUNTS=shared), a server started
through the hub's API, and lesson 00 run in smoke mode through the
kernel API (JupyterLab's own websocket protocol) on the class's model (a tiny one, fixed by the class
setting); then one checked answer. The results must land in that student's home only, owned by that
student. The idle culler and the limits are checked as configured. Needs root (system users), the
proxy (``npm install -g configurable-http-proxy``) and the ``classroom`` extra; outside CI a missing
piece skips the test, in CI (``CI`` set) it fails. About a minute.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from attnlab.core import class_setting
from attnlab.tools.local_http import api, free_port, hub_server_ready, wait_until
from attnlab.tools.testing import save_tiny_model

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CONFIG = ROOT / "classroom" / "hub" / "jupyterhub_config.py"
LESSON = ROOT / "notebooks" / "zh" / "00_tour.ipynb"  # the Chinese edition, on a hub set to Chinese
#: seconds for each wait: the hub to answer, a server to start, a cell to run, the hub to stop
HUB_UP, SERVER_UP, CELL, STOP = 60, 180, 240, 30


def _reachable_by_all(path: Path) -> bool:
    """Whether every user may run ``path`` (each folder above it searchable by all, the file runnable)."""
    real = path.resolve()
    return bool(real.stat().st_mode & 0o001) and all(p.stat().st_mode & 0o001 for p in real.parents)


def _accounts() -> str:
    """``system`` (a system user per student, as on a school's server) where root may create them and the
    course's Python is runnable by every user; else ``shared`` (servers as this user, a home each)."""
    if os.geteuid() == 0 and shutil.which("useradd") and _reachable_by_all(Path(sys.executable)):
        return "system"
    return "shared"


def _missing() -> str | None:
    if shutil.which("configurable-http-proxy") is None:
        return "JupyterHub's proxy is not installed (npm install -g configurable-http-proxy)"
    for module in ("jupyterhub", "jupyterhub_idle_culler", "firstuseauthenticator"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e .[classroom])"
    return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _login(base: str, name: str, password: str) -> bool:
    """Log in through the hub's login form (with its XSRF token); True when the hub lets the user in."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    with opener.open(base + "/hub/login", timeout=30) as page:
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.read().decode()).group(1)
    form = urllib.parse.urlencode({"username": name, "password": password, "_xsrf": xsrf}).encode()
    try:
        with opener.open(urllib.request.Request(base + "/hub/login", data=form), timeout=30) as answer:
            return answer.status in (301, 302, 303)
    except urllib.error.HTTPError as exc:
        return exc.code in (301, 302, 303)


async def _run_cells(ws_url: str, token: str, cells: list[str]) -> list[str]:
    """Run ``cells`` in order on a kernel through its websocket; return each cell's text output."""
    request = HTTPRequest(ws_url, headers={"Authorization": f"token {token}"})
    conn = await asyncio.wait_for(websocket_connect(request), 30)
    session, outputs = uuid.uuid4().hex, []
    try:
        for code in cells:
            msg_id = uuid.uuid4().hex
            conn.write_message(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                           "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True}}))
            text, deadline = [], time.monotonic() + CELL
            replied = idle = False  # the reply (shell) can come before the printed text (iopub): wait for both
            while not (replied and idle):
                raw = await asyncio.wait_for(conn.read_message(), max(1.0, deadline - time.monotonic()))
                assert raw is not None, "the kernel's websocket closed"
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    text.append(content["text"])
                elif kind == "error":
                    raise AssertionError(f"cell failed: {content['ename']}: {content['evalue']}\n{code[:300]}")
                elif kind == "execute_reply" and msg["channel"] == "shell":
                    assert content["status"] == "ok", content
                    replied = True
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True  # the kernel has sent everything this cell printed
            outputs.append("".join(text))
    finally:
        conn.close()
    return outputs


def _start_server(base: str, token: str, name: str) -> int:
    """Ask the hub to start ``name``'s server; the status of the answer. A spawn whose random port another
    process took first (the server says "port ... is not available" and the hub answers 500) is asked for
    again once the hub has let the failed one go, as a student would press start again."""
    status = api(base, token, "POST", f"/hub/api/users/{name}/server")[0]
    if status != 500:
        return status
    wait_until(f"{name}'s failed spawn to end", 60, lambda: not (api(base, token, "GET", f"/hub/api/users/{name}")[1]
                                                                 or {}).get("servers"))
    return api(base, token, "POST", f"/hub/api/users/{name}/server")[0]


def _lesson_cells() -> list[str]:
    cells = [c for c in json.loads(LESSON.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    return ["".join(c["source"]) for c in cells]


CHECK = """import os
from attnlab.course.exercises import lesson_00 as ex
print(ex.check_total_heads(m, m.n_layers * m.n_heads))
print("where", os.getcwd(), os.getuid(), os.environ.get("MEM_LIMIT"), os.environ.get("CPU_LIMIT"),
      os.environ.get("OMP_NUM_THREADS"))
"""


async def _one_student(base: str, token: str, name: str) -> list[str]:
    status, _ = api(base, token, "PUT", f"/user/{name}/api/contents/lesson00", {"type": "directory"})
    assert status in (200, 201), status
    status, kernel = api(base, token, "POST", f"/user/{name}/api/kernels", {"name": "python3", "path": "lesson00"})
    assert status == 201, status
    ws = base.replace("http://", "ws://") + f"/user/{name}/api/kernels/{kernel['id']}/channels"
    try:
        return await _run_cells(ws, token, _lesson_cells() + [CHECK])
    finally:
        api(base, token, "DELETE", f"/user/{name}/api/kernels/{kernel['id']}")


@pytest.mark.notebooks
def test_class_server(tmp_path):
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    shared = Path(tempfile.mkdtemp(prefix="attnlab-class-"))  # readable by the students, as /opt would be
    state = tmp_path / "hub"
    suffix = secrets.token_hex(2)
    students = [f"attnlabt-{who}-{suffix}" for who in ("ann", "bo", "cy")]
    hub, accounts = None, _accounts()
    try:
        model = save_tiny_model(shared / "model", language="zh")
        setting = class_setting.write(shared / "class.json", str(model), mode="smoke", name="test-class")
        for path in [shared, *shared.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        state.mkdir(mode=0o700)
        (state / "roster.txt").write_text("# the teacher's list\n" + "\n".join(students) + "\n", encoding="utf-8")
        port, token = free_port(), secrets.token_hex(24)
        env = {**os.environ, "ATTNLAB_HUB_STATE": str(state), "ATTNLAB_HUB_IP": "127.0.0.1",
               "ATTNLAB_HUB_PORT": str(port), "ATTNLAB_HUB_API_PORT": str(free_port()),
               "ATTNLAB_HUB_PROXY_API_PORT": str(free_port()), "ATTNLAB_HUB_ADMIN_TOKEN": token,
               "ATTNLAB_HUB_ACCOUNTS": accounts, "ATTNLAB_HUB_LANG": "zh", "ATTNLAB_CLASS": str(setting),
               "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        with (tmp_path / "hub.log").open("w") as log:
            hub = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(CONFIG)], cwd=state, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        wait_until("the hub", HUB_UP, lambda: hub.poll() is None and api(base, token, "GET", "/hub/api/")[0] == 200)

        # the culler runs as a hub service; the roster is the allowed list
        status, services = api(base, token, "GET", "/hub/api/services")
        assert status == 200 and "idle-culler" in services, services
        for name in students:
            assert api(base, token, "POST", f"/hub/api/users/{name}")[0] in (201, 409)
            assert _start_server(base, token, name) in (201, 202)
        # the roster and first-use passwords: a name not on the list cannot log in; a student on it sets a
        # password at the first login, and only that password works afterwards
        assert not _login(base, "not-on-the-list", "a-long-password")
        assert _login(base, students[0], "first-password")
        assert not _login(base, students[0], "another-password")
        assert _login(base, students[0], "first-password")

        for name in students:
            wait_until(f"{name}'s server", SERVER_UP, lambda name=name: hub_server_ready(base, token, name))

        async def everyone() -> list[list[str]]:
            return await asyncio.gather(*(_one_student(base, token, name) for name in students))

        outputs = asyncio.run(everyone())
        for name, printed in zip(students, outputs):
            if accounts == "system":
                account = pwd.getpwnam(name)
                home, uid = Path(account.pw_dir), account.pw_uid
            else:
                home, uid = state / "homes" / name, os.geteuid()
            assert any("班级设置 test-class" in p for p in printed), "the lesson's header names the class setting"
            interface = home / ".jupyter/lab/user-settings/@jupyterlab/translation-extension/plugin.jupyterlab-settings"
            assert json.loads(interface.read_text(encoding="utf-8")) == {"locale": "zh_CN"}  # JupyterLab in Chinese
            assert "✅" in printed[-1], printed[-1]
            # the limits each server is given (2 GB, 1 core) and one thread per kernel
            assert f"where {home / 'lesson00'} {uid} {2 * 1024 ** 3} 1.0 1" in printed[-1], printed[-1]
            saved = home / "lesson00" / "results" / "exercises" / "00.total_heads.json"
            tried = json.loads(saved.read_text(encoding="utf-8"))["attempts"]
            assert len(tried) == 1, "another student's answer landed in this home"
            attempt = tried[0]
            assert attempt["right"] and attempt["model"] == str(model) and attempt["mode"] == "smoke"
            assert (home.stat().st_mode & 0o777) == 0o700
            written = [p for p in (home / "lesson00").rglob("*")]
            assert written and all(p.stat().st_uid == uid for p in written)

        assert not list(shared.rglob("results")) and not (ROOT / "lesson00").exists()

        for name in students:
            assert api(base, token, "DELETE", f"/hub/api/users/{name}/server")[0] in (202, 204)
    finally:
        if hub is not None and hub.poll() is None:
            hub.send_signal(signal.SIGTERM)
            try:
                hub.wait(STOP)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, signal.SIGKILL)
                hub.wait(STOP)
        pid_file = state / "proxy.pid"
        if pid_file.is_file():  # the proxy outlived the hub: stop it
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass
        for name in students if accounts == "system" else []:
            subprocess.run(["userdel", "--remove", name], capture_output=True)
            subprocess.run(["groupdel", name], capture_output=True)
        shutil.rmtree(shared, ignore_errors=True)
