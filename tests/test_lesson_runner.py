"""The headless lesson runner: each lesson's kernel ends with it, also after an error."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from queue import Empty

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from attnlab.tools.lesson_runner import (  # noqa: E402
    WEDGE_ENV,
    KernelWedged,
    execute_notebook,
    lesson_kernel,
    wedge_limit,
)
from attnlab.tools.kernel_replies import poll_every_client_in_slices, wait_in_slices  # noqa: E402


ROOT = Path(__file__).resolve().parents[1]


def _book(*sources: str):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return book


def _kernel_pid(book) -> int:
    """The pid printed by the notebook's first cell."""
    return int("".join(o.get("text", "") for o in book.cells[0].outputs).strip())


def _running(pid: int) -> bool:
    """Is ``pid`` a live process (not gone, not a zombie waiting to be reaped)?"""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not Path("/proc").is_dir()  # no /proc here: the signal test is all there is
    state = next((line for line in status.read_text().splitlines() if line.startswith("State:")), "")
    return "zombie" not in state and "(dead)" not in state


def test_the_kernel_ends_with_the_notebook(tmp_path):
    book = _book("import os; print(os.getpid())", "x = 1")
    execute_notebook(book, tmp_path, timeout=120)
    pid = _kernel_pid(book)
    assert pid != os.getpid()
    assert not _running(pid)


def test_the_kernel_and_its_socket_folder_end_after_an_error(tmp_path):
    from nbclient.exceptions import CellExecutionError

    book = _book("import os; print(os.getpid())", "raise ValueError('a broken lesson')")
    seen = {}
    with pytest.raises(CellExecutionError, match="a broken lesson"):
        with lesson_kernel(book, tmp_path, timeout=120) as client:
            seen["sockets"] = Path(client.km.ip).parent
            assert seen["sockets"].is_dir()
            for index, cell in enumerate(book.cells):
                client.execute_cell(cell, index)
    pid = _kernel_pid(book)
    assert not _running(pid)
    assert not seen["sockets"].exists()


def test_a_model_set_aside_holds_no_weights_and_comes_back_bit_for_bit(tiny_en):
    """While lesson 12 re-runs a lesson, its own model's weights wait on disk (one model in memory)."""
    import torch

    from attnlab.tools.lesson_runner import model_set_aside

    enc = tiny_en.encode(["the cat sat on the mat"])
    with torch.no_grad():
        before = tiny_en.model(**enc).last_hidden_state.clone()
    params = dict(tiny_en.model.named_parameters())
    copies = {k: p.detach().clone() for k, p in params.items()}
    with model_set_aside(tiny_en):
        assert sum(p.numel() for p in tiny_en.model.parameters()) == 0
    assert all(dict(tiny_en.model.named_parameters())[k] is params[k] for k in params)  # same objects
    assert all(torch.equal(params[k], copies[k]) for k in params)
    with torch.no_grad():
        assert torch.equal(tiny_en.model(**enc).last_hidden_state, before)


#: a cell that stops its whole kernel (every thread: no output, no answer on any channel) the first time
#: it runs, writing the kernel's pid into ``marker`` first; later runs find the marker and carry on
WEDGE_ONCE = """import os, pathlib, signal
marker = pathlib.Path({marker!r})
if not marker.exists():
    marker.write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGSTOP)
print("carried on")"""


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGSTOP"), reason="no SIGSTOP to plant a wedge with")
def test_wedged_kernel_is_restarted(tmp_path, capsys):
    """A kernel that stops answering in the middle of a lesson is noticed within the (short, here) wedge
    limit, stopped, reported in one line, and the lesson runs again from the top in a new kernel, which
    completes it."""
    marker = tmp_path / "wedged-once"
    book = _book("import os; print(os.getpid())", WEDGE_ONCE.format(marker=str(marker)), "print('the end')")
    start = time.monotonic()
    execute_notebook(book, tmp_path, timeout=120, wedge_seconds=2, name="planted")
    assert time.monotonic() - start < 40
    wedged = int(marker.read_text())
    assert _kernel_pid(book) != wedged  # the lesson finished in another kernel, from the top
    assert not _running(wedged)  # the wedged kernel is gone
    assert not _running(_kernel_pid(book))
    assert [o["text"] for o in book.cells[2].outputs] == ["the end\n"]
    said = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert said == ["planted: the kernel stopped answering in cell 2 (nothing from it about the cell for 2 s, and not "
                    "busy with it when asked); the kernel was stopped and the lesson runs again from the top in a new "
                    "kernel"]


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGSTOP"), reason="no SIGSTOP to plant a wedge with")
def test_a_second_wedge_fails_and_a_busy_silent_cell_is_left_alone(tmp_path, capsys):
    """A kernel that wedges again is an error naming the lesson; a cell that is silent past the limit while
    its kernel answers (busy, not wedged) runs to its end."""
    book = _book("import time; time.sleep(4); print('slept')")
    execute_notebook(book, tmp_path, timeout=120, wedge_seconds=1, name="busy")
    assert book.cells[0].outputs[0]["text"] == "slept\n" and capsys.readouterr().out == ""
    always = _book("import os, signal; os.kill(os.getpid(), signal.SIGSTOP)")
    with pytest.raises(KernelWedged, match="^stuck: the kernel stopped answering in cell 1 .*second time"):
        execute_notebook(always, tmp_path, timeout=120, wedge_seconds=1, name="stuck")


#: a cell whose end never reaches the client, on its kernel's first run only: the kernel drops its own
#: execute_reply and its "idle" status from then on (it finishes the cell and sits idle, answering other
#: requests), the lost-reply hang seen with ipykernel 7
LOSES_ITS_END_ONCE = """import os
marker = {marker!r}
if not os.path.exists(marker):
    open(marker, "w").write(str(os.getpid()))
    kernel = get_ipython().kernel
    send = kernel.session.send
    def dropping(stream, msg_or_type, content=None, *args, **kwargs):
        kind = msg_or_type if isinstance(msg_or_type, str) else msg_or_type["header"]["msg_type"]
        body = content if content is not None else ({{}} if isinstance(msg_or_type, str) else msg_or_type["content"])
        if kind == "execute_reply" or (kind == "status" and body.get("execution_state") == "idle"):
            return None
        return send(stream, msg_or_type, content, *args, **kwargs)
    kernel.session.send = dropping
print("ran")"""


def test_a_kernel_idle_with_its_cell_unfinished_is_restarted(tmp_path, capsys):
    """The kernel finished the cell but its end never reached the client: it answers on its control channel
    (so it is not frozen) and on its shell channel (so it is not busy), and the client waits forever. The
    watch stops it within the limit and the lesson completes in a new kernel."""
    marker = tmp_path / "lost-once"
    book = _book("import os; print(os.getpid())", LOSES_ITS_END_ONCE.format(marker=str(marker)), "print('the end')")
    start = time.monotonic()
    execute_notebook(book, tmp_path, timeout=120, wedge_seconds=2, name="lost")
    assert time.monotonic() - start < 60
    assert _kernel_pid(book) != int(marker.read_text())  # finished in another kernel
    assert [o["text"] for o in book.cells[2].outputs] == ["the end\n"]
    said = capsys.readouterr().out
    assert said.startswith("lost: the kernel stopped answering in cell 2")


def test_the_wedge_limit_is_read_from_the_run_mode_and_the_environment(monkeypatch):
    monkeypatch.delenv("ATTNLAB_CLASS", raising=False)
    monkeypatch.delenv(WEDGE_ENV, raising=False)
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    assert wedge_limit() == 120
    monkeypatch.setenv("ATTNLAB_SMOKE", "0")
    assert wedge_limit() is None  # full runs have long silent cells
    monkeypatch.setenv(WEDGE_ENV, "30")
    assert wedge_limit() == 30
    monkeypatch.setenv(WEDGE_ENV, "0")
    assert wedge_limit() is None
    monkeypatch.setenv(WEDGE_ENV, "soon")
    with pytest.raises(ValueError, match="ATTNLAB_WEDGE_SECONDS"):
        wedge_limit()


class _MissedWakeUp:
    """A channel whose message (None: none) is in its socket from the start, but whose first poll misses
    the wake-up for it, as nbclient's shell socket can under load: it waits its whole timeout and finds
    nothing. A later poll finds the message at once."""

    def __init__(self, message: dict | None) -> None:
        self.message, self.polls = message, []

    async def get_msg(self, timeout: float | None = None) -> dict:
        self.polls.append(timeout)
        if len(self.polls) == 1 or self.message is None:
            await asyncio.sleep(timeout)
            raise Empty
        return self.message


def test_a_missed_wake_up_costs_one_slice_not_the_cells_limit():
    """The reply of a cell whose wake-up was missed is found by the next poll, a slice later, not at the
    cell's limit (30 s here, 900 s in a lesson); with no reply the wait still ends at its limit, in Empty."""
    reply = {"msg_type": "execute_reply"}
    channel = _MissedWakeUp(reply)
    wait_in_slices(channel, slice_seconds=0.05)
    start = time.monotonic()
    assert asyncio.run(channel.get_msg(timeout=30)) is reply
    assert time.monotonic() - start < 5
    assert channel.polls[0] == pytest.approx(0.05)  # one slice, not the whole limit
    nothing = _MissedWakeUp(None)
    wait_in_slices(nothing, slice_seconds=0.05)
    start = time.monotonic()
    with pytest.raises(Empty):
        asyncio.run(nothing.get_msg(timeout=0.3))
    assert 0.3 <= time.monotonic() - start < 5
    assert len(nothing.polls) >= 3 and sum(nothing.polls) == pytest.approx(0.3, abs=0.06)


def test_every_client_of_a_grader_polls_in_slices(monkeypatch):
    """nbgrader builds its client itself: its settings file (``classroom/nbgrader_config.py``) makes every
    channel class poll in slices when it grades, once however often it is read, and a channel made
    afterwards finds a reply whose wake-up was missed a slice later."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    class Channel(_MissedWakeUp):
        pass

    poll_every_client_in_slices(Channel, slice_seconds=0.05)
    patched = Channel.get_msg
    poll_every_client_in_slices(Channel, slice_seconds=0.05)
    assert Channel.get_msg is patched  # not sliced twice
    reply = {"msg_type": "execute_reply"}
    channel = Channel(reply)
    start = time.monotonic()
    assert asyncio.run(channel.get_msg(timeout=30)) is reply
    assert time.monotonic() - start < 5 and channel.polls[0] == pytest.approx(0.05)

    # the settings file, read as nbgrader reads it, for autograde and for another command
    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", AsyncZMQSocketChannel.get_msg)  # restored afterwards
    for key in ("ATTNLAB_CLASS", "ATTNLAB_GRADED_COURSE"):  # what the settings file sets, restored afterwards
        monkeypatch.setenv(key, "")
    plain = AsyncZMQSocketChannel.get_msg
    config = (ROOT / "classroom" / "nbgrader_config.py").read_text(encoding="utf-8")
    for argv, sliced in ((["nbgrader", "generate_feedback", "lesson_04"], False),
                         (["nbgrader", "autograde", "lesson_04"], True)):
        monkeypatch.setattr(sys, "argv", argv)
        exec(compile(config, "nbgrader_config.py", "exec"), {"get_config": _Config, "__file__": str(
            ROOT / "classroom" / "nbgrader_config.py")})
        assert getattr(AsyncZMQSocketChannel.get_msg, "in_slices", False) is sliced, argv
    assert AsyncZMQSocketChannel.get_msg is not plain


class _Config(dict):
    """Enough of traitlets' config for the settings file: ``c.Section.name = value``."""

    def __getattr__(self, name: str) -> "_Config":
        return self.setdefault(name, _Config())

    def __setattr__(self, name: str, value: object) -> None:
        self[name] = value
