"""The model hub within one deadline, tried against a local stand-in of it (``HF_ENDPOINT``).

Every stand-in runs on 127.0.0.1 in a thread (``attnlab.tools.testing.StandInHub``);
every test has its own hub cache (``HF_HOME``) and attnlab cache, and a short
deadline (``ATTNLAB_HUB_TIMEOUT=3``), so "settles within the deadline" is
measured in seconds. The slack added to the deadline covers starting the
download's child process on a busy machine, never a hub retry.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import lesson_records as records  # tests/lesson_records.py: hand-made lesson records
import pytest

import attnlab as al
from attnlab.core import hub, models
from attnlab.course.evidence import LABELS, all_conclusions
from attnlab.tools import doctor as dr
from attnlab.tools.testing import StandInHub, save_bert_chinese_like

DEADLINE = 3.0
#: seconds beyond the deadline that a busy 2-core machine may need (starting the download's process)
SLACK = 6.0
MODEL = models.ARTICLE_MODEL


@pytest.fixture(scope="module")
def article_folder(tmp_path_factory) -> Path:
    """A small random model laid out like bert-base-chinese (tokenizer, cls.* keys)."""
    return save_bert_chinese_like(tmp_path_factory.mktemp("bbc"), texts=("王者荣耀怎么玩",))


@pytest.fixture
def caches(tmp_path, monkeypatch) -> dict[str, Path]:
    """Empty hub and attnlab caches, a 3 s deadline, no offline switches, no ATTNLAB_MODEL."""
    paths = {"hf_home": tmp_path / "hf", "attnlab": tmp_path / "attnlab"}
    converted, done = models.multilingual.cached_folder()
    if done:  # a fallback that does load uses the machine's converted copy, never converts again
        monkeypatch.setattr(models.multilingual, "converted_folder", lambda *a, **k: converted)
    monkeypatch.setenv("HF_HOME", str(paths["hf_home"]))
    monkeypatch.setenv("ATTNLAB_CACHE", str(paths["attnlab"]))
    monkeypatch.setenv("ATTNLAB_HUB_TIMEOUT", str(DEADLINE))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "ATTNLAB_MODEL", "ATTNLAB_OFFLINE", "HF_HUB_OFFLINE",
                "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(models.multilingual, "is_available", lambda: True)  # the fallback is chosen, not loaded
    return paths


def nothing_half_written(paths: dict[str, Path]) -> None:
    """No model folder in the hub cache, no working folder left in attnlab's cache."""
    assert hub.cache_dir() == paths["hf_home"] / "hub"
    assert not (hub.cache_dir() / hub.repo_folder(MODEL)).exists()
    assert not models.is_cached(MODEL)
    assert list((paths["attnlab"] / "downloads").glob("download-*")) == []


def timed(fn, *args, **kwargs):
    start = time.monotonic()
    try:
        return fn(*args, **kwargs), time.monotonic() - start
    except Exception as exc:  # noqa: BLE001 - returned for the test to inspect
        return exc, time.monotonic() - start


def closed_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- the deadline


def test_the_deadline_is_15_s_unless_set(monkeypatch):
    monkeypatch.delenv("ATTNLAB_HUB_TIMEOUT", raising=False)
    assert al.core.config.hub_timeout() == 15.0
    monkeypatch.setenv("ATTNLAB_HUB_TIMEOUT", "2.5")
    assert al.core.config.hub_timeout() == 2.5
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv("ATTNLAB_HUB_TIMEOUT", bad)
        with pytest.raises(ValueError, match="ATTNLAB_HUB_TIMEOUT"):
            al.core.config.hub_timeout()


# --------------------------------------------------------------------------- auto falls back, with the reason


BLOCKED = [
    ("silent", "is not answering", "no answer within 3 s"),
    ("503", "is answering with errors", "HTTP 503"),
    ("404", "is answering with errors", "no model bert-base-chinese there, HTTP 404"),
    ("cut", "is answering with errors", "the download of model.safetensors was cut off"),
]


@pytest.mark.parametrize("mode, what, detail", BLOCKED)
def test_auto_falls_back_within_the_deadline(caches, article_folder, monkeypatch, mode, what, detail):
    with StandInHub(MODEL, article_folder, mode=mode) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        (name, why), elapsed = timed(models._choose_auto)
    assert elapsed < DEADLINE + SLACK, elapsed
    if mode in ("503", "404"):
        assert elapsed < DEADLINE, elapsed  # an error answer ends the attempt at once, no retries
        assert len(standin.requests) == 1
    assert name == models.MULTILINGUAL
    assert f"{MODEL} is not cached and the model hub {standin.url} {what} ({detail})" in why
    assert "ATTNLAB_OFFLINE=1" in why and "HF_ENDPOINT" in why
    nothing_half_written(caches)


def test_auto_falls_back_at_once_when_the_hub_refuses(caches, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    (name, why), elapsed = timed(models._choose_auto)
    assert elapsed < DEADLINE
    assert name == models.MULTILINGUAL and "refused the connection" in why and "ATTNLAB_OFFLINE=1" in why
    nothing_half_written(caches)


def test_the_fallback_message_ends_its_sentence_once(caches, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    al.load_model("auto")
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("attnlab: using ") and "refused the connection" in line
    assert line.endswith("mirror of it.") and not line.endswith("..")


# --------------------------------------------------------------------------- an explicit name fails, with the reason


@pytest.mark.parametrize("mode, what, detail", BLOCKED)
def test_an_explicit_hub_id_fails_within_the_deadline(caches, article_folder, monkeypatch, mode, what, detail):
    with StandInHub(MODEL, article_folder, mode=mode) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        err, elapsed = timed(al.load_model, MODEL, verbose=False)
    assert isinstance(err, al.ModelLoadError), err
    assert elapsed < DEADLINE + SLACK, elapsed
    message = str(err)
    assert f"the model hub {standin.url} {what} ({detail})" in message
    assert "ATTNLAB_OFFLINE=1" in message and "HF_ENDPOINT" in message
    nothing_half_written(caches)


# --------------------------------------------------------------------------- the normal case


def test_a_hub_that_answers_delivers_the_model_and_the_second_load_stays_offline(
        caches, article_folder, monkeypatch, capfd):
    with StandInHub(MODEL, article_folder) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        m = al.load_model("auto")
        assert (m.name, m.language, m.n_heads) == (MODEL, "zh", 12)
        assert m.source == "cache" and f"downloaded from {standin.url}" in m.reason  # loaded from where it landed
        assert (m.cls_token, m.sep_token) == ("[CLS]", "[SEP]")
        out = capfd.readouterr()
        assert "LOAD REPORT" not in out.out + out.err  # the checkpoint's cls.* keys are expected
        lines = out.out.strip().splitlines()
        assert lines[0].startswith(f"attnlab: downloading {MODEL} from {standin.url}")
        assert lines[-1].startswith(f"attnlab: using {MODEL}") and "downloaded from" in lines[-1]
        assert len(lines) == 2
        assert (hub.cache_dir() / hub.repo_folder(MODEL) / "refs" / "main").read_text() == StandInHub.COMMIT
        assert list((caches["attnlab"] / "downloads").glob("download-*")) == []

        opened = standin.connections
        again = al.load_model("auto", verbose=False)
        assert standin.connections == opened  # the cached model opens no connection
        assert again.source == "cache" and "local cache" in again.reason


def test_a_cut_off_download_is_redone_next_time(caches, article_folder, monkeypatch):
    with StandInHub(MODEL, article_folder, mode="cut") as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        answer = models.download_from_hub(MODEL)
    assert answer.state == hub.ERRORS and "cut off" in answer.detail
    nothing_half_written(caches)
    with StandInHub(MODEL, article_folder) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        answer = models.download_from_hub(MODEL)
        assert answer.ok, answer
    weights = Path(hub.cache_dir() / hub.repo_folder(MODEL) / "snapshots" / StandInHub.COMMIT / "model.safetensors")
    assert weights.read_bytes() == (article_folder / "model.safetensors").read_bytes()


def test_offline_switches_name_themselves_and_open_no_connection(caches, article_folder, monkeypatch):
    with StandInHub(MODEL, article_folder) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        for var in ("HF_HUB_OFFLINE", "ATTNLAB_OFFLINE"):
            monkeypatch.setenv(var, "1")
            name, why = models._choose_auto()
            assert name == models.MULTILINGUAL and f"{var} forbids the model hub" in why
            with pytest.raises(al.ModelLoadError, match=f"not reachable by choice \\({var} is set\\)"):
                al.load_model(MODEL, verbose=False)
            monkeypatch.delenv(var)
        assert standin.connections == 0


# --------------------------------------------------------------------------- the doctor


@pytest.mark.parametrize("mode, state", [("serve", "reachable"), ("silent", "not answering"),
                                         ("503", "answering with errors"), ("404", "answering with errors")])
def test_the_doctor_names_what_the_hub_does(caches, article_folder, monkeypatch, mode, state):
    with StandInHub(MODEL, article_folder, mode=mode) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        check, elapsed = timed(dr.check_network)
    assert elapsed < DEADLINE + 1.0
    assert f"model hub {standin.url} {state}" in check.detail
    assert check.status == ("ok" if state == "reachable" else "warn")
    if state != "reachable":
        assert "ATTNLAB_OFFLINE=1" in check.advice and "HF_ENDPOINT" in check.advice


def test_the_doctor_says_refused(caches, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    check, elapsed = timed(dr.check_network)
    assert elapsed < DEADLINE and "refused" in check.detail and check.status == "ok"


# --------------------------------------------------------------------------- lesson 12 on the article's shape


@pytest.mark.parametrize("content_share", [0.0, 0.25])
def test_lesson_12_claims_run_on_a_bert_base_chinese_shaped_model(article_folder, content_share):
    """Lesson 12's verdicts on evidence of the article model's geometry (2 x 12 here), including the
    case that crashed: no head follows content (an empty group of heads)."""
    m = al.load_model(str(article_folder), verbose=False)
    assert (m.n_heads, m.cls_token, m.sep_token, m.language) == (12, "[CLS]", "[SEP]", "zh")
    shape = {"n_layers": m.n_layers, "n_heads": m.n_heads}
    ev = records.evidence(patterns=records.patterns(**shape), averaging=records.averaging(**shape),
                          perturbation=records.perturbation(content_share=content_share, **shape),
                          pruning=records.pruning(**shape))
    try:
        verdicts = all_conclusions(ev)
    except ValueError as exc:
        if "both groups need at least one value" in str(exc):
            pytest.xfail("issue 25, empty group of heads: a two-group claim crashes instead of answering "
                         "'cannot tell' (fixed in the claim code separately)")
        raise
    assert set(verdicts) == set(LABELS)
