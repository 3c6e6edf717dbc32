"""The model hub within one deadline: ask it, classify its answer, download from it.

Many readers sit behind networks that block the hub, and a blocked network
rarely refuses a connection: a filtering proxy accepts it and then says
nothing, or answers every request with an error. huggingface_hub's own
timeouts and retries then add up to minutes. Here every contact with the hub
is bounded by one deadline, ``ATTNLAB_HUB_TIMEOUT`` seconds (15 by default):

* :func:`probe` asks for one small file (``config.json`` of a model) and
  classifies the answer as one of :data:`STATES`, in a daemon thread, so a
  stalled connection never blocks the caller past the deadline.
* :func:`fetch` downloads a model into the hub cache. The download runs in a
  child process that writes into a private working folder; the finished model
  is moved into the cache in one pass, weights first and the ``refs`` entry
  that names it last. When the hub stops answering for a whole deadline, or a
  transfer is cut off, the child is stopped and its folder deleted: the cache
  never holds half a model, and the next attempt starts the download again.

A download that keeps delivering data may take longer than the deadline (a
400 MB model over a slow line); the deadline bounds every silence.

This module imports only the standard library, huggingface_hub and
:mod:`attnlab.core.config`, because the child process imports it too.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url

from attnlab.core import config
from attnlab.core.language import N_, _

REACHABLE = N_("reachable")
REFUSED = N_("refused")
SILENT = N_("not answering")
ERRORS = N_("answering with errors")
#: the four answers a hub can give; a missing model counts as an error answer
STATES = (REACHABLE, REFUSED, SILENT, ERRORS)

#: the main hub, used when ``HF_ENDPOINT`` names no mirror
MAIN_HUB = "https://huggingface.co"

#: files a BERT-family model may need, besides weights; none is required but config.json
TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "vocab.txt", "special_tokens_map.json",
                   "added_tokens.json", "vocab.json", "merges.txt", "sentencepiece.bpe.model", "spiece.model")

_POLL_S = 0.1
#: seconds a child process may take to start (import huggingface_hub) on a busy machine; not the hub's time
_START_S = 60.0


@dataclass(frozen=True)
class HubAnswer:
    """What the hub did when asked.

    Attributes:
        state: one of :data:`STATES`.
        detail: what exactly happened (``"HTTP 503"``, ``"no model bert-base-chinese (HTTP 404)"``, ...).
        endpoint: the hub or mirror that was asked.
        seconds: how long the attempt took.
        commit: the model's commit id (only when reachable).
    """

    state: str
    detail: str
    endpoint: str
    seconds: float = 0.0
    commit: str = ""

    @property
    def ok(self) -> bool:
        return self.state == REACHABLE

    def describe(self) -> str:
        """One clause for a sentence: what the hub did, e.g. ``the model hub https://... did not answer within 15 s``."""
        if self.state == REACHABLE:
            return _("the model hub {endpoint} answered").format(endpoint=self.endpoint)
        if self.state == REFUSED:
            return _("the model hub {endpoint} refused the connection ({detail})").format(
                endpoint=self.endpoint, detail=self.detail)
        if self.state == SILENT:
            return _("the model hub {endpoint} is not answering ({detail})").format(
                endpoint=self.endpoint, detail=self.detail)
        return _("the model hub {endpoint} is answering with errors ({detail})").format(
            endpoint=self.endpoint, detail=self.detail)


def advice() -> str:
    """What a reader behind a blocked network can do, in one sentence."""
    return _("Set ATTNLAB_OFFLINE=1 to skip the model hub for good, or HF_ENDPOINT=<mirror URL> to use a "
             "mirror of it.")


# --------------------------------------------------------------------------- where


def endpoint() -> str:
    """The hub to ask: ``HF_ENDPOINT`` (a mirror) when set, else the main hub; read at every call."""
    return (os.environ.get("HF_ENDPOINT", "").strip() or MAIN_HUB).rstrip("/")


def host_and_port(url: str | None = None) -> tuple[str, int]:
    """Host and port of ``url`` (default: :func:`endpoint`)."""
    parts = urllib.parse.urlsplit(url or endpoint())
    return parts.hostname or "huggingface.co", parts.port or (80 if parts.scheme == "http" else 443)


def cache_dir() -> Path:
    """The hub cache, read from the environment at every call, as huggingface_hub reads it at import:
    ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``XDG_CACHE_HOME/huggingface/hub``, else
    ``~/.cache/huggingface/hub``."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(os.path.expandvars(explicit)).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface")
    return Path(os.path.expandvars(home)).expanduser() / "hub"


def offline_variable() -> str:
    """The variable that forbids asking the hub at all (``"ATTNLAB_OFFLINE"``, ...), or ``""``."""
    if config.is_offline():
        return "ATTNLAB_OFFLINE"
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return var
    return ""


def offline_reason() -> str:
    """Why the hub must not be asked at all (``"ATTNLAB_OFFLINE is set"``, in the reader's language),
    or ``""``."""
    variable = offline_variable()
    return _("{variable} is set").format(variable=variable) if variable else ""


def repo_folder(repo_id: str) -> str:
    """The cache folder name of a model: ``models--org--name``."""
    return "models--" + repo_id.replace("/", "--")


# --------------------------------------------------------------------------- asking


def classify(exc: BaseException, ep: str, repo_id: str) -> HubAnswer:
    """The :class:`HubAnswer` that an exception raised while asking the hub stands for.

    Reads the HTTP status when there is one, else the exception types along the
    cause chain (by name, so it works whatever HTTP library huggingface_hub uses).
    """
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        if status == 404:
            return HubAnswer(ERRORS, _("no model {repo} there, HTTP 404").format(repo=repo_id), ep)
        return HubAnswer(ERRORS, f"HTTP {status}", ep)
    chain, seen = [], exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    names = {cls.__name__ for e in chain for cls in type(e).__mro__}
    text = " ".join(str(e) for e in chain)
    if "gaierror" in names or "Name or service not known" in text or "nodename nor servname" in text \
            or "getaddrinfo failed" in text:
        return HubAnswer(REFUSED, _("the name {host} does not resolve").format(host=host_and_port(ep)[0]), ep)
    if names & {"TimeoutError", "timeout", "TimeoutException", "Timeout", "ReadTimeout", "ConnectTimeout"}:
        return HubAnswer(SILENT, _("no answer in time"), ep)
    if names & {"ConnectionRefusedError", "ConnectError", "ConnectionError", "RemoteProtocolError",
                "ConnectionResetError", "ReadError"}:
        return HubAnswer(REFUSED, first_line(exc), ep)
    return HubAnswer(ERRORS, f"{type(exc).__name__}: {first_line(exc)}", ep)


def first_line(exc: BaseException, limit: int = 160) -> str:
    """The first line of an exception's message (its type name when empty), at most ``limit`` characters."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


def _ask_config(repo_id: str, ep: str, timeout: float) -> HubAnswer:
    """One HEAD request for ``config.json`` of ``repo_id``, without retries."""
    start = time.monotonic()
    try:
        meta = get_hf_file_metadata(hf_hub_url(repo_id, "config.json", endpoint=ep), timeout=timeout,
                                    endpoint=ep, retry_on_errors=False)
    except Exception as exc:  # noqa: BLE001 - every failure is one of the answers
        found = classify(exc, ep, repo_id)
        detail = _("no answer within {seconds:g} s").format(seconds=timeout) if found.state == SILENT else found.detail
        return HubAnswer(found.state, detail, ep, time.monotonic() - start)
    return HubAnswer(REACHABLE, "config.json answered", ep, time.monotonic() - start, meta.commit_hash or "")


def probe(repo_id: str, timeout: float | None = None) -> HubAnswer:
    """Ask the hub (``HF_ENDPOINT``) for ``repo_id``'s ``config.json`` and classify the answer.

    Returns within ``timeout`` seconds (default :func:`attnlab.core.config.hub_timeout`)
    plus a fraction: the request runs in a daemon thread, so a stalled connection or
    a hanging name lookup is left behind (it writes nothing). Never asks under
    ``ATTNLAB_OFFLINE``/``HF_HUB_OFFLINE`` (then the answer is ``refused``, with the reason).
    """
    limit = config.hub_timeout() if timeout is None else float(timeout)
    ep = endpoint()
    reason = offline_reason()
    if reason:
        return HubAnswer(REFUSED, reason, ep)
    out: list[HubAnswer] = []
    thread = threading.Thread(target=lambda: out.append(_ask_config(repo_id, ep, limit)), daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(limit + 0.2)
    if out:
        return out[0]
    return HubAnswer(SILENT, _("no answer within {seconds:g} s").format(seconds=limit), ep,
                     time.monotonic() - start)


# --------------------------------------------------------------------------- downloading


def choose_files(names: list[str], allow_pickle: bool = False) -> list[str]:
    """The files of a model repository that loading it needs: config, tokenizer, weights.

    Top-level files only. Safetensors weights (one file, or an index and its
    shards); pickle weights (``pytorch_model.bin``) only with ``allow_pickle``
    and when there are no safetensors. Empty when there is no ``config.json``
    or no usable weights.
    """
    top = [n for n in names if "/" not in n]
    if "config.json" not in top:
        return []
    weights = [n for n in top if n.endswith(".safetensors") or n == "model.safetensors.index.json"]
    if not weights and allow_pickle:
        weights = [n for n in top if n.startswith("pytorch_model") and (n.endswith(".bin") or n.endswith(".bin.index.json"))]
    if not weights:
        return []
    return ["config.json"] + [n for n in TOKENIZER_FILES if n in top] + sorted(weights)


def folder_bytes(folder: Path) -> int:
    """Bytes of all files under ``folder`` (symbolic links not followed); 0 when it is gone."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def fetch(repo_id: str, *, workdir: Path, allow_pickle: bool = False, timeout: float | None = None,
          announce: Callable[[str], None] | None = None) -> HubAnswer:
    """Download ``repo_id`` into the hub cache (:func:`cache_dir`), never waiting a whole deadline in silence.

    Args:
        repo_id: a hub id, e.g. ``"bert-base-chinese"``.
        workdir: where the private working folders live (attnlab's cache); a
            folder made here is deleted when the attempt ends, whatever happened.
        allow_pickle: also accept ``pytorch_model.bin`` weights when there are no safetensors.
        timeout: the deadline in seconds (default ``ATTNLAB_HUB_TIMEOUT``, 15): the
            hub must answer within it, and a download that delivers nothing for
            that long is stopped.
        announce: called with one line when a download starts.

    Returns:
        ``state == "reachable"`` when the model is now complete in the cache; else
        what the hub did (the cache is unchanged).
    """
    limit = config.hub_timeout() if timeout is None else float(timeout)
    start = time.monotonic()
    answer = probe(repo_id, limit)
    if not answer.ok:
        return _took(answer, start)
    if announce is not None:
        announce(_("attnlab: downloading {model} from {endpoint} (it stops when the hub is silent for "
                   "{seconds:g} s) ...").format(model=repo_id, endpoint=answer.endpoint, seconds=limit))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    _remove_stale(workdir)
    staging = Path(tempfile.mkdtemp(prefix="download-", dir=workdir))
    try:
        result = _download_in_child(repo_id, answer, staging, allow_pickle, limit)
        if result.ok:
            move_into_cache(staging / repo_folder(repo_id), cache_dir() / repo_folder(repo_id),
                            ref="main", commit=result.commit)
        return _took(result, start)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _took(answer: HubAnswer, start: float) -> HubAnswer:
    return HubAnswer(answer.state, answer.detail, answer.endpoint, time.monotonic() - start, answer.commit)


def _remove_stale(workdir: Path, older_than_s: float = 6 * 3600) -> None:
    """Delete working folders left by a process that died hard (killed, power cut)."""
    now = time.time()
    for old in workdir.glob("download-*"):
        try:
            if now - old.stat().st_mtime > older_than_s:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


def _child_command() -> list[str]:
    return [sys.executable, "-c", "from attnlab.core.hub import child_main; child_main()"]


def _child_env(ep: str, limit: float) -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env["HF_ENDPOINT"] = ep
    env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    env["HF_HUB_ETAG_TIMEOUT"] = env["HF_HUB_DOWNLOAD_TIMEOUT"] = str(max(1, int(limit + 0.999)))
    return env


def _download_in_child(repo_id: str, answer: HubAnswer, staging: Path, allow_pickle: bool,
                       limit: float) -> HubAnswer:
    """Run :func:`child_main` and watch it: stop it after ``limit`` seconds without news or new bytes."""
    ep = answer.endpoint
    job = {"repo_id": repo_id, "revision": answer.commit or "main", "cache_dir": str(staging),
           "endpoint": ep, "allow_pickle": allow_pickle, "timeout": limit}
    events: queue.Queue = queue.Queue()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(_child_command() + [json.dumps(job)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=errors, env=_child_env(ep, limit))
        reader = threading.Thread(target=_read_events, args=(proc, events), daemon=True)
        reader.start()
        try:
            return _watch(proc, reader, events, staging, ep, repo_id, limit, errors)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _read_events(proc: subprocess.Popen, events: queue.Queue) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        try:
            events.put(json.loads(raw.decode("utf-8", "replace")))
        except ValueError:
            continue


def _watch(proc: subprocess.Popen, reader: threading.Thread, events: queue.Queue, staging: Path, ep: str,
           repo_id: str, limit: float, errors) -> HubAnswer:
    """Wait for the child's verdict; the hub's silence is counted from the child's start on."""
    last_news, last_size, started = time.monotonic(), 0, False
    while True:
        while not events.empty():
            event = events.get()
            last_news = time.monotonic()
            started = True
            if event.get("event") == "done":
                return HubAnswer(REACHABLE, _("downloaded {n} files").format(n=event.get("files", 0)), ep,
                                 commit=str(event.get("commit", "")))
            if event.get("event") == "cut":
                return HubAnswer(ERRORS, _("the download of {file} was cut off").format(file=event.get("file", "?")), ep)
            if event.get("event") == "error":
                return HubAnswer(str(event.get("state", ERRORS)), str(event.get("detail", "")), ep)
        size = folder_bytes(staging)
        if size > last_size:
            last_size, last_news = size, time.monotonic()
        if proc.poll() is not None and not reader.is_alive() and events.empty():
            errors.seek(0)
            tail = errors.read().decode("utf-8", "replace").strip().splitlines()
            return HubAnswer(ERRORS, _("the download stopped (exit code {code}): {line}").format(
                code=proc.returncode, line=(tail[-1] if tail else "")[:160]), ep)
        if not started and time.monotonic() - last_news > _START_S:
            return HubAnswer(ERRORS, _("the download process did not start within {seconds:g} s").format(
                seconds=_START_S), ep)
        if started and time.monotonic() - last_news > limit:
            what = (_("the download stopped delivering for {seconds:g} s") if last_size
                    else _("no answer within {seconds:g} s"))
            return HubAnswer(SILENT, what.format(seconds=limit), ep)
        time.sleep(_POLL_S)


def move_into_cache(staged: Path, target: Path, *, ref: str, commit: str) -> None:
    """Move a downloaded model folder (hub cache layout) into the cache, merging with what is there.

    Blobs first, then the snapshot entries (``config.json`` last), then the
    ``refs/<ref>`` file that names the snapshot (``commit``): a reader that finds
    the ref, or the config, finds a complete model. Works across file systems
    (copy, then rename).
    """
    for part in ("blobs", "snapshots"):
        entries = [p for p in sorted((staged / part).rglob("*")) if p.is_symlink() or p.is_file()]
        entries.sort(key=lambda p: p.name == "config.json")
        for src in entries:
            dst = target / src.relative_to(staged)
            dst.parent.mkdir(parents=True, exist_ok=True)
            _replace(src, dst)
    ref_file = target / "refs" / ref
    ref_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = ref_file.with_name(f".{ref}.attnlab-tmp")
    tmp.write_text(commit, encoding="utf-8")
    os.replace(tmp, ref_file)


def _replace(src: Path, dst: Path) -> None:
    try:
        os.replace(src, dst)
        return
    except OSError:
        pass  # another file system: copy next to the target, then rename
    tmp = dst.with_name(f".{dst.name}.attnlab-tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    if src.is_symlink():
        os.symlink(os.readlink(src), tmp)
    else:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


# --------------------------------------------------------------------------- the child process


def _emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class _CutWatcher(logging.Handler):
    """huggingface_hub logs a warning and retries when a transfer is cut off; the deadline is not
    for retries, so the child reports the cut and ends at once."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.current = "?"

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Error while downloading" in message or "resume download" in message:
            _emit(event="cut", file=self.current, detail=message.splitlines()[0][:200])
            os._exit(3)


def child_main() -> None:
    """Download the files of one model into a working cache folder (run by :func:`fetch` in a child process).

    Reads the job (JSON) from ``sys.argv[1]``; writes one JSON line per event
    on stdout: ``file`` after each file, then ``done``, or ``error``/``cut``.
    """
    job = json.loads(sys.argv[1])
    repo_id, ep, limit = job["repo_id"], job["endpoint"], float(job["timeout"])
    _emit(event="started")
    watcher = _CutWatcher()
    logging.getLogger("huggingface_hub").addHandler(watcher)
    try:
        info = HfApi(endpoint=ep).model_info(repo_id, revision=job["revision"], timeout=limit)
        commit = info.sha or job["revision"]
        files = choose_files([s.rfilename for s in (info.siblings or [])], bool(job["allow_pickle"]))
        if not files:
            _emit(event="error", state=ERRORS,
                  detail=f"{repo_id} has no config.json or no safetensors weights there")
            return
        for name in files:
            watcher.current = name
            # one request without retries first, so an error answer is reported, not retried for a minute
            get_hf_file_metadata(hf_hub_url(repo_id, name, revision=commit, endpoint=ep), timeout=limit,
                                 endpoint=ep, retry_on_errors=False)
            hf_hub_download(repo_id, name, revision=commit, cache_dir=job["cache_dir"], endpoint=ep,
                            etag_timeout=limit)
            _emit(event="file", name=name)
        _emit(event="done", files=len(files), commit=commit)
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
        found = classify(exc, ep, repo_id)
        _emit(event="error", state=found.state, detail=found.detail)
