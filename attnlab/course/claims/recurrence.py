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
"""

from __future__ import annotations

from attnlab.course.verdicts import ClaimVerdict
from attnlab.scratch.recurrence import Influence, Timing, exponent_summary

#: The LSTM's first-token share must fall by more than this factor from the shortest to the longest text.
DECAY_FACTOR = 10.0
#: Attention's first-token share must stay within this factor (largest / smallest) over all lengths.
ATTENTION_STEADY = 2.0
#: The BiLSTM's first-token share at the longest length must be below this fraction of its value at the shortest.
BILSTM_REMAINS = 0.1

CLAIM_DECAY = "an LSTM's last output forgets the first token as the text grows; self-attention's does not"
CLAIM_BILSTM = "concatenating a backward LSTM (ELMo) does not rescue the first token at the last position"
CLAIM_TIMING = "self-attention is faster than a recurrent layer when the length n is below the width d"
CLAIM_GROWTH = "self-attention's time grows faster with the length n than an LSTM's"


def _drop(values: list[float]) -> float:
    """How many times smaller the last value is than the first (inf when it reached 0)."""
    return values[0] / values[-1] if values[-1] > 0 else float("inf")


def verdict_decay(influence: Influence, factor: float = DECAY_FACTOR) -> ClaimVerdict:
    """Holds when the LSTM's first-token share falls by more than ``factor`` from the
    shortest to the longest length while attention's stays within :data:`ATTENTION_STEADY`."""
    for kind in ("lstm", "attention"):
        if kind not in influence.share:
            return ClaimVerdict.missing(CLAIM_DECAY, f"no {kind} layer was measured")
    lstm, att = influence.share["lstm"], influence.share["attention"]
    lstm_drop = _drop(lstm)
    att_ratio = max(att) / max(min(att), 1e-30)
    ok = lstm_drop > factor and att_ratio < ATTENTION_STEADY
    return ClaimVerdict.decide(
        CLAIM_DECAY, holds=ok, fails=not ok,
        n_first=influence.lengths[0], n_last=influence.lengths[-1],
        lstm_share_first=lstm[0], lstm_share_last=lstm[-1], lstm_falls_by=lstm_drop,
        attention_share_first=att[0], attention_share_last=att[-1], attention_max_over_min=att_ratio,
    )


def verdict_bilstm(influence: Influence, remains: float = BILSTM_REMAINS) -> ClaimVerdict:
    """Holds when the BiLSTM's first-token share at the longest length is below
    ``remains`` times its share at the shortest length (it forgets like an LSTM)."""
    if "bilstm" not in influence.share:
        return ClaimVerdict.missing(CLAIM_BILSTM, "no bilstm layer was measured")
    bi = influence.share["bilstm"]
    forgets = bi[-1] < remains * bi[0]
    return ClaimVerdict.decide(
        CLAIM_BILSTM, holds=forgets, fails=not forgets,
        n_first=influence.lengths[0], n_last=influence.lengths[-1],
        bilstm_share_first=bi[0], bilstm_share_last=bi[-1],
    )


def verdict_timing(timing: Timing) -> ClaimVerdict:
    """Holds when attention is faster at every measured ``n < d``; does not hold when
    the LSTM is as fast or faster at one of them; cannot tell without such a length.

    The numbers give the smallest ratio LSTM time / attention time over the
    lengths below ``d`` (above 1: attention faster at all of them) and where it occurs.
    """
    lstm, att = timing.seconds["lstm"], timing.seconds["attention"]
    short = [(n, l / a) for n, a, l in zip(timing.lengths, att, lstm) if n < timing.width]
    if not short:
        return ClaimVerdict.missing(CLAIM_TIMING, f"no measured length is below the width d={timing.width}")
    n_worst, worst = min(short, key=lambda pair: pair[1])
    return ClaimVerdict.decide(CLAIM_TIMING, holds=worst > 1, fails=worst <= 1, width=timing.width,
                               lengths_below_width=len(short), smallest_lstm_over_attention_time=worst,
                               at_n=n_worst)


def verdict_growth(timing: Timing) -> ClaimVerdict:
    """Holds when the log-log slope of attention's time against ``n`` is above the LSTM's."""
    if len(timing.lengths) < 2:
        return ClaimVerdict.missing(CLAIM_GROWTH, "a growth rate needs at least two lengths")
    exps = exponent_summary(timing)
    faster = exps["attention"] > exps["lstm"]
    return ClaimVerdict.decide(CLAIM_GROWTH, holds=faster, fails=not faster,
                               exponent_attention=exps["attention"], exponent_lstm=exps["lstm"])
