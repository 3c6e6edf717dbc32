"""What one student costs the class server, measured: the sizing numbers of docs/classroom.md.

    python benchmarks/bench_class_server.py --json benchmarks/measured/class_server.json

Two measurements, each cheap enough for a 2-core machine:

* ``server_mb``: the resident memory (VmRSS) of one idle ``jupyterhub-singleuser``, started by the class
  server's own configuration (classroom/hub/jupyterhub_config.py, shared accounts, on 127.0.0.1) through
  the hub's API, read 20 s after it answered; the largest of ``--servers`` servers. Needs the proxy
  (``npm install -g configurable-http-proxy``) and the classroom extra.
* ``grading``: seconds of ``nbgrader autograde`` for one submission of lesson 00 (English) in smoke
  mode at the hub's settings (one thread, fp32, the offline default), the submission being the released
  notebook unanswered: the whole lesson re-runs, as for every submission. Full-mode grading of a lesson
  takes about that lesson's one-thread full run plus the same overhead; those runs are not measured here.

Writes one JSON file (``--json``) that ``python scripts/course_numbers.py`` reads into
attnlab/core/numbers.json (``class_server``), from which the sizing table and its prose are generated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnlab.tools.local_http import api, free_port, hub_server_ready, wait_until

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HUB_CONFIG = ROOT / "classroom" / "hub" / "jupyterhub_config.py"
#: seconds a server sits idle before its memory is read
SETTLE = 20


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for {pid}")


def _singleuser_pids() -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                command = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(part.endswith(b"jupyterhub-singleuser") for part in command[:2]):
                pids.append(int(proc.name))
    return pids


def server_memory(servers: int) -> list[float]:
    """Resident MB of each of ``servers`` idle student servers started by the class server's configuration."""
    state = Path(tempfile.mkdtemp(prefix="attnlab-hub-bench-"))
    students = [f"student{i}" for i in range(servers)]
    (state / "roster.txt").write_text("\n".join(students) + "\n", encoding="utf-8")
    port, token = free_port(), secrets.token_hex(24)
    env = {**os.environ, "ATTNLAB_HUB_STATE": str(state), "ATTNLAB_HUB_IP": "127.0.0.1",
           "ATTNLAB_HUB_PORT": str(port), "ATTNLAB_HUB_API_PORT": str(free_port()),
           "ATTNLAB_HUB_PROXY_API_PORT": str(free_port()), "ATTNLAB_HUB_ADMIN_TOKEN": token,
           "ATTNLAB_HUB_ACCOUNTS": "shared", "ATTNLAB_HUB_UNLIMITED": "1",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    base = f"http://127.0.0.1:{port}"
    before = set(_singleuser_pids())
    with (state / "hub.log").open("w") as log:
        hub = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(HUB_CONFIG)], cwd=state, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until("the hub", 60, lambda: api(base, token, "GET", "/hub/api/")[0] == 200)
        for name in students:
            api(base, token, "POST", f"/hub/api/users/{name}")
            api(base, token, "POST", f"/hub/api/users/{name}/server")
        for name in students:
            wait_until(f"{name}'s server", 180, lambda name=name: hub_server_ready(base, token, name))
        time.sleep(SETTLE)
        pids = [pid for pid in _singleuser_pids() if pid not in before]
        return [round(_rss_mb(pid), 1) for pid in pids]
    finally:
        hub.send_signal(signal.SIGTERM)
        try:
            hub.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(hub.pid, signal.SIGKILL)
        shutil.rmtree(state, ignore_errors=True)


def grading_seconds() -> dict:
    """Seconds of ``nbgrader autograde`` for one unanswered submission of lesson 00, smoke mode, one thread."""
    from attnlab.tools.assignments import write_course

    with tempfile.TemporaryDirectory(prefix="attnlab-grading-bench-") as tmp:
        course = Path(tmp) / "course"
        write_course(course, ["00"], ("en",))
        env = {**os.environ, "ATTNLAB_SMOKE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "ATTNLAB_PRECISION": "fp32", "PYTHONPATH": str(ROOT)}
        run = lambda *args: subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,  # noqa: E731
                                           capture_output=True, text=True, check=True)
        run("generate_assignment", "lesson_00", "--force")
        submitted = course / "submitted" / "student0" / "lesson_00"
        shutil.copytree(course / "release" / "lesson_00", submitted)
        start = time.monotonic()
        run("autograde", "lesson_00", "--create", "--force")
        seconds = time.monotonic() - start
    return {"lesson": "00", "mode": "smoke", "seconds": round(seconds, 1),
            "what": "nbgrader autograde lesson_00 --create, one submission (the released notebook unanswered): the "
                    "whole lesson re-run in smoke mode on the offline default, OMP_NUM_THREADS=1, fp32"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="the file to write")
    parser.add_argument("--servers", type=int, default=2, help="idle student servers to start (default 2)")
    parser.add_argument("--machine", default=f"{os.cpu_count()}-core {platform.machine()} CPU",
                        help="how to describe this machine in the record")
    args = parser.parse_args()
    servers = server_memory(args.servers)
    print(f"idle jupyterhub-singleuser: {servers} MB", flush=True)
    grading = grading_seconds()
    print(f"autograde, lesson 00 smoke, one submission, one thread: {grading['seconds']} s", flush=True)
    record = {"about": "python benchmarks/bench_class_server.py --json FILE",
              "machine": args.machine, "date": datetime.date.today().isoformat(),
              "server_mb": max(servers), "servers_mb": servers,
              "server_what": f"VmRSS of one idle jupyterhub-singleuser started by classroom/hub/jupyterhub_config.py "
                             f"(shared accounts), {SETTLE} s after it answered; the largest of {len(servers)}",
              "grading": grading}
    Path(args.json).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
