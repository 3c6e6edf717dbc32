"""A claim about what training produced, held against the same measurement on an untrained twin.

A "holds" about what a model *learned* stands only when a model that learned nothing
(:func:`attnlab.core.twins.untrained_twin`: the weights shuffled within each tensor, the scale kept)
does not give it too. The twin can only take a "holds" away; it never turns a "does not hold" into
anything else. :func:`against_twin` applies that control to one verdict:

* the claim is not about the model under test (5a/5b: lesson 10 trains its own small models):
  the verdict stands, and says so;
* the model **does not show** the claim: it **does not hold**, whatever the twin does; the numbers
  say whether an untrained model does not show it either, or does (then training removed it);
* the model **cannot tell**: it stays **cannot tell**, with the data's own reason;
* the model **holds**: it keeps "holds" only when the model's deciding number minus the twin's clears
  the claim's **floor** toward holding (:data:`direction`: +1 when a larger number is toward
  "holds", -1 when a smaller one is), whatever the twin's own word; otherwise **cannot tell**,
  because an untrained model gives the same or more. Without a twin a "holds" cannot stand either:
  it waits for the twin's measurement.

The direction toward "holds" and whether a claim is about the model are the caller's (lesson 12's rows
take them from the one table of conclusions, :data:`attnlab.course.claims.conclusions.CONCLUSIONS`, through
:func:`attnlab.course.evidence.against_twins`); the floor is the verdict's own
``numbers["floor"]`` (its claim's floor, in the deciding number's units) unless the caller passes one.
The difference's interval is **paired** where it can be: the model and each twin seed measured on the
same texts, resampled the same way, are differenced resample by resample (the texts' own spread, which
both share, counted once); where the resamples cannot be matched (a deciding number read from a saved
interval, runs that stopped at different sizes) the two intervals' noise is added as independent, which
is wider. The twin's verdict, its deciding number and the difference are added to the verdict's numbers, so
every card shows them beside the model's, and every "cannot tell" says why in one line
(:meth:`attnlab.course.verdicts.ClaimVerdict.reason`).
"""

from __future__ import annotations

import math

from attnlab.analysis.stats import Interval, chance_beyond, paired_difference
from attnlab.analysis.stats import difference_interval as difference
from attnlab.core.language import N_
from attnlab.course.cards import TWIN_NUMBER, TWIN_SAYS, TWIN_VERDICT
from attnlab.course.verdicts import BECAUSE, BECAUSE_MISSING, BECAUSE_TWIN, FAILS, HOLDS, UNSURE, ClaimVerdict

DIFFERENCE = N_("model minus untrained twin")
TWIN_NAME = N_("untrained twin")
FLOOR = N_("floor")
NEITHER = N_("an untrained model does not show it either")
REMOVED = N_("an untrained model does: training removed it")
AS_MUCH = N_("an untrained model gives the same or more: the model's number {model} minus the twin's {twin} is "
             "{difference}, which does not clear the floor of {floor} toward holding")
NOT_ABOUT = N_("not about this model: lesson 10 trains its own small models, so no untrained twin applies")
NO_TWIN = N_("not measured: this verdict is not checked against an untrained model")
NO_TWIN_FOR_HOLDS = N_("the untrained twin's measurement (run attnlab report, or lesson 12 with its twin), "
                       "without which a \"holds\" cannot say what training produced")
POWER = N_("chance of holds if the model beat the twin by twice the floor, at this noise")
#: how the difference's interval was taken: the key, then its value when paired and when not
HOW_DIFFERENCED, PAIRED, UNPAIRED = (
    N_("interval of the difference"),
    N_("paired: the model and each twin seed on the same resampled texts, the seeds' spread inside"),
    N_("independent: the two intervals' noise added (their resamples cannot be matched), the seeds' spread inside"))
NO_TWIN_NUMBER = N_("the untrained twin's deciding number for this claim (its run saved none)")


def deciding_interval(verdict: ClaimVerdict) -> Interval | None:
    """The verdict's deciding number and interval (:attr:`ClaimVerdict.decider`), or None when it has none."""
    d = verdict.decider
    if d is None or not all(math.isfinite(x) for x in (d.estimate, d.low, d.high)):
        return None
    return Interval(d.estimate, d.low, d.high, 0.95, 0)


def paired_over_seeds(model: ClaimVerdict, twin: ClaimVerdict, mine: Interval, theirs: Interval) -> Interval | None:
    """Model minus twin on the same resampled texts, over the twin's shuffle seeds: for each seed the
    resample-by-resample difference (:func:`attnlab.analysis.stats.paired_difference`); the estimate is
    the model's minus the seeds' mean (``mine`` and ``theirs``, the deciding numbers), the interval runs
    from the lowest seed's low end to the highest seed's high end, so the seeds' spread is inside it as
    in :func:`pooled_twin`. None when the model or any seed kept no resamples, or drew other texts."""
    if len(model.resampled) != 1 or not twin.resampled:
        return None
    per_seed = [paired_difference(model.resampled[0], seed) for seed in twin.resampled]
    if any(d is None for d in per_seed):
        return None
    estimate = mine.estimate - theirs.estimate
    return Interval(estimate, min(min(d.low for d in per_seed), estimate), max(max(d.high for d in per_seed), estimate),
                    mine.level, min(d.n for d in per_seed))


def clears_floor(diff: Interval, direction: int, floor: float) -> bool:
    """Whether ``diff`` (model minus twin) lies wholly beyond ``floor`` toward holding: above ``+floor``
    when ``direction`` is +1, below ``-floor`` when it is -1."""
    if direction not in (+1, -1):
        raise ValueError(f"direction toward holding must be +1 or -1, got {direction!r}")
    return diff.low > floor if direction > 0 else diff.high < -floor


def power(diff: Interval, direction: int, floor: float, multiple: float = 2.0) -> float:
    """The chance that :func:`clears_floor` passes when the model truly beats its twin by ``multiple`` x the
    floor toward holding, at the noise of ``diff`` (its half-width on the side that must clear the floor):
    what a card states so that a "cannot tell" can be read as "too little data" or "no effect"."""
    half_width = diff.estimate - diff.low if direction > 0 else diff.high - diff.estimate
    return chance_beyond(multiple * floor, floor, half_width)


def _interval_text(x: Interval) -> str:
    return f"{x.estimate:+.3g} [{x.low:+.3g}, {x.high:+.3g}]"


def against_twin(label: str, model: ClaimVerdict, twin: ClaimVerdict | None, *, direction: int,
                 floor: float | None = None, twin_name: str = "", about_model: bool = True) -> ClaimVerdict:
    """``model``'s verdict after the untrained-twin control (see the module's docstring).

    Args:
        label: the row (``"1"``, ``"2"``, ``"3a"`` ... ``"6a"``, ``"6b"``, or a lesson's own claim).
        model: the verdict on the trained model.
        twin: the same claim judged on the untrained twin (None: no twin measured).
        twin_name: which twin, shown with the numbers.
        direction: +1 when a larger deciding number is toward "holds", -1 when a smaller one is
            (lesson 12's rows: their ``toward`` in the table of conclusions).
        floor: how far beyond the twin the model must be, in the deciding number's units
            (default: the verdict's ``numbers["floor"]``, else 0).
        about_model: False for a claim that is not about the model under test (no twin applies).
    """
    if direction not in (+1, -1):
        raise ValueError(f"row {label}: the direction toward holding must be +1 or -1, got {direction!r}")
    numbers = dict(model.numbers)
    if not about_model:
        return ClaimVerdict(model.claim, model.verdict, {**numbers, TWIN_NAME: NOT_ABOUT})
    if twin is None:
        numbers[TWIN_NAME] = NO_TWIN
        if model.verdict == HOLDS:  # a "holds" about training needs the twin: more evidence decides
            return ClaimVerdict(model.claim, UNSURE, {**numbers, BECAUSE: BECAUSE_MISSING,
                                                     "missing": NO_TWIN_FOR_HOLDS})
        return ClaimVerdict(model.claim, model.verdict, numbers)
    mine, theirs = deciding_interval(model), deciding_interval(twin)
    numbers[TWIN_NAME] = twin_name or TWIN_NAME
    numbers[TWIN_VERDICT] = twin.verdict
    numbers[TWIN_NUMBER] = _interval_text(theirs) if theirs is not None else "-"
    if model.verdict == FAILS:
        return ClaimVerdict(model.claim, FAILS, {**numbers, TWIN_SAYS: REMOVED if twin.verdict == HOLDS else NEITHER})
    if model.verdict == UNSURE:
        return ClaimVerdict(model.claim, UNSURE, numbers)
    if mine is None or theirs is None:  # a "holds" with nothing to hold against the twin
        return ClaimVerdict(model.claim, UNSURE, {**numbers, BECAUSE: BECAUSE_MISSING, "missing": NO_TWIN_NUMBER})
    floor = float(numbers.get(FLOOR, 0.0) or 0.0) if floor is None else float(floor)
    paired = paired_over_seeds(model, twin, mine, theirs)
    diff = paired if paired is not None else difference(mine, theirs)
    numbers[DIFFERENCE] = _interval_text(diff)
    numbers[HOW_DIFFERENCED] = PAIRED if paired is not None else UNPAIRED
    numbers.setdefault(FLOOR, floor)
    numbers[POWER] = round(power(diff, direction, floor), 3)
    if clears_floor(diff, direction, floor):
        return ClaimVerdict(model.claim, HOLDS, numbers)
    why = AS_MUCH.format(model=f"{mine.estimate:.3g}", twin=f"{theirs.estimate:.3g}", difference=_interval_text(diff),
                         floor=f"{floor:.3g}")
    return ClaimVerdict(model.claim, UNSURE, {**numbers, BECAUSE: BECAUSE_TWIN, "why": why})


#: the numbers of a twin's verdict pooled over its shuffle seeds
SEEDS = N_("shuffle seeds")
SEED_ESTIMATES = N_("estimate of each seed")


def pooled_twin(verdicts: list[ClaimVerdict]) -> ClaimVerdict:
    """One claim judged on several untrained twins (one per shuffle seed), pooled so that the seeds' own
    spread is inside the interval: the estimate is the seeds' mean, the interval runs from the lowest
    seed's low end to the highest seed's high end (each seed's interval over texts or queries, and the
    spread between seeds, both inside it). The word is the seeds' common word, else "cannot tell".

    A single verdict comes back unchanged; a seed with no deciding number leaves the pool without one."""
    if not verdicts:
        raise ValueError("pooling a twin's verdicts needs at least one seed")
    if len(verdicts) == 1:
        return verdicts[0]
    words = {v.verdict for v in verdicts}
    word = words.pop() if len(words) == 1 else UNSURE
    intervals = [deciding_interval(v) for v in verdicts]
    numbers = {SEEDS: len(verdicts)}
    if any(x is None for x in intervals):
        return ClaimVerdict(verdicts[0].claim, word, {**numbers, "missing": NO_TWIN_NUMBER})
    resampled = tuple(r for v in verdicts for r in v.resampled)
    if len(resampled) != len(verdicts):  # a seed without its resamples: none can be paired
        resampled = ()
    estimates = [x.estimate for x in intervals]
    numbers.update({"estimate": sum(estimates) / len(estimates), "low": min(x.low for x in intervals),
                    "high": max(x.high for x in intervals), SEED_ESTIMATES: [round(e, 4) for e in estimates]})
    measure = verdicts[0].numbers.get("measure")
    if measure is not None:
        numbers["measure"] = measure
    return ClaimVerdict(verdicts[0].claim, word, numbers, resampled=resampled)


def pooled_twin_rows(rows_per_seed: list[dict[str, ClaimVerdict]]) -> dict[str, ClaimVerdict]:
    """:func:`pooled_twin` row by row over the seeds' rows (each keyed the same way; rows a seed lacks are
    pooled over the seeds that have them)."""
    labels = list(dict.fromkeys(label for rows in rows_per_seed for label in rows))
    return {label: pooled_twin([rows[label] for rows in rows_per_seed if label in rows]) for label in labels}
