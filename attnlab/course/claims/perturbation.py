"""Lesson 06's claims: under lexical and syntactic damage most heads keep their
pattern, only a few follow the content, and some heads answer lexical damage only.

The source article damages 王者荣耀怎么玩 three ways, looks at one layer, and
sees most heads unchanged; its head 7 changes with lexical and syntactic
damage, its head 9 with lexical damage only. Decided here from a
:class:`attnlab.analysis.compare.PerturbationStudy` over many queries:

* :func:`change_labels` -- every head "changes", "barely changes" or "cannot
  tell" under one kind, from its interval over queries against the threshold;
* :func:`changing_share` -- the share of changing heads, with an interval from
  resampling the queries (each resample labels every head anew), never the heads;
* :func:`verdict_few_heads_change` -- most heads keep their pattern, decided on
  those share intervals;
* :func:`verdict_lexical_only_heads_exist` -- some heads change with lexical
  damage and clearly not with syntactic damage (the general form of the
  article's head 9);
* :func:`verdict_article_heads` -- the article's heads 7 and 9 themselves,
  only for the article's model (head numbers name other heads elsewhere);
* :func:`verdict_layer_pattern` -- the same pattern with any two heads of one
  layer (one changes with both kinds, another with lexical damage only), on
  every model;
  both are decided in two readings of "the article's layer"
  (:func:`article_verdicts`): the model's last layer, which the article's text
  names, and the layer chosen from the data;
* :func:`verdict_lexical_beyond_displacement` -- some heads change more under
  lexical than under syntactic damage *at equal token displacement*
  (:func:`attnlab.analysis.compare.displacement_control`), so the difference
  is not just how far the tokens moved.

**Some head among many.** A verdict that holds when *some* head passes a test
looks at every head: with 144 heads and a 95% interval each, about 7 intervals
lie wholly on the wrong side of any line by chance. Every "some head" verdict
here (lexical-only heads, the layer pattern, the displacement gap) therefore
uses intervals that are 95% *simultaneous* over the heads it searches
(:func:`attnlab.analysis.stats.simultaneous_from_samples`, resampling the
queries), and says over how many. The article's heads 7 and 9 are named in
advance, so their own intervals are enough.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.compare import FOLLOWER_MARGIN, DisplacementControl, PerturbationStudy, kind_word  # noqa: F401 (lessons call claims.kind_word)
from attnlab.analysis.stats import (
    ABOVE,
    BELOW,
    Interval,
    bootstrap_mean,
    bootstrap_share_above,
    side_of,
    too_few_units,
)
from attnlab.core.checks import check_index
from attnlab.core.language import N_, _
from attnlab.course.verdicts import UNSURE, ClaimVerdict

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

#: The per-head words of :func:`change_labels`.
CHANGES, BARELY_CHANGES, CANNOT_TELL = "changes", "barely changes", UNSURE
HEAD_WORDS = (CHANGES, BARELY_CHANGES, CANNOT_TELL)
#: The two readings of "the article's layer": the model's last layer (the article's text), or the layer
#: :meth:`attnlab.analysis.compare.ExampleMaps.chosen_layer` picks from the data.
READINGS = ("last", "chosen")


CLAIM_FEW_CHANGE = "most heads keep their pattern under lexical/syntactic damage; only a few follow the content"
CLAIM_LEXICAL_ONLY = "some heads change with lexical damage but not with syntactic damage"
# claims picked by reading (last or chosen layer) are marked with N_ so the catalogue has them
CLAIM_ARTICLE_HEADS = N_("in the layer chosen from the data, head 7 changes with lexical and syntactic damage, "
                          "head 9 with lexical damage only")
CLAIM_ARTICLE_HEADS_LAST = N_("in the model's last layer, head 7 changes with lexical and syntactic damage, "
                               "head 9 with lexical damage only")
CLAIM_LAYER_PATTERN = N_("in the layer chosen from the data, one head changes with lexical and syntactic damage "
                          "and another with lexical damage only")
CLAIM_LAYER_PATTERN_LAST = N_("in the model's last layer, one head changes with lexical and syntactic damage "
                               "and another with lexical damage only")
CLAIM_BEYOND_DISPLACEMENT = ("some heads change more under lexical than under syntactic damage "
                             "at equal token displacement")


def changing_heads(study: PerturbationStudy, kind: str, *, threshold: float = CHANGE_THRESHOLD,
                   space: str = "position", **boot) -> np.ndarray:
    """``[L, H]`` bool: heads whose map changes clearly under ``kind``
    (the whole sensitivity interval lies above ``threshold``)."""
    return np.asarray(study.sensitivity(kind, space, **boot).above(threshold))


def change_labels(study: PerturbationStudy, kind: str, *, threshold: float = CHANGE_THRESHOLD,
                  space: str = "position", **boot) -> np.ndarray:
    """``[L, H]`` strings: :data:`CHANGES` where the head's sensitivity interval (over
    queries) lies above ``threshold``, :data:`BARELY_CHANGES` where it lies below,
    :data:`CANNOT_TELL` where it straddles it."""
    side = np.asarray(side_of(study.sensitivity(kind, space, **boot), threshold))  # (L, H)
    return np.where(side == ABOVE, CHANGES, np.where(side == BELOW, BARELY_CHANGES, CANNOT_TELL)).astype(object)


def word_counts(labels: np.ndarray, words=HEAD_WORDS) -> dict[str, int]:
    """How many heads carry each word (every word present, possibly 0)."""
    return {w: int((np.asarray(labels) == w).sum()) for w in words}


def changing_share(study: PerturbationStudy, kind: str, *, threshold: float = CHANGE_THRESHOLD,
                   space: str = "position", **boot) -> Interval:
    """Share of heads whose mean change exceeds ``threshold``, with an interval from
    resampling the queries (every resample labels each head anew)."""
    return bootstrap_share_above(1.0 - study.values(kind, space), threshold, **boot)


def content_share(study: PerturbationStudy, kind: str = "both", *, margin: float = FOLLOWER_MARGIN,
                  **boot) -> Interval:
    """Share of content-followers (token-space similarity above position-space
    similarity by more than ``margin``), with an interval from resampling the queries."""
    return bootstrap_share_above(study.values(kind, "token") - study.values(kind, "position"), margin, **boot)


def verdict_few_heads_change(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD, few: float = FEW,
                             many: float = MANY, margin: float = FOLLOWER_MARGIN, **boot) -> ClaimVerdict:
    """Holds when the share of heads that change under lexical damage, the share under
    syntactic damage (:func:`changing_share`) and the share of content-followers
    (:func:`content_share` under ``"both"``) each have their whole interval (over
    queries) at most ``few``; does not hold when one of them lies wholly above
    ``many``; cannot tell in between, and whenever the intervals rest on fewer
    queries than :data:`attnlab.analysis.stats.MIN_UNITS`.

    The numbers also count the heads per word of :func:`change_labels` (how many
    "cannot tell"), and, for comparison, the share of heads that change clearly."""
    kinds = [k for k in ("lexical", "syntactic") if k in study.kinds]
    if not kinds:
        return ClaimVerdict.missing(CLAIM_FEW_CHANGE, N_("no lexical or syntactic damage was run (have {kinds})").format(kinds=study.kinds))
    shares = {k: changing_share(study, k, threshold=threshold, **boot) for k in kinds}
    shares["content"] = content_share(study, "both" if "both" in study.kinds else kinds[-1], margin=margin, **boot)
    counts = {k: word_counts(change_labels(study, k, threshold=threshold, **boot)) for k in kinds}
    why = next((w for w in (too_few_units(iv) for iv in shares.values()) if w), None)
    numbers = {}
    for k, iv in shares.items():
        name = "content_followers" if k == "content" else f"changing_{k}"
        numbers.update({f"share_{name}": float(iv.estimate), f"share_{name}_low": float(iv.low),
                        f"share_{name}_high": float(iv.high)})
    for k, c in counts.items():
        numbers.update({f"heads_changing_{k}": c[CHANGES], f"heads_barely_changing_{k}": c[BARELY_CHANGES],
                        f"heads_cannot_tell_{k}": c[CANNOT_TELL]})
    if why:
        numbers["too_few_units"] = why
    return ClaimVerdict.decide(
        CLAIM_FEW_CHANGE,
        holds=why is None and all(float(iv.high) <= few for iv in shares.values()),
        fails=why is None and any(float(iv.low) > many for iv in shares.values()),
        **numbers, threshold=threshold, few=few, many=many, queries=study.n_queries,
    )


def simultaneous_note(family: int) -> str:
    """How the intervals of a "some head" verdict were made, as stored with its numbers."""
    return N_("95% simultaneous over {n} heads").format(n=family)


def joint_note(family: int) -> str:
    """The same for intervals simultaneous over both kinds of damage of every head searched."""
    return N_("95% simultaneous over {n} intervals (both kinds of damage, every head)").format(n=family)


def joint_sensitivity(study: PerturbationStudy, space: str = "position", layer: int | None = None,
                      **boot) -> tuple[Interval, Interval]:
    """``(lexical, syntactic)`` sensitivities (``[L, H]``, or ``(H,)`` for one ``layer``) with
    intervals 95% simultaneous over **both kinds' heads together** (one max-statistic over
    ``2 x L x H`` columns, resampling the queries both kinds ran on): a head is "clear" only
    when both its intervals are right, so the two kinds are one family, not two."""
    joint = np.stack([1.0 - study.values("lexical", space), 1.0 - study.values("syntactic", space)],
                     axis=1)  # (N, 2, L, H)
    if layer is not None:
        joint = joint[:, :, check_index(layer, joint.shape[2], "layer")]  # (N, 2, H)
    iv = bootstrap_mean(joint, simultaneous=True, **boot)  # (2, ...) arrays, family = every varying column
    return tuple(Interval(np.asarray(iv.estimate)[k], np.asarray(iv.low)[k], np.asarray(iv.high)[k], iv.level,
                          iv.n, iv.family) for k in range(2))


def lexical_only_heads(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD, space: str = "position",
                       simultaneous: bool = True, **boot) -> tuple[np.ndarray, np.ndarray]:
    """``(clear, possible)``, each ``[L, H]`` bool.

    ``clear``: the lexical-change interval lies above ``threshold`` and the
    syntactic-change interval below it. ``possible``: the data do not rule it
    out (lexical upper end above, syntactic lower end below the threshold).
    ``simultaneous`` (the default): the intervals hold for all heads **and both kinds**
    together (:func:`joint_sensitivity`), so that "some head is clear" is not just the
    luckiest of many heads; False gives each head its own 95% interval (uncorrected, for
    comparison).
    """
    if simultaneous:
        lex, syn = joint_sensitivity(study, space, **boot)
    else:
        lex, syn = study.sensitivity("lexical", space, **boot), study.sensitivity("syntactic", space, **boot)
    clear = np.asarray(lex.above(threshold)) & np.asarray(syn.below(threshold))
    possible = (np.asarray(lex.high) > threshold) & (np.asarray(syn.low) < threshold)
    return clear, possible


def verdict_lexical_only_heads_exist(study: PerturbationStudy, *, threshold: float = CHANGE_THRESHOLD,
                                     space: str = "position", **boot) -> ClaimVerdict:
    """Holds when at least one head is clearly lexical-only (:func:`lexical_only_heads`,
    intervals 95% simultaneous over all heads); does not hold when no head can be
    (every head either changes clearly under syntactic damage or clearly not under
    lexical damage); cannot tell otherwise. The numbers give, for comparison, how many
    heads each head's own (uncorrected) interval would call clear."""
    missing = [k for k in ("lexical", "syntactic") if k not in study.kinds]
    if missing:
        return ClaimVerdict.missing(CLAIM_LEXICAL_ONLY, _not_run(missing))
    clear, possible = lexical_only_heads(study, threshold=threshold, space=space, **boot)
    uncorrected, _possible = lexical_only_heads(study, threshold=threshold, space=space, simultaneous=False, **boot)
    shown = [f"L{l + 1} H{h + 1}" for l, h in np.argwhere(clear)[:8]]
    return ClaimVerdict.decide(
        CLAIM_LEXICAL_ONLY, holds=bool(clear.any()), fails=not possible.any(),
        clear_heads=int(clear.sum()), possible_heads=int(possible.sum()), heads=int(clear.size),
        interval=joint_note(2 * int(clear.size)), clear_heads_uncorrected=int(uncorrected.sum()),
        first_clear=", ".join(shown), threshold=threshold, space=space, queries=study.n_queries,
    )


def _not_run(missing: list[str]) -> str:
    """Why a claim that needs both kinds of damage cannot be decided (stored in English, shown translated)."""
    reasons = {("lexical",): N_("lexical damage was not run"), ("syntactic",): N_("syntactic damage was not run"),
               ("lexical", "syntactic"): N_("lexical and syntactic damage was not run")}
    return reasons[tuple(missing)]


def is_article_model(name: str) -> bool:
    """True for the article's model (a local copy or a hub path ending in its name)."""
    return name.rstrip("/").split("/")[-1].split(" ")[0] == ARTICLE_MODEL


def _layer_intervals(study: PerturbationStudy, layer: int, **boot) -> tuple[int, dict[str, Interval]]:
    """The checked layer index and ``{"lex": ..., "syn": ...}`` sensitivity intervals (position space)."""
    lex, syn = study.sensitivity("lexical", **boot), study.sensitivity("syntactic", **boot)
    return check_index(layer, np.shape(lex.estimate)[0], "layer"), {"lex": lex, "syn": syn}


def layer_sensitivity(study: PerturbationStudy, kind: str, layer: int, *, space: str = "position",
                      **boot) -> Interval:
    """``(H,)`` sensitivity of the heads of one ``layer`` to ``kind``, with intervals 95%
    simultaneous over those H heads (resampling the queries): the family a verdict about
    "some head of this layer" searches."""
    values = 1.0 - study.values(kind, space)  # (N, L, H)
    layer = check_index(layer, values.shape[1], "layer")
    return bootstrap_mean(values[:, layer, :], simultaneous=True, **boot)


def verdict_article_heads(study: PerturbationStudy, layer: int, *, threshold: float = CHANGE_THRESHOLD,
                          reading: str = "chosen", **boot) -> ClaimVerdict:
    """The article's heads 7 and 9 (1-based) of ``layer`` in position space.

    Holds when head 7 changes clearly under lexical and under syntactic damage
    and head 9 clearly under lexical damage and clearly not under syntactic
    damage; does not hold when one of these is clearly the other way; cannot
    tell otherwise. Not applicable (cannot tell) for any model but
    :data:`ARTICLE_MODEL`: head numbers are specific to it.

    Args:
        reading: which reading of "the article's layer" ``layer`` is
            (:data:`READINGS`); it names the claim.
    """
    claim = _claim_for(reading, CLAIM_ARTICLE_HEADS, CLAIM_ARTICLE_HEADS_LAST)
    if not is_article_model(study.model_name):
        return ClaimVerdict.missing(
            claim, N_("not applicable: head numbers name the article's heads only in {article}, "
                      "this run is on {model}").format(article=ARTICLE_MODEL,
                                                       model=study.model_name or "an unnamed model"))
    missing = [k for k in ("lexical", "syntactic") if k not in study.kinds]
    if missing:
        return ClaimVerdict.missing(claim, _not_run(missing))
    layer, ivs = _layer_intervals(study, layer, **boot)
    both, lex_only = ARTICLE_HEAD_LEXICAL_AND_SYNTACTIC, ARTICLE_HEAD_LEXICAL_ONLY
    low = {k: np.asarray(iv.low)[layer] for k, iv in ivs.items()}  # (H,) each
    high = {k: np.asarray(iv.high)[layer] for k, iv in ivs.items()}
    holds = (low["lex"][both] > threshold and low["syn"][both] > threshold
             and low["lex"][lex_only] > threshold and high["syn"][lex_only] < threshold)
    fails = (high["lex"][both] < threshold or high["syn"][both] < threshold
             or high["lex"][lex_only] < threshold or low["syn"][lex_only] > threshold)
    est = {k: np.asarray(iv.estimate)[layer] for k, iv in ivs.items()}
    return ClaimVerdict.decide(
        claim, holds=holds, fails=fails, layer=layer + 1, reading=reading,
        head7_lexical=float(est["lex"][both]), head7_syntactic=float(est["syn"][both]),
        head9_lexical=float(est["lex"][lex_only]), head9_syntactic=float(est["syn"][lex_only]),
        threshold=threshold, queries=study.n_queries,
    )


def _claim_for(reading: str, chosen: str, last: str) -> str:
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    return chosen if reading == "chosen" else last


def verdict_layer_pattern(study: PerturbationStudy, layer: int, *, threshold: float = CHANGE_THRESHOLD,
                          reading: str = "chosen", **boot) -> ClaimVerdict:
    """The article's pattern with any heads of ``layer``, on any model.

    Holds when the layer has a head that changes clearly under lexical *and*
    syntactic damage and another head that changes clearly under lexical damage
    and clearly not under syntactic damage (intervals over queries against
    ``threshold``); does not hold when no head of the layer can be one of the two
    (for every head the data rule it out); cannot tell otherwise, and when the
    intervals rest on fewer queries than :data:`attnlab.analysis.stats.MIN_UNITS`.
    The intervals are 95% simultaneous over the layer's heads under both kinds of damage
    together (:func:`joint_sensitivity`): the verdict searches all of them for the two roles,
    and each role needs both kinds' intervals.
    """
    claim = _claim_for(reading, CLAIM_LAYER_PATTERN, CLAIM_LAYER_PATTERN_LAST)
    missing = [k for k in ("lexical", "syntactic") if k not in study.kinds]
    if missing:
        return ClaimVerdict.missing(claim, _not_run(missing))
    layer = check_index(layer, study.values("lexical").shape[1], "layer")
    lex_iv, syn_iv = joint_sensitivity(study, layer=layer, **boot)  # one family: both kinds of the layer's heads
    ivs = {"lex": lex_iv, "syn": syn_iv}
    lex = np.asarray(side_of(ivs["lex"], threshold))  # (H,)
    syn = np.asarray(side_of(ivs["syn"], threshold))
    both_clear, both_possible = (lex == ABOVE) & (syn == ABOVE), (lex != BELOW) & (syn != BELOW)
    only_clear, only_possible = (lex == ABOVE) & (syn == BELOW), (lex != BELOW) & (syn != ABOVE)
    two_heads = any(a != b for a in np.flatnonzero(both_clear) for b in np.flatnonzero(only_clear))
    why = too_few_units(ivs["lex"])
    numbers = {"too_few_units": why} if why else {}
    return ClaimVerdict.decide(
        claim, holds=why is None and two_heads, fails=why is None and not (both_possible.any() and only_possible.any()),
        **numbers, layer=layer + 1, reading=reading,
        heads_lexical_and_syntactic=int(both_clear.sum()), heads_lexical_only=int(only_clear.sum()),
        heads_possibly_lexical_and_syntactic=int(both_possible.sum()),
        heads_possibly_lexical_only=int(only_possible.sum()),
        interval=joint_note(2 * int(lex.size)), threshold=threshold, queries=study.n_queries,
    )


def reading_layers(study: PerturbationStudy, chosen_layer: int) -> dict[str, int]:
    """``{"last": the model's last layer, "chosen": chosen_layer}`` (0-based)."""
    n_layers = np.shape(next(iter(study.position.values())))[1]
    return {"last": n_layers - 1, "chosen": check_index(chosen_layer, n_layers, "layer")}


def article_verdicts(study: PerturbationStudy, chosen_layer: int, *, threshold: float = CHANGE_THRESHOLD,
                     **boot) -> dict[str, ClaimVerdict]:
    """The article's heads and its pattern in both readings of its layer:
    ``"heads_last"``, ``"heads_chosen"``, ``"pattern_last"``, ``"pattern_chosen"``."""
    out = {}
    for reading, layer in reading_layers(study, chosen_layer).items():
        out[f"heads_{reading}"] = verdict_article_heads(study, layer, threshold=threshold, reading=reading, **boot)
        out[f"pattern_{reading}"] = verdict_layer_pattern(study, layer, threshold=threshold, reading=reading, **boot)
    return out


def verdict_lexical_beyond_displacement(control: DisplacementControl, *, margin: float = GAP_MARGIN) -> ClaimVerdict:
    """Holds when at least one head's lexical-minus-syntactic gap at equal displacement
    has its whole interval above ``margin``; does not hold when every head's interval
    lies below ``margin``; cannot tell otherwise. The intervals are 95% simultaneous over
    the heads (:attr:`~attnlab.analysis.compare.DisplacementControl.gap_simultaneous`);
    how many heads each head's own interval would put above is reported beside.

    Args:
        control: from :func:`attnlab.analysis.compare.displacement_control`
            (``first="lexical"``, ``second="syntactic"``).
    """
    if control.kinds != ("lexical", "syntactic"):
        return ClaimVerdict.missing(CLAIM_BEYOND_DISPLACEMENT,
                                    N_("the control compares {kinds}, not ('lexical', 'syntactic')").format(
                                        kinds=control.kinds))
    gap = control.gap_simultaneous
    above = np.asarray(gap.above(margin))
    below = np.asarray(gap.below(margin))
    return ClaimVerdict.decide(
        CLAIM_BEYOND_DISPLACEMENT, holds=bool(above.any()), fails=bool(below.all()),
        heads_above=int(above.sum()), heads_below=int(below.sum()), heads=int(above.size),
        interval=simultaneous_note(int(gap.family)),
        heads_above_uncorrected=int(np.asarray(control.gap.above(margin)).sum()),
        largest_gap=float(np.nanmax(gap.estimate)), margin=margin,
        mean_displacement_lexical=control.mean_displacement["lexical"],
        mean_displacement_syntactic=control.mean_displacement["syntactic"],
        queries=control.n_queries,
    )
