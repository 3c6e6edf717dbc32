"""Lesson 03's claims: self-attention against recurrence (LSTM, ELMo-style BiLSTM).

Measured by :mod:`attnlab.scratch.recurrence`, decided here:

* :func:`verdict_decay` -- an LSTM's last output forgets the first token as the
  text grows, self-attention's does not;
* :func:`verdict_bilstm` -- concatenating a backward LSTM (ELMo) does not bring
  the first token back at the last position;
* :func:`verdict_timing` -- Vaswani et al. (section 4): self-attention is faster
  than a recurrent layer when the length ``n`` is below the width ``d``;
* :func:`verdict_growth` -- attention's time grows faster with ``n`` than the
  LSTM's (``O(n^2)`` pairs against ``O(n)`` steps).

Every verdict decides on a bootstrap interval: over the random seeds (fresh
layers and inputs) for the dependence claims, over the timing repeats for the
timing claims. Where the interval reaches both sides of the line the verdict
cannot tell: a tie in wall time is not a win.

The dependence claims are about *untrained* layers (PyTorch's default
initialisation): they say what the architecture gives before learning, and
nothing about what a trained LSTM keeps.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.analysis.stats import Interval, bootstrap, bootstrap_mean, bootstrap_slope
from attnlab.course.verdicts import ClaimVerdict
from attnlab.scratch.recurrence import Influence, Timing, exponent_summary

#: The LSTM's first-token share must fall by more than this factor from the shortest to the longest text.
DECAY_FACTOR = 10.0
#: Attention's first-token share must stay within this factor (largest / smallest) over all lengths.
ATTENTION_STEADY = 2.0
#: The BiLSTM's first-token share at the longest length must be below this fraction of its value at the shortest.
BILSTM_REMAINS = 0.1
#: A share that underflowed to 0 counts as this (an LSTM's can, for long inputs).
SHARE_FLOOR = 1e-30
#: Bootstrap resamples behind every interval of this module.
N_BOOT = 2000

CLAIM_DECAY = "an LSTM's last output forgets the first token as the text grows; self-attention's does not"
CLAIM_BILSTM = "concatenating a backward LSTM (ELMo) does not rescue the first token at the last position"
CLAIM_TIMING = "self-attention is faster than a recurrent layer when the length n is below the width d"
CLAIM_GROWTH = "self-attention's time grows faster with the length n than an LSTM's"


def _log10_shares(influence: Influence, kind: str) -> np.ndarray:
    """``[seeds, lengths]`` log10 of the first-token shares, zeros counted at :data:`SHARE_FLOOR`."""
    return np.log10(np.maximum(influence.seed_shares(kind), SHARE_FLOOR))


def forgetting_interval(influence: Influence, kind: str) -> Interval:
    """log10 of how many times smaller ``kind``'s share is at the longest length than at
    the shortest, averaged over seeds, with a bootstrap interval over seeds."""
    logs = _log10_shares(influence, kind)  # (S, K)
    return bootstrap_mean(logs[:, 0] - logs[:, -1], n_boot=N_BOOT)


def swing_interval(influence: Influence, kind: str) -> Interval:
    """log10 of ``kind``'s largest over smallest share across lengths, averaged over
    seeds, with a bootstrap interval over seeds."""
    logs = _log10_shares(influence, kind)  # (S, K)
    return bootstrap_mean(logs.max(axis=1) - logs.min(axis=1), n_boot=N_BOOT)


def verdict_decay(influence: Influence, factor: float = DECAY_FACTOR,
                  steady: float = ATTENTION_STEADY) -> ClaimVerdict:
    """Holds when the LSTM's first-token share surely falls by more than ``factor``
    from the shortest to the longest length while attention's surely stays within
    ``steady`` (largest over smallest); does not hold when the LSTM's surely falls
    by less or attention's surely swings by more; cannot tell otherwise.
    "Surely": the bootstrap interval over seeds lies on that side. The fall is
    reported in orders of magnitude (log10); a share that underflowed to 0
    counts as :data:`SHARE_FLOOR`, so such a fall is a lower bound."""
    for kind, why in (("lstm", "no lstm layer was measured"), ("attention", "no attention layer was measured")):
        if kind not in influence.share:
            return ClaimVerdict.missing(CLAIM_DECAY, why)
    drop = forgetting_interval(influence, "lstm")
    swing = swing_interval(influence, "attention")
    lstm_yes, lstm_no = drop.above(math.log10(factor)), drop.below(math.log10(factor) + 1e-12)
    att_yes, att_no = swing.below(math.log10(steady)), swing.above(math.log10(steady) - 1e-12)
    lstm, att = influence.share["lstm"], influence.share["attention"]
    return ClaimVerdict.decide(
        CLAIM_DECAY, holds=lstm_yes and att_yes, fails=lstm_no or att_no,
        n_first=influence.lengths[0], n_last=influence.lengths[-1], seeds=len(influence.seeds),
        lstm_share_first=lstm[0], lstm_share_last=lstm[-1],
        lstm_orders_of_magnitude_lost=float(drop.estimate), its_low=float(drop.low), its_high=float(drop.high),
        attention_share_first=att[0], attention_share_last=att[-1],
        attention_max_over_min=float(10 ** swing.estimate), its_upper=float(10 ** swing.high),
        factor=factor, steady=steady,
    )


def verdict_bilstm(influence: Influence, remains: float = BILSTM_REMAINS) -> ClaimVerdict:
    """Holds when the BiLSTM's first-token share at the longest length is surely below
    ``remains`` times its share at the shortest (it forgets like an LSTM); does not
    hold when it is surely above; cannot tell when the interval over seeds straddles it."""
    if "bilstm" not in influence.share:
        return ClaimVerdict.missing(CLAIM_BILSTM, "no bilstm layer was measured")
    drop = forgetting_interval(influence, "bilstm")  # log10(first / last)
    line = -math.log10(remains)
    bi = influence.share["bilstm"]
    return ClaimVerdict.decide(
        CLAIM_BILSTM, holds=drop.above(line), fails=drop.below(line + 1e-12),
        n_first=influence.lengths[0], n_last=influence.lengths[-1], seeds=len(influence.seeds),
        bilstm_share_first=bi[0], bilstm_share_last=bi[-1],
        bilstm_orders_of_magnitude_lost=float(drop.estimate), its_low=float(drop.low), its_high=float(drop.high),
        remains=remains,
    )


def speedup_intervals(timing: Timing, *, level: float = 0.95) -> list[Interval]:
    """Per length: the median over repeats of LSTM time / attention time (above 1:
    attention faster), with a bootstrap interval over the paired repeats."""
    ratios = timing.repeats("lstm") / timing.repeats("attention")  # (R, K): one ratio per repeat
    return [bootstrap(ratios[:, i], lambda v: np.median(v), n_boot=N_BOOT, level=level)
            for i in range(ratios.shape[1])]


def verdict_timing(timing: Timing) -> ClaimVerdict:
    """Holds when at every measured ``n < d`` the interval of LSTM time / attention
    time lies above 1; does not hold when at one of them it lies below 1 (the LSTM
    faster); cannot tell when an interval contains 1 (a tie within the noise of the
    repeats) or no measured length is below ``d``."""
    short = [i for i, n in enumerate(timing.lengths) if n < timing.width]
    if not short:
        return ClaimVerdict.decide(CLAIM_TIMING, holds=False, fails=False,
                                   missing="no measured length is below the width d", width=timing.width)
    ratios = speedup_intervals(timing)
    faster = [bool(ratios[i].above(1.0)) for i in short]
    slower = [bool(ratios[i].below(1.0)) for i in short]
    worst = min(short, key=lambda i: float(ratios[i].low))
    return ClaimVerdict.decide(
        CLAIM_TIMING, holds=all(faster), fails=any(slower), width=timing.width,
        lengths_below_width=len(short), attention_faster_at=sum(faster), lstm_faster_at=sum(slower),
        ties=len(short) - sum(faster) - sum(slower), repeats=int(timing.repeats("lstm").shape[0]),
        at_n=timing.lengths[worst], lstm_over_attention_time=float(ratios[worst].estimate),
        its_low=float(ratios[worst].low), its_high=float(ratios[worst].high),
    )


def exponent_gap_interval(timing: Timing) -> Interval:
    """Attention's growth exponent minus the LSTM's (log-log slopes of time against
    ``n``), with a bootstrap interval over the paired repeats (the mean log time per length)."""
    x = np.log(np.asarray(timing.lengths, dtype=float))
    gap = np.log(timing.repeats("attention")) - np.log(timing.repeats("lstm"))  # (R, K)
    return bootstrap_slope(x, gap, n_boot=N_BOOT)


def verdict_growth(timing: Timing) -> ClaimVerdict:
    """Holds when the interval of attention's growth exponent minus the LSTM's lies
    above 0; does not hold when it lies below 0; cannot tell otherwise."""
    if len(timing.lengths) < 2:
        return ClaimVerdict.missing(CLAIM_GROWTH, "a growth rate needs at least two lengths")
    exps = exponent_summary(timing)
    gap = exponent_gap_interval(timing)
    return ClaimVerdict.decide(CLAIM_GROWTH, holds=gap.above(0.0), fails=gap.below(0.0),
                               exponent_attention=exps["attention"], exponent_lstm=exps["lstm"],
                               gap=float(gap.estimate), gap_low=float(gap.low), gap_high=float(gap.high))
