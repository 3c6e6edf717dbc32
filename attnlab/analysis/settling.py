"""Stop averaging when the answer has settled: per-head labels watched shard after shard.

Lesson 08 averages the maps of many queries and labels every head ("fixed",
"varying", "cannot tell", ...) from its interval over query shards. More
queries narrow the intervals, but past some point no label moves any more:
the article's 100,000 queries are a ceiling, not a need. The rule here:

    after each shard, label the heads from all shards so far; the labels have
    **settled** once, for ``patience`` shards running (2 by default), no
    head's label changed from the shard before and no head is "cannot tell".

:func:`average_until_settled` reads shards from any iterable (lazily, e.g.
:func:`attnlab.core.streaming.iter_shards`) until the labels settle or the
shards run out (the ceiling), and says how many it needed. The labelling is
the caller's (``labels_of``), so the rule knows nothing of fixedness: it
watches arrays of words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Iterable, TypeVar

import numpy as np

#: shards running with no change and no "cannot tell" before the labels count as settled
PATIENCE = 2

T = TypeVar("T")


@dataclass
class LabelWatch:
    """Per-head labels seen shard after shard, and whether they have settled.

    Attributes:
        unsure: the label that keeps the watch from settling (the caller's "cannot tell").
        patience: quiet shards running needed to settle.
        history: the labels after each :meth:`update`, each ``(L, H)`` (any shape).
        changes: heads whose label differs from the update before (-1 for the first).
        quiet: the current run of quiet updates (no change from the one before, no ``unsure``).
    """

    unsure: str
    patience: int = PATIENCE
    history: list[np.ndarray] = field(default_factory=list)
    changes: list[int] = field(default_factory=list)
    quiet: int = 0

    def update(self, labels: np.ndarray) -> bool:
        """Add the labels after one more shard; True once the labels have settled."""
        labels = np.asarray(labels, dtype=object)
        previous = self.history[-1] if self.history else None
        if previous is None or previous.shape != labels.shape:
            changed = -1
        else:
            changed = int((previous != labels).sum())
        calm = changed == 0 and not bool((labels == self.unsure).any())
        self.quiet = self.quiet + 1 if calm else 0
        self.history.append(labels.copy())
        self.changes.append(changed)
        return self.settled

    @property
    def settled(self) -> bool:
        return self.quiet >= self.patience


@dataclass
class SettledAverage(Generic[T]):
    """What :func:`average_until_settled` read and why it stopped.

    Attributes:
        shards: the shards read, in order (merge them for the mean).
        settled: True when the labels settled; False when the shards ran out first (the ceiling).
        watch: the labels after each labelled shard.
        first_labelled: how many shards were read when the labels were first computed.
    """

    shards: list[T]
    settled: bool
    watch: LabelWatch
    first_labelled: int

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    @property
    def labels(self) -> np.ndarray | None:
        """The last labels computed (``(L, H)``), or None when no shard was labelled."""
        return self.watch.history[-1] if self.watch.history else None


def average_until_settled(shards: Iterable[T], labels_of: Callable[[list[T]], np.ndarray], *,
                          unsure: str, patience: int = PATIENCE, start: int = 1) -> SettledAverage[T]:
    """Read ``shards`` until the labels have settled (see the module docstring) or the shards run out.

    Args:
        shards: any iterable of shards; it is read lazily and left unread after the stop.
        labels_of: the per-head labels (an array of words) from all shards read so far.
        patience: quiet shards running needed (2: labels unchanged over two more shards).
        unsure: the label that means "cannot tell".
        start: read this many shards before labelling at all (fewer cannot decide anything,
            e.g. ``attnlab.analysis.stats.MIN_UNITS`` shards for an interval).

    Returns:
        A :class:`SettledAverage`; with ``settled`` False it read every shard (the ceiling).
    """
    if patience < 1:
        raise ValueError(f"patience must be at least 1, got {patience}")
    watch = LabelWatch(patience=patience, unsure=unsure)
    taken: list[T] = []
    for shard in shards:
        taken.append(shard)
        if len(taken) >= start and watch.update(labels_of(taken)):
            break
    first = max(1, start) if watch.history else 0
    return SettledAverage(shards=taken, settled=watch.settled, watch=watch, first_labelled=first)
