"""Lesson 06's per-head perturbation numbers, for the lessons that reuse them.

Lesson 07 (position embeddings) and lesson 11 (pruning) compare their own
per-head measurements with how much each head's map changed when lesson 06
broke or reordered the words. :func:`perturbation_maps` is the one place that
says "use lesson 06's saved result for this model and run mode; else measure
a smaller stand-in here". The stand-in is not saved under lesson 06's name, so
it never passes for the real lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attnlab.analysis.compare import SPACES, PerturbationStudy, perturbation_study
from attnlab.analysis.perturb import KINDS
from attnlab.core.checks import check_positive_int
from attnlab.core.language import N_
from attnlab.core.models import LoadedModel
from attnlab.course import results
from attnlab.course.lesson_results import PerturbationResult
from attnlab.data.corpus import queries

# where the maps came from: stored in English with lesson 11's results, shown through ``translated``
SAVED_SOURCE = N_("lesson 06's saved results ({n} queries)")
MEASURED_SOURCE = N_("measured here on {n} queries, because lesson 06 has not been run for this model and mode "
                     "(run it first for the full comparison)")


@dataclass
class PerturbationMaps:
    """How each head's map moves under perturbation; arrays are ``(L, H)``.

    Attributes:
        sensitivity: ``"<kind>_<space>"`` -> mean of ``1 - similarity`` over queries
            (0 = the map does not change), e.g. ``"lexical_position"``.
        unchanged: mean position-space similarity over the perturbation kinds.
        follower_gap: position minus token similarity under ``"both"`` (> 0: the head
            follows positions; < 0: it follows the tokens); None when ``"both"`` was not run.
        n_queries: queries behind the numbers.
        source: one line saying where the numbers came from.
    """

    sensitivity: dict[str, np.ndarray]
    unchanged: np.ndarray
    follower_gap: np.ndarray | None
    n_queries: int
    source: str


def from_saved(saved: PerturbationResult) -> PerturbationMaps:
    """The maps of lesson 06's saved result."""
    return PerturbationMaps(
        sensitivity={k: np.asarray(v, dtype=float) for k, v in saved.sensitivity.items()},
        unchanged=np.asarray(saved.unchanged, dtype=float),
        follower_gap=None if saved.follower_gap is None else np.asarray(saved.follower_gap, dtype=float),
        n_queries=saved.n_queries,
        source=SAVED_SOURCE.format(n=saved.n_queries),
    )


def from_study(study: PerturbationStudy, source: str) -> PerturbationMaps:
    """The maps of a fresh :class:`~attnlab.analysis.compare.PerturbationStudy`.

    Means over queries skip the queries whose perturbation was skipped (NaN rows).
    """
    sensitivity = {f"{kind}_{space}": np.nanmean(1.0 - study.values(kind, space), axis=0)  # (L, H)
                   for kind in study.kinds for space in SPACES}
    unchanged = np.mean([np.nanmean(study.values(kind, "position"), axis=0) for kind in study.kinds], axis=0)
    gap = None
    if "both" in study.kinds:
        gap = np.nanmean(study.values("both", "position") - study.values("both", "token"), axis=0)  # (L, H)
    return PerturbationMaps(sensitivity, unchanged, gap, study.n_queries, source)


def perturbation_maps(m: LoadedModel, *, n_queries: int = 30, seed: int = 0,
                      kinds: Sequence[str] = KINDS, progress: bool = False) -> PerturbationMaps:
    """Lesson 06's maps for ``m``: saved when lesson 06 ran for this model and mode
    (and measured every kind in ``kinds``), else measured here on ``n_queries``
    built-in queries (a smaller, cheaper stand-in that is not saved)."""
    n_queries = check_positive_int(n_queries, "n_queries")
    saved = results.load(PerturbationResult.file_name, PerturbationResult, model=m)
    if saved is not None and all(f"{kind}_position" in saved.sensitivity for kind in kinds):
        return from_saved(saved)
    study = perturbation_study(m, queries(m.language, n_queries, seed=seed), kinds=tuple(kinds), seed=seed,
                               progress=progress)
    return from_study(study, MEASURED_SOURCE.format(n=study.n_queries))
