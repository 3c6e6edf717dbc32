"""Lesson 09's claims: are the heads of one layer alike, and more so with depth?

Two statements about Clark et al.'s MDS picture of the heads, decided from
:mod:`attnlab.analysis.diversity`:

1. :func:`verdict_more_alike_with_depth` -- the source article's reading:
   heads within a layer become more alike with depth (its conclusion 2). The
   slope of the within-layer dispersion against depth must be negative beyond
   its bootstrap interval *and* beyond the baseline of heads dealt to layers
   at random (:func:`attnlab.analysis.diversity.shuffled_baseline`);
2. :func:`verdict_layers_cluster` -- Clark et al.'s own observation: heads
   of the same layer lie closer to each other than to other layers' heads.
"""

from __future__ import annotations

from attnlab.analysis.diversity import DepthTrend, LayerClustering, ShuffledBaseline
from attnlab.course.verdicts import ClaimVerdict

#: Heads of one layer cluster when the permutation test's p is below this (and within < between).
CLUSTER_ALPHA = 0.05
#: The fall with depth must beat random deals of the heads to layers with p below this.
BASELINE_ALPHA = 0.05

CLAIM_MORE_ALIKE = "heads within a layer become more alike with depth"
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
