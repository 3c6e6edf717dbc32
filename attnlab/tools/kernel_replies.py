"""A kernel client that finds a cell's reply even when the wake-up for it was missed.

With a lesson's widgets, nbclient sends on the shell socket while it waits on that socket for the cell's
reply (jupyter/nbclient#312). Under load the wake-up for the reply is then sometimes missed: the kernel is
idle, the reply sits in the socket, and one long poll waits for the cell's whole time limit. Polling again
every :data:`REPLY_SLICE_SECONDS` finds it a second later.

* :func:`wait_in_slices` does it for one channel (the lesson runner's client);
* :func:`poll_every_client_in_slices` for every asynchronous client of the process (nbgrader's graders:
  ``classroom/nbgrader_config.py`` calls it, as nbgrader builds its client itself).

This module imports no torch and nothing else of attnlab: nbgrader's own process loads it, and the doors'
test driver (tests/test_doors.py) imports a copy of it in an environment where attnlab is not yet installed.
"""

from __future__ import annotations

from queue import Empty
from time import monotonic
from typing import Any, Awaitable, Callable

#: seconds a client waits for a cell's reply before it polls its socket again
REPLY_SLICE_SECONDS = 1.0


def in_slices(get_msg: Callable[..., Awaitable[dict]],
              slice_seconds: float = REPLY_SLICE_SECONDS) -> Callable[..., Awaitable[dict]]:
    """``get_msg`` (an awaitable ``get_msg(*args, timeout=...)``) made to wait at most ``slice_seconds``
    at a time, polling anew each time, until the timeout it was asked for (None: no end), after which it
    raises ``queue.Empty`` as before."""

    async def sliced(*args: Any, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            left = slice_seconds if deadline is None else min(slice_seconds, max(0.0, deadline - monotonic()))
            try:
                return await get_msg(*args, timeout=left)
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise

    sliced.in_slices = True  # type: ignore[attr-defined]
    return sliced


def wait_in_slices(channel: Any, slice_seconds: float = REPLY_SLICE_SECONDS) -> None:
    """Make ``channel.get_msg`` (a channel of an asynchronous kernel client) poll in slices
    (:func:`in_slices`).

    Measured on a 2-core machine with six busy processes beside it: lesson 08's slider cell lost its
    reply on both tries of two runs; polling again every second, the lesson finished.
    """
    channel.get_msg = in_slices(channel.get_msg, slice_seconds)


def poll_every_client_in_slices(channel_class: type | None = None,
                                slice_seconds: float = REPLY_SLICE_SECONDS) -> None:
    """Make every channel of ``channel_class`` (default: jupyter_client's ``AsyncZMQSocketChannel``, the
    channels of nbclient's and so nbgrader's clients) poll in slices (:func:`in_slices`). Calling it
    again changes nothing.

    A graded lesson 04 (its explorer widget) lost two submissions of four this way on a loaded 2-core
    machine: both tries of each sat idle until the stall watch stopped them."""
    if channel_class is None:
        from jupyter_client.channels import AsyncZMQSocketChannel as channel_class
    if getattr(channel_class.get_msg, "in_slices", False):
        return
    channel_class.get_msg = in_slices(channel_class.get_msg, slice_seconds)
