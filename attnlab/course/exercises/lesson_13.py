"""Exercises of lesson 13 (what attention weights do not tell you).

1. :func:`check_norm_contribution` - one norm-based weight ``||alpha_ij^h f_h(x_j)||`` by hand.
2. :func:`check_rollout_two_layers` - the rollout after two layers by hand.
3. :func:`check_sink_layer` - which layer gives the special tokens the most attention?
4. :func:`check_best_view` - which view tracks the effect of leaving a token out best?
5. :func:`check_replaceable_fraction` - what share of heads can become mean maps together?

Truths are computed from the running model (and from the lesson's own result
objects when the notebook passes them). The worked answers are in the teacher's source folder
(``classroom/solutions/``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.analysis.faithfulness import TRUTHS, VIEWS, Scoreboard, scoreboard
from attnlab.analysis.mean_map_replacement import TogetherCurves, replace_together, replaceable_fraction
from attnlab.analysis.norm_attention import norm_attention
from attnlab.analysis.rollout import residual_maps, rollout
from attnlab.analysis.sinks import SinkProfile, sink_profile
from attnlab.core.checks import check_index
from attnlab.core.extract import attention
from attnlab.core.language import _
from attnlab.core.streaming import mean_attention
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import texts as corpus_texts
from attnlab.data.querygen import same_length_queries

from . import NOT_YET as _NOT_YET, Feedback, check_array, check_choice, check_number, exercise

__all__ = [
    "check_norm_contribution",
    "check_rollout_two_layers",
    "check_sink_layer",
    "check_best_view",
    "check_replaceable_fraction",
]


# --------------------------------------------------------------------------- 1. one norm-based weight


def _expected_norm_contribution(m: LoadedModel, text: str, layer: int, head: int, i: int, j: int) -> float:
    """``||alpha_ij^h f_h(x_j)||`` of one head for one query row ``i`` and key ``j`` of ``text``."""
    layer, head = m.check_layer(layer), m.check_head(head)
    one = norm_attention(m, [text])
    n = one.lengths[0]
    return float(one.per_head[0, layer, head, check_index(i, n, "token"), check_index(j, n, "token")])


@exercise
def check_norm_contribution(m: LoadedModel, answer: Any, text: str, layer: int, head: int, i: int,
                            j: int) -> Feedback:
    """Is ``answer`` the norm of what head ``head`` of ``layer`` moves from token ``j`` into token ``i``?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_norm_contribution(m, text, layer, head, i, j)
    return check_number(answer, truth, rel=1e-3, abs_tol=1e-5, what="your norm",
                        hint="take the layer input x (hidden_states[layer]), compute v = parts.value(x), keep "
                             "head h's slice, multiply by head h's columns of parts.output.weight, then scale "
                             "by alpha[h, i, j] and take the length of that vector.")


# --------------------------------------------------------------------------- 2. rollout by hand


def _expected_rollout_two_layers(m: LoadedModel, text: str) -> list[list[float]]:
    """``A_hat_1 @ A_hat_0`` for ``text``: heads averaged, ``0.5 A + 0.5 I``, rows renormalised."""
    if m.n_layers < 2:
        raise ValueError("this exercise needs a model with at least two layers")
    return rollout(attention(m, [text])[0][:2])[1].tolist()


@exercise
def check_rollout_two_layers(m: LoadedModel, answer: Any, text: str) -> Feedback:
    """Is ``answer`` (a ``[T, T]`` matrix) the rollout after the first two layers?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_rollout_two_layers(m, text)
    verdict = check_array(answer, truth, atol=1e-4, what="your rollout",
                          hint="A_hat = 0.5 * maps[l].mean(0) + 0.5 * I, rows divided by their sums; "
                               "then A_hat_1 @ A_hat_0 (the later layer on the left).")
    if not verdict and check_array(answer, _reversed_product(m, text), atol=1e-4):
        verdict.message += " (You multiplied in the other order: the later layer goes on the left.)"
    return verdict


def _reversed_product(m: LoadedModel, text: str) -> list[list[float]]:
    steps = residual_maps(attention(m, [text])[0][:2])  # (2, T, T)
    return (steps[0] @ steps[1]).tolist()


# --------------------------------------------------------------------------- 3. the sink layer


def _expected_sink_layer(m: LoadedModel, profile: SinkProfile | None = None) -> int:
    """0-based layer whose rows give the special tokens the largest mean raw share."""
    profile = profile if profile is not None else sink_profile(m, corpus_texts(m.language, 20))
    return profile.sink_layer()


@exercise
def check_sink_layer(m: LoadedModel, answer: Any, profile: SinkProfile | None = None) -> Feedback:
    """Is ``answer`` (0-based) the layer with the most attention on [CLS]/[SEP] (or <s>/</s>)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_sink_layer(m, profile)
    verdict = check_choice(answer, truth, what="layer",
                           hint="profile.special('raw') is (texts, layers): average over texts and take the "
                                "argmax; answer 0-based.")
    if not verdict and answer == truth + 1:
        verdict.message += " (Did you answer 1-based? Code indices are 0-based.)"
    return verdict


# --------------------------------------------------------------------------- 4. the best view


def _expected_best_view(m: LoadedModel, board: Scoreboard | None = None, truth: str = "masked") -> str:
    """The view with the highest mean Spearman rho on the scoreboard, against ``truth``."""
    board = board if board is not None else scoreboard(m, corpus_texts(m.language, 10))
    return board.ranking(truth)[0]


@exercise
def check_best_view(m: LoadedModel, answer: Any, board: Scoreboard | None = None, truth: str = "masked") -> Feedback:
    """Is ``answer`` (one of :data:`attnlab.analysis.faithfulness.VIEWS`) the view that ranks tokens
    most like the effect of leaving them out (``truth``: ``"masked"`` keeps positions, ``"deleted"``)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if answer not in VIEWS:
        return Feedback(False, _("answer one of {views}, got {answer!r}").format(views=list(VIEWS), answer=answer))
    if truth not in TRUTHS:
        raise ValueError(f"truth must be one of {TRUTHS}, got {truth!r}")
    return check_choice(answer, _expected_best_view(m, board, truth), what="view",
                        hint=_("compare board.interval(view, truth).estimate for the five views."))


# --------------------------------------------------------------------------- 5. heads replaced together


def _small_together(m: LoadedModel) -> TogetherCurves:
    queries = list(same_length_queries(m, 44))
    mean = mean_attention(m, queries[:40], layers=[m.n_layers - 1], progress=False)
    return replace_together(m, queries[40:], mean, n_random=1)


def _expected_replaceable_fraction(m: LoadedModel, together: TogetherCurves | None = None) -> float:
    """The last fraction of heads (most fixed first) before the mean cost over texts first
    exceeds the tolerance."""
    together = together if together is not None else _small_together(m)
    return replaceable_fraction(together.fixed_first.mean(axis=0), together.fractions, together.tolerance())


@exercise
def check_replaceable_fraction(m: LoadedModel, answer: Any, together: TogetherCurves | None = None) -> Feedback:
    """Is ``answer`` the share of heads that can be replaced by their mean maps together (most fixed
    first) before the cost first goes over ``together.tolerance()``?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    together = together if together is not None else _small_together(m)
    truth = _expected_replaceable_fraction(m, together)
    verdict = check_number(answer, truth, rel=1e-6, abs_tol=1e-6, what=_("your fraction"),
                           hint=_("average together.fixed_first over texts (axis 0), find the first fraction "
                                  "whose cost is above together.tolerance(), and answer the fraction before it."))
    if not verdict:
        past = np.nonzero(together.fixed_first.mean(axis=0) > together.tolerance())[0]
        if past.size and abs(float(answer) - float(together.fractions[past[0]])) < 1e-6:
            verdict.message += _(" (That is the first fraction over the tolerance: answer the one before it.)")
    return verdict
