"""Lesson 06's claims: under lexical and syntactic damage most heads keep their
pattern, only a few follow the content, and some heads answer lexical damage only.

The source article damages 王者荣耀怎么玩 three ways, looks at one layer, and
sees most heads unchanged; its head 7 changes with lexical and syntactic
damage, its head 9 with lexical damage only. Decided here from a
:class:`attnlab.analysis.compare.PerturbationStudy` over many queries:

* :func:`changing_heads` -- the heads whose map changes clearly under one kind;
* :func:`verdict_few_heads_change` -- most heads keep their pattern;
* :func:`verdict_lexical_only_heads_exist` -- some heads change with lexical
  damage and clearly not with syntactic damage (the general form of the
  article's head 9);
* :func:`verdict_article_heads` -- the article's heads 7 and 9 themselves,
  only for the article's model (head numbers name other heads elsewhere);
* :func:`verdict_lexical_beyond_displacement` -- some heads change more under
  lexical than under syntactic damage *at equal token displacement*
  (:func:`attnlab.analysis.compare.displacement_control`), so the difference
  is not just how far the tokens moved.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.compare import FOLLOWER_MARGIN, DisplacementControl, PerturbationStudy
from attnlab.core.checks import check_index
from attnlab.course.verdicts import ClaimVerdict

#: A head "changes clearly" when the lower end of its position-space sensitivity
#: interval exceeds this (a mean row Jensen-Shannon divergence of 0.1 ln 2); it
#: clearly does not change when the upper end is below it.
CHANGE_THRESHOLD = 0.1
#: "Only a few": every share of changing or content-following heads is at most this ...
FEW = 0.25
#: ... and the claim does not hold when one of them is above this.
MANY = 0.5
#: Thresholds tried by the lesson's sensitivity table.
THRESHOLD_GRID = (0.05, 0.1, 0.15, 0.2, 0.3)
FEW_GRID = (0.15, 0.25, 0.35)
#: At equal displacement, lexical damage must change a head by this much more than
#: syntactic damage (the whole interval of the gap above it).
GAP_MARGIN = 0.05

#: The source article's heads (0-based) in the layer it shows: its head 7 changes
#: with lexical and syntactic damage, its head 9 with lexical damage only.
ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC = 6
ARTICLE_HEAD_LEXICAL_ONLY = 8
ARTICLE_HEADS = (ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC, ARTICLE_HEAD_LEXICAL_ONLY)
#: Head numbers only name the same heads in the article's model.
ARTICLE_MODEL = "bert-base-chinese"

CLAIM_FEW_CHANGE = "most heads keep their pattern under lexical/syntactic damage; only a few follow the content"
CLAIM_LEXICAL_ONLY = "some heads change with lexical damage but not with syntactic damage"
CLAIM_ARTICLE_HEADS = ("in the article's layer, head 7 changes with lexical and syntactic damage, "
                       "head 9 with lexical damage only")
CLAIM_BEYOND_DISPLACEMENT = ("some heads change more under lexical than under syntactic damage "
                             "at equal token displacement")


def changing_heads(study: PerturbationStudy, kind: str, *, threshold: float = CHANGE_THRESHOLD,
                   space: str = "position", **boot) -> np.ndarray:
    """``[L, H]`` bool: heads whose map changes clearly under ``kind``
    (the whole sensitivity interval lies above ``threshold``)."""
    return np.asarray(study.sensitivity(kind, space, **boot).above(threshold))


def verdict_few_heads_change(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD, few: float = FEW,
                             many: float = MANY, margin: float = FOLLOWER_MARGIN, **boot) -> ClaimVerdict:
    """Holds when the share of heads that change clearly under lexical damage, the share
    under syntactic damage (:func:`changing_heads`) and the share of content-followers
    (:meth:`~attnlab.analysis.compare.PerturbationStudy.followers` under ``"both"``) are
    each at most ``few``; does not hold when one of them is above ``many``;
    cannot tell in between."""
    kinds = [k for k in ("lexical", "syntactic") if k in study.kinds]
    if not kinds:
        return ClaimVerdict.missing(CLAIM_FEW_CHANGE, f"no lexical or syntactic damage was run (have {study.kinds})")
    changing = {k: float(changing_heads(study, k, threshold=threshold, **boot).mean()) for k in kinds}
    follow = study.follower_shares("both" if "both" in study.kinds else kinds[-1], margin, **boot)
    worst = max([*changing.values(), follow["content"]])
    return ClaimVerdict.decide(
        CLAIM_FEW_CHANGE, holds=worst <= few, fails=worst > many,
        **{f"share_changing_{k}": v for k, v in changing.items()},
        share_content_followers=follow["content"], share_position_followers=follow["position"],
        threshold=threshold, few=few, many=many, queries=study.n_queries,
    )


def lexical_only_heads(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD, space: str = "position",
                       **boot) -> tuple[np.ndarray, np.ndarray]:
    """``(clear, possible)``, each ``[L, H]`` bool.

    ``clear``: the lexical-change interval lies above ``threshold`` and the
    syntactic-change interval below it. ``possible``: the data do not rule it
    out (lexical upper end above, syntactic lower end below the threshold).
    """
    lex = study.sensitivity("lexical", space, **boot)
    syn = study.sensitivity("syntactic", space, **boot)
    clear = np.asarray(lex.above(threshold)) & np.asarray(syn.below(threshold))
    possible = (np.asarray(lex.high) > threshold) & (np.asarray(syn.low) < threshold)
    return clear, possible


def verdict_lexical_only_heads_exist(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD,
                                     space: str = "position", **boot) -> ClaimVerdict:
    """Holds when at least one head is clearly lexical-only (:func:`lexical_only_heads`);
    does not hold when no head can be (every head either changes clearly under
    syntactic damage or clearly not under lexical damage); cannot tell otherwise."""
    missing = [k for k in ("lexical", "syntactic") if k not in study.kinds]
    if missing:
        return ClaimVerdict.missing(CLAIM_LEXICAL_ONLY, f"{' and '.join(missing)} damage was not run")
    clear, possible = lexical_only_heads(study, threshold=threshold, space=space, **boot)
    shown = [f"L{l + 1} H{h + 1}" for l, h in np.argwhere(clear)[:8]]
    return ClaimVerdict.decide(
        CLAIM_LEXICAL_ONLY, holds=bool(clear.any()), fails=not possible.any(),
        clear_heads=int(clear.sum()), possible_heads=int(possible.sum()), heads=int(clear.size),
        first_clear=", ".join(shown), threshold=threshold, space=space, queries=study.n_queries,
    )


def is_article_model(name: str) -> bool:
    """True for the article's model (a local copy or a hub path ending in its name)."""
    return name.rstrip("/").split("/")[-1].split(" ")[0] == ARTICLE_MODEL


def verdict_article_heads(study: PerturbationStudy, layer: int, *, threshold: float = CHANGE_THRESHOLD,
                          **boot) -> ClaimVerdict:
    """The article's heads 7 and 9 (1-based) of ``layer`` in position space.

    Holds when head 7 changes clearly under lexical and under syntactic damage
    and head 9 clearly under lexical damage and clearly not under syntactic
    damage; does not hold when one of these is clearly the other way; cannot
    tell otherwise. Not applicable (cannot tell) for any model but
    :data:`ARTICLE_MODEL`: head numbers are specific to it.
    """
    if not is_article_model(study.model_name):
        return ClaimVerdict.missing(
            CLAIM_ARTICLE_HEADS, f"not applicable: head numbers name the article's heads only in {ARTICLE_MODEL}, "
                                 f"this run is on {study.model_name or 'an unnamed model'}")
    missing = [k for k in ("lexical", "syntactic") if k not in study.kinds]
    if missing:
        return ClaimVerdict.missing(CLAIM_ARTICLE_HEADS, f"{' and '.join(missing)} damage was not run")
    lex, syn = study.sensitivity("lexical", **boot), study.sensitivity("syntactic", **boot)
    layer = check_index(layer, np.shape(lex.estimate)[0], "layer")
    both, lex_only = ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC, ARTICLE_HEAD_LEXICAL_ONLY
    low = {k: np.asarray(iv.low)[layer] for k, iv in (("lex", lex), ("syn", syn))}  # (H,) each
    high = {k: np.asarray(iv.high)[layer] for k, iv in (("lex", lex), ("syn", syn))}
    holds = (low["lex"][both] > threshold and low["syn"][both] > threshold
             and low["lex"][lex_only] > threshold and high["syn"][lex_only] < threshold)
    fails = (high["lex"][both] < threshold or high["syn"][both] < threshold
             or high["lex"][lex_only] < threshold or low["syn"][lex_only] > threshold)
    est = {k: np.asarray(iv.estimate)[layer] for k, iv in (("lex", lex), ("syn", syn))}
    return ClaimVerdict.decide(
        CLAIM_ARTICLE_HEADS, holds=holds, fails=fails, layer=layer + 1,
        head7_lexical=float(est["lex"][both]), head7_syntactic=float(est["syn"][both]),
        head9_lexical=float(est["lex"][lex_only]), head9_syntactic=float(est["syn"][lex_only]),
        threshold=threshold, queries=study.n_queries,
    )


def verdict_lexical_beyond_displacement(control: DisplacementControl, *, margin: float = GAP_MARGIN) -> ClaimVerdict:
    """Holds when at least one head's lexical-minus-syntactic gap at equal displacement
    has its whole interval above ``margin``; does not hold when every head's interval
    lies below ``margin``; cannot tell otherwise.

    Args:
        control: from :func:`attnlab.analysis.compare.displacement_control`
            (``first="lexical"``, ``second="syntactic"``).
    """
    if control.kinds != ("lexical", "syntactic"):
        return ClaimVerdict.missing(CLAIM_BEYOND_DISPLACEMENT,
                                    f"the control compares {control.kinds}, not ('lexical', 'syntactic')")
    gap = control.gap
    above = np.asarray(gap.above(margin))
    below = np.asarray(gap.below(margin))
    return ClaimVerdict.decide(
        CLAIM_BEYOND_DISPLACEMENT, holds=bool(above.any()), fails=bool(below.all()),
        heads_above=int(above.sum()), heads_below=int(below.sum()), heads=int(above.size),
        largest_gap=float(np.nanmax(gap.estimate)), margin=margin,
        mean_displacement_lexical=control.mean_displacement["lexical"],
        mean_displacement_syntactic=control.mean_displacement["syntactic"],
        queries=control.n_queries,
    )
