"""ATTNLAB_OFFLINE means no connection at all, counted by a local stand-in hub and by the process itself.

Each case runs in a fresh Python process (the hub libraries read their offline
switch when they are imported, so only a new process shows what a reader
gets). The stand-in (``attnlab.tools.testing.StandInHub``: stdlib
``http.server`` on 127.0.0.1, ``HF_ENDPOINT`` pointed at it) counts the
connections it accepts; the process counts the connections it opens
(``attnlab.core.offline.connections``). Every case has its own ``HF_HOME``, so
no registry or cache from an earlier run hides a request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.core import offline
from attnlab.core.models import ARTICLE_MODEL
from attnlab.tools import doctor as dr
from attnlab.tools.testing import StandInHub, save_bert_chinese_like

ROOT = Path(__file__).resolve().parents[1]

#: the child: load a model as a lesson does, then print what it connected to
CHILD = """
import json, sys
import attnlab as al
from attnlab.core import models, offline
models.multilingual.is_available = lambda: False   # the cold-cache fallback: the small bundled MiniLM
name = sys.argv[1]
try:
    m = al.load_model(name, verbose=False)
    loaded = m.name
except al.ModelLoadError as exc:
    loaded = "error: " + str(exc).splitlines()[0]
print(json.dumps({"loaded": loaded, "connections": offline.connections()}))
"""


@pytest.fixture(scope="module")
def article_folder(tmp_path_factory) -> Path:
    """A small random model laid out like bert-base-chinese (its tokenizer layout, cls.* keys)."""
    return save_bert_chinese_like(tmp_path_factory.mktemp("bbc"), texts=("王者荣耀怎么玩",))


def warm_cache(hf_home: Path, folder: Path) -> None:
    """Put ``folder``'s files into a hub cache by hand, in the hub's layout (refs/main names the snapshot)."""
    repo = hf_home / "hub" / ("models--" + ARTICLE_MODEL.replace("/", "--"))
    snapshot = repo / "snapshots" / StandInHub.COMMIT
    snapshot.mkdir(parents=True)
    for path in folder.iterdir():
        (snapshot / path.name).write_bytes(path.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(StandInHub.COMMIT)


def run_child(tmp_path: Path, url: str, name: str, *, offline_on: bool, extra: dict | None = None) -> dict:
    """Run :data:`CHILD` loading ``name`` with ``HF_ENDPOINT=url``; its JSON line."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ATTNLAB_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "ATTNLAB_MODEL",
                        "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")}
    env.update({"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": url, "ATTNLAB_CACHE": str(tmp_path / "attnlab"),
                "ATTNLAB_HUB_TIMEOUT": "3", "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
                "OMP_NUM_THREADS": "1"})
    if offline_on:
        env["ATTNLAB_OFFLINE"] = "1"
    env.update(extra or {})
    done = subprocess.run([sys.executable, "-c", CHILD, name], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_offline_with_a_warm_cache_opens_no_connection(tmp_path, article_folder):
    warm_cache(tmp_path / "hf", article_folder)
    with StandInHub(ARTICLE_MODEL, article_folder) as standin:
        for name in ("auto", ARTICLE_MODEL):
            found = run_child(tmp_path, standin.url, name, offline_on=True)
            assert found["loaded"] == ARTICLE_MODEL
            assert found["connections"] == []
    assert standin.connections == 0 and standin.requests == []


def test_offline_with_a_cold_cache_opens_no_connection(tmp_path, article_folder):
    with StandInHub(ARTICLE_MODEL, article_folder) as standin:
        fallback = run_child(tmp_path, standin.url, "auto", offline_on=True)
        refused = run_child(tmp_path, standin.url, ARTICLE_MODEL, offline_on=True)
    assert fallback["loaded"] == "all-MiniLM-L6-v2 (bundled)" and fallback["connections"] == []
    assert refused["loaded"].startswith("error: ") and refused["connections"] == []
    assert standin.connections == 0 and standin.requests == []


def test_offline_through_a_downloaded_folder_opens_no_connection(tmp_path, article_folder):
    kit = tmp_path / "kit"
    env = dict(os.environ, ATTNLAB_OFFLINE="1", PYTHONPATH=str(ROOT), HF_HOME=str(tmp_path / "hf"))
    made = subprocess.run([sys.executable, "-m", "attnlab", "download", str(article_folder), "--to", str(kit)],
                          env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    with StandInHub(ARTICLE_MODEL, article_folder) as standin:
        found = run_child(tmp_path, standin.url, "auto", offline_on=True, extra={"ATTNLAB_MODEL": str(kit)})
    assert found["loaded"] == str(kit) and found["connections"] == []
    assert standin.connections == 0 and standin.requests == []


def test_without_offline_the_stand_in_is_contacted(tmp_path, article_folder):
    """The counters can fail: the hub library asks the hub even for a cached model when nobody forbids it."""
    warm_cache(tmp_path / "hf", article_folder)
    with StandInHub(ARTICLE_MODEL, article_folder) as standin:
        found = run_child(tmp_path, standin.url, ARTICLE_MODEL, offline_on=False)
    assert found["loaded"] == ARTICLE_MODEL
    port = int(standin.url.rsplit(":", 1)[1])
    assert ["127.0.0.1", port] in found["connections"]
    assert standin.connections >= 1 and standin.requests


def test_hub_offline_switches_the_constant_and_restores_it(monkeypatch):
    import huggingface_hub.constants as constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with offline.hub_offline():
        with offline.hub_offline():
            assert constants.HF_HUB_OFFLINE is True and offline.hub_switched_off()
        assert os.environ["HF_HUB_OFFLINE"] == "1"  # still inside the outer block
    assert constants.HF_HUB_OFFLINE is False
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["TRANSFORMERS_OFFLINE"] == "0"


def test_enforce_from_env_switches_an_imported_hub_library(monkeypatch):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for var in offline.HUB_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    assert offline.enforce_from_env() is False and constants.HF_HUB_OFFLINE is False
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    assert offline.enforce_from_env() is True
    assert constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"


def test_the_counter_records_a_connection_and_the_doctor_reports_it(monkeypatch):
    import socket

    before = len(offline.connections())
    with StandInHub(ARTICLE_MODEL) as standin:
        port = int(standin.url.rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert offline.connections()[before:] == [("127.0.0.1", port)]
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    check = dr.check_connections()
    assert check.status == dr.WARN and f"127.0.0.1:{port}" in check.detail
    monkeypatch.setattr(offline, "_seen", [])
    assert dr.check_connections().status == dr.OK
    assert "no connection" in dr.check_connections().detail
