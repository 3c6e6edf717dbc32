"""Lesson 08's stopping rule on synthetic shards whose answer is known in advance.

Each synthetic shard is one number per head (a shard's fixedness, say). A head
is labelled from all shards so far by a hand-written interval (mean +- 2
standard errors against a threshold of 0.5): "fixed" above, "varying" below,
"cannot tell" across it. Heads far from the threshold settle after a few
shards; a head on the threshold, or labels that keep flipping, run to the
ceiling.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.settling import LabelWatch, average_until_settled
from attnlab.course.verdicts import UNSURE as CANNOT_TELL

THRESHOLD = 0.5


def interval_labels(shards: list[np.ndarray]) -> np.ndarray:
    """``(H,)`` labels from the shards so far: mean +- 2 standard errors against the threshold."""
    values = np.stack(shards)  # (K, H)
    mean = values.mean(axis=0)
    se = values.std(axis=0, ddof=1) / np.sqrt(len(shards)) if len(shards) > 1 else np.full(mean.shape, np.inf)
    labels = np.full(mean.shape, CANNOT_TELL, dtype=object)
    labels[mean - 2 * se >= THRESHOLD] = "fixed"
    labels[mean + 2 * se < THRESHOLD] = "varying"
    return labels


def stream(means, n: int, noise: float = 0.02, seed: int = 0):
    """``n`` shards, each one number per head scattered by ``noise`` around ``means``; counts what was read."""
    rng = np.random.default_rng(seed)
    stream.read = 0
    for _ in range(n):
        stream.read += 1
        yield np.asarray(means, dtype=float) + rng.normal(0, noise, len(means))


def test_a_stream_that_settles_early_stops_early():
    run = average_until_settled(stream([0.9, 0.1, 0.8, 0.2], 100), interval_labels, unsure=CANNOT_TELL)
    # shard 1: all "cannot tell" (no interval yet); shard 2: decided; shards 3 and 4: unchanged -> stop
    assert run.settled and run.n_shards == 4 and stream.read == 4  # the rest of the stream is never read
    assert list(run.labels) == ["fixed", "varying", "fixed", "varying"]
    assert run.watch.changes == [-1, 4, 0, 0]


def test_a_stream_that_keeps_flipping_runs_to_the_ceiling():
    flips = (np.array(["fixed", "varying"] if k % 2 else ["varying", "fixed"], dtype=object) for k in range(30))
    run = average_until_settled(flips, lambda taken: taken[-1], unsure=CANNOT_TELL)
    assert not run.settled and run.n_shards == 30
    assert run.watch.changes[1:] == [2] * 29


def test_a_head_on_the_threshold_stays_cannot_tell_and_runs_to_the_ceiling():
    run = average_until_settled(stream([0.9, 0.5], 40, noise=0.2), interval_labels, unsure=CANNOT_TELL)
    assert not run.settled and run.n_shards == 40 and run.labels[1] == CANNOT_TELL
    assert run.labels[0] == "fixed"


def test_a_late_change_restarts_the_count():
    labels = ["a", "a", "b", "b", "b", "b", "b", "b"]  # one head; "a" holds one quiet shard, then it changes
    run = average_until_settled(iter(labels), lambda taken: np.array([taken[-1]], dtype=object), patience=2,
                                unsure=CANNOT_TELL)
    assert run.settled and run.n_shards == 5 and run.watch.changes == [-1, 0, 1, 0, 0]
    patient = average_until_settled(iter(labels), lambda taken: np.array([taken[-1]], dtype=object), patience=3, unsure=CANNOT_TELL)
    assert patient.settled and patient.n_shards == 6


def test_labelling_starts_after_start_shards():
    calls = []

    def labels_of(taken):
        calls.append(len(taken))
        return interval_labels(taken)

    run = average_until_settled(stream([0.9, 0.1], 100), labels_of, start=8, unsure=CANNOT_TELL)
    assert calls[0] == 8 and run.first_labelled == 8 and run.settled and run.n_shards == 10
    short = average_until_settled(stream([0.9, 0.1], 5), labels_of, start=8, unsure=CANNOT_TELL)  # fewer shards than start
    assert not short.settled and short.n_shards == 5 and short.labels is None and short.first_labelled == 0


def test_cannot_tell_keeps_the_watch_open_even_when_nothing_changes():
    watch = LabelWatch(unsure=CANNOT_TELL)
    for _ in range(5):
        watch.update(np.array(["fixed", CANNOT_TELL], dtype=object))
    assert not watch.settled and watch.quiet == 0 and watch.changes == [-1, 0, 0, 0, 0]


def test_patience_must_be_positive():
    with pytest.raises(ValueError):
        average_until_settled([], interval_labels, patience=0, unsure=CANNOT_TELL)
