"""Lesson 09's claims: are the heads of one layer alike, and more so with depth?

Statements about Clark et al.'s MDS picture of the heads, decided from
:mod:`attnlab.analysis.diversity`:

1. :func:`verdict_more_alike_with_depth` -- the source article's reading:
   heads within a layer become more alike with depth (its conclusion 2). The
   slope of the within-layer dispersion against depth must be negative beyond
   its bootstrap interval *and* beyond the baseline of heads dealt to layers
   at random (:func:`attnlab.analysis.diversity.shuffled_baseline`);
2. :func:`verdict_layers_cluster` -- Clark et al.'s own observation: heads
   of the same layer lie closer to each other than to other layers' heads;
3. :func:`verdict_upper_layers_converge` -- the article's conclusion 2 read on the *shape* of the
   curve (:class:`~attnlab.analysis.diversity.DepthShape`), not its slope: the upper layers keep
   clearly less of the lower layers' spread **and** the last layer is (within a floor) the least
   diverse. A U, heads alike in the middle and diverse again at the top, has a negative slope and
   does not hold;
4. :func:`verdict_training_converges` -- the same curve held against the model's untrained twin:
   an untrained model's heads grow alike with depth by themselves (depth alone), so does training
   make the upper layers converge further, or keep them diverse?
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnlab.analysis.diversity import DepthShape, DepthTrend, LayerClustering, ShuffledBaseline
from attnlab.analysis.stats import Interval, paired_difference, too_few_units
from attnlab.analysis.stats import difference_interval as difference
from attnlab.core.language import N_
from attnlab.course.twin_control import HOW_DIFFERENCED, PAIRED, UNPAIRED
from attnlab.course.verdicts import ClaimVerdict

#: Heads of one layer cluster when the permutation test's p is below this (and within < between).
CLUSTER_ALPHA = 0.05
#: The fall with depth must beat random deals of the heads to layers with p below this.
BASELINE_ALPHA = 0.05

#: conclusion 2's floor, in shares of the lower third's dispersion: "converge" needs the upper third to keep
#: less than 1 - CONVERGE_FLOOR of it, and the last layer to lie within CONVERGE_FLOOR of it above the least
#: diverse layer. A tenth of the lower layers' spread is a clear step: an untrained twin's last layer lies
#: 0.000 above its least diverse one (the same layer), the offline default's 0.47 and MiniLM's 0.16 above
#: theirs (a U); the texts' noise moves either by about 0.01 at 40 texts
CONVERGE_FLOOR = 0.1

CLAIM_MORE_ALIKE = "heads within a layer become more alike with depth"
CLAIM_CONVERGE = N_("lower layers are more diverse; heads of upper layers converge: the upper third of the layers "
                    "keeps less than 90% of the lower third's spread between heads, and the last layer lies within "
                    "10% of that spread of the layer whose heads are most alike (a curve that climbs back up at the "
                    "top, a U, does not hold)")
CLAIM_TRAINING = N_("training makes the heads of the upper layers converge beyond what depth alone does: the "
                    "model's upper third keeps a share of its lower third's spread smaller than its untrained "
                    "twin's (the same depth, nothing learned) by more than 0.1")
#: the readings of the model's curve against its twin's (:func:`verdict_training_converges`)
ADDS = N_("training adds convergence: the upper layers' heads are more alike than depth alone leaves them")
KEEPS = N_("training keeps diversity: the upper layers' heads stay more different than depth alone leaves them")
AS_DEPTH = N_("as depth alone: the upper layers keep about the share the untrained twin keeps")
UNDECIDED = N_("cannot tell: the interval of the difference reaches a floor")
CLAIM_CLUSTER = "heads of the same layer attend more alike than heads of different layers"


def verdict_more_alike_with_depth(trend: DepthTrend, baseline: ShuffledBaseline | None = None, *,
                                  alpha: float = BASELINE_ALPHA) -> ClaimVerdict:
    """Holds when the whole interval of the slope of within-layer dispersion against depth lies
    below 0 (deeper layers: closer heads) and, with a ``baseline``, random deals of the heads to
    layers give a slope that low with p below ``alpha``. Does not hold when the interval lies
    above 0, or when the slope is not below the baseline's band (p above ``1 - alpha``)."""
    s, d = trend.slope, trend.dispersion
    numbers = dict(slope_per_layer=float(s.estimate), slope_low=float(s.low), slope_high=float(s.high),
                   level=s.level, spearman_rho=trend.spearman, first_layer=float(d.estimate[0]),
                   last_layer=float(d.estimate[-1]), texts=trend.n_texts)
    beats_baseline, within_baseline = True, False
    if baseline is not None:
        beats_baseline = baseline.p_value < alpha
        within_baseline = baseline.p_value > 1 - alpha
        numbers.update(baseline_slope_low=float(baseline.slope.low), baseline_slope_high=float(baseline.slope.high),
                       baseline_p=baseline.p_value)
    return ClaimVerdict.decide(
        CLAIM_MORE_ALIKE, holds=s.below(0.0) and beats_baseline, fails=s.above(0.0) or within_baseline, **numbers,
    )


def verdict_layers_cluster(clustering: LayerClustering) -> ClaimVerdict:
    """Holds when the mean distance within a layer is below the mean distance between layers and
    the permutation p is below :data:`CLUSTER_ALPHA`; does not hold when it is not below."""
    c = clustering
    closer = c.within < c.between
    return ClaimVerdict.decide(
        CLAIM_CLUSTER, holds=closer and c.p_value < CLUSTER_ALPHA, fails=not closer,
        within_layer=c.within, between_layers=c.between, ratio=c.ratio, permutation_p=c.p_value,
    )


def shape_text(x: Interval) -> str:
    """An interval of a :class:`DepthShape` number as one short string: ``"0.517 [0.501, 0.523]"``."""
    return f"{x.estimate:.3f} [{x.low:.3f}, {x.high:.3f}]"


def convergence_gap(shape: DepthShape, floor: float = CONVERGE_FLOOR) -> Interval:
    """How far the upper layers are from converging: the larger of two gaps, each in shares of the
    lower third's dispersion and each measured past its own line,

    * the **rebound** (the last layer's dispersion above the least diverse layer's) minus ``floor``:
      above 0, the curve climbs back up at the top (a U);
    * the **upper share** (the upper third's dispersion over the lower third's) minus ``1 - floor``:
      above 0, the upper layers are not clearly less diverse than the lower ones.

    Below 0 both tests pass. Its ends are the larger of the two gaps' ends, so the interval lies
    wholly below 0 exactly when both intervals lie below their lines, and wholly above 0 exactly
    when one of them lies above its line. It cannot fall below ``-floor`` (the rebound is never
    negative): a curve that falls to the top sits at ``-floor``. Where both kept their resamples, the
    gap keeps each resample's gap, so that a twin on the same texts is differenced resample by resample.
    """
    r, u = shape.rebound, shape.upper_share

    def gap(a, b):
        return np.maximum(np.asarray(a, dtype=float) - floor, np.asarray(b, dtype=float) - (1.0 - floor))

    ends = Interval(float(gap(r.estimate, u.estimate)), float(gap(r.low, u.low)), float(gap(r.high, u.high)),
                    r.level, r.n)
    if r.samples is None or u.samples is None or r.draws != u.draws:
        return ends
    return replace(ends, samples=gap(r.samples, u.samples), draws=r.draws)  # (B,): each resample's gap


def verdict_upper_layers_converge(shape: DepthShape, *, floor: float = CONVERGE_FLOOR) -> ClaimVerdict:
    """The article's conclusion 2 on the shape of the dispersion curve (intervals over texts).

    Decided on :func:`convergence_gap` (smaller is toward "holds"): holds when its whole interval
    lies below 0, that is, the last layer lies within ``floor`` of the least diverse layer (the
    curve falls to the top, or flattens there) **and** the upper third keeps less than
    ``1 - floor`` of the lower third's dispersion (the lower layers are clearly more diverse);
    does not hold when it lies wholly above 0: a U (the top layers spread again) or upper layers
    as diverse as the lower ones; otherwise, or with too few texts, "cannot tell". Both numbers
    are shown beside with their intervals.
    """
    r, u = shape.rebound, shape.upper_share
    gap = convergence_gap(shape, floor)
    numbers = {"estimate": gap.estimate, "low": gap.low, "high": gap.high,
               "measure": N_("how far the upper layers are from converging: the larger of the last layer's climb "
                             "above the least diverse layer less the floor, and the upper third's share of the "
                             "lower third's dispersion less (1 - floor)"),
               N_("holds below"): 0.0, N_("floor"): floor,
               N_("last layer above the least diverse (rebound)"): shape_text(r),
               N_("least diverse layer"): shape.least_layer + 1,
               N_("upper third over lower third"): shape_text(u),
               "texts": shape.n_texts}
    why = too_few_units(r)
    if why is None and not np.isfinite(gap.estimate):
        why = N_("the lower layers' heads do not differ at all: no spread to compare with")
    if why is not None:
        return ClaimVerdict.decide(CLAIM_CONVERGE, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(CLAIM_CONVERGE, holds=gap.below(0.0), fails=gap.above(0.0), resampled=gap, **numbers)


def training_reading(diff: Interval, floor: float) -> str:
    """Which of :data:`ADDS`, :data:`KEEPS`, :data:`AS_DEPTH` or :data:`UNDECIDED` the difference
    ``model - twin`` of the upper share reads: below ``-floor``, above ``floor``, or wholly between."""
    if diff.below(-floor):
        return ADDS
    if diff.above(floor):
        return KEEPS
    if diff.above(-floor) and diff.below(floor):
        return AS_DEPTH
    return UNDECIDED


def verdict_training_converges(model: DepthShape, twin: DepthShape, *, floor: float = CONVERGE_FLOOR) -> ClaimVerdict:
    """Does training make the upper layers converge beyond what depth alone does?

    An untrained twin (the weights shuffled within each tensor) has the model's depth and nothing
    learned; its heads grow alike with depth by themselves. Decided on the model's upper share
    minus the twin's (:class:`DepthShape`), with an interval that counts both runs' noise: paired,
    resample by resample, where both were measured on the same texts with the same seed
    (:func:`attnlab.analysis.stats.paired_difference`), else the two intervals' noise added as
    independent. Holds when it lies wholly below ``-floor`` (training adds convergence); does not hold
    when it lies wholly above ``-floor``, in which case the reading says whether training keeps
    diversity (wholly above ``floor``) or the model does what depth alone does; otherwise "cannot tell". The numbers' "training against depth alone"
    names the reading (:func:`training_reading`).
    """
    paired = paired_difference(model.upper_share, twin.upper_share)
    diff = paired if paired is not None else difference(model.upper_share, twin.upper_share)
    numbers = {"estimate": diff.estimate, "low": diff.low, "high": diff.high,
               "measure": N_("the model's upper share minus its untrained twin's (upper third over lower third)"),
               HOW_DIFFERENCED: PAIRED if paired is not None else UNPAIRED,
               N_("holds below"): -floor, N_("floor"): floor,
               N_("training against depth alone"): training_reading(diff, floor),
               N_("upper share, model"): shape_text(model.upper_share),
               N_("upper share, untrained twin"): shape_text(twin.upper_share),
               N_("rebound, model"): shape_text(model.rebound),
               N_("rebound, untrained twin"): shape_text(twin.rebound),
               N_("texts, model"): model.n_texts, N_("texts, untrained twin"): twin.n_texts}
    why = too_few_units(model.upper_share) or too_few_units(twin.upper_share)
    if why is None and not np.isfinite(diff.estimate):
        why = N_("the lower layers' heads do not differ at all: no spread to compare with")
    if why is not None:
        return ClaimVerdict.decide(CLAIM_TRAINING, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(CLAIM_TRAINING, holds=diff.below(-floor), fails=diff.above(-floor), **numbers)
