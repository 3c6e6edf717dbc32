"""Lesson 06's claim: under lexical and syntactic damage most heads keep their
pattern, and only a few follow the content.

The source article damages 王者荣耀怎么玩 three ways, looks at one layer, and
sees most heads unchanged; its head 7 changes with lexical and syntactic
damage, its head 9 with lexical damage only. Decided here from a
:class:`attnlab.analysis.compare.PerturbationStudy` over many queries:

* :func:`changing_heads` -- the heads whose map changes clearly under one kind;
* :func:`verdict_few_heads_change` -- the claim itself.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.compare import FOLLOWER_MARGIN, PerturbationStudy
from attnlab.course.verdicts import ClaimVerdict

#: A head "changes clearly" when the lower end of its position-space sensitivity
#: interval exceeds this (a mean row Jensen-Shannon divergence of 0.1 ln 2).
CHANGE_THRESHOLD = 0.1
#: "Only a few": every share of changing or content-following heads is at most this ...
FEW = 0.25
#: ... and the claim does not hold when one of them is above this.
MANY = 0.5

#: The source article's heads (0-based) in the layer it shows: its head 7 changes
#: with lexical and syntactic damage, its head 9 with lexical damage only.
ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC = 6
ARTICLE_HEAD_LEXICAL_ONLY = 8
ARTICLE_HEADS = (ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC, ARTICLE_HEAD_LEXICAL_ONLY)
#: Head numbers only name the same heads in the article's model.
ARTICLE_MODEL = "bert-base-chinese"

CLAIM_FEW_CHANGE = "most heads keep their pattern under lexical/syntactic damage; only a few follow the content"


def changing_heads(study: PerturbationStudy, kind: str, *, threshold: float = CHANGE_THRESHOLD,
                   **boot) -> np.ndarray:
    """``[L, H]`` bool: heads whose position-space map changes clearly under ``kind``
    (the whole sensitivity interval lies above ``threshold``)."""
    return np.asarray(study.sensitivity(kind, "position", **boot).above(threshold))


def verdict_few_heads_change(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD, few: float = FEW,
                             margin: float = FOLLOWER_MARGIN, **boot) -> ClaimVerdict:
    """Holds when the share of heads that change clearly under lexical damage, the share
    under syntactic damage (:func:`changing_heads`) and the share of content-followers
    (:meth:`~attnlab.analysis.compare.PerturbationStudy.followers` under ``"both"``) are
    each at most ``few``; does not hold when one of them is above :data:`MANY`;
    cannot tell in between."""
    kinds = [k for k in ("lexical", "syntactic") if k in study.kinds]
    if not kinds:
        return ClaimVerdict.missing(CLAIM_FEW_CHANGE, f"no lexical or syntactic damage was run (have {study.kinds})")
    changing = {k: float(changing_heads(study, k, threshold=threshold, **boot).mean()) for k in kinds}
    follow = study.follower_shares("both" if "both" in study.kinds else kinds[-1], margin, **boot)
    worst = max([*changing.values(), follow["content"]])
    return ClaimVerdict.decide(
        CLAIM_FEW_CHANGE, holds=worst <= few, fails=worst > MANY,
        **{f"share_changing_{k}": v for k, v in changing.items()},
        share_content_followers=follow["content"], share_position_followers=follow["position"],
        threshold=threshold, few=few, queries=study.n_queries,
    )
