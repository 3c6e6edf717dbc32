"""Exercises of lesson 13 (what attention weights do not tell you).

1. :func:`check_norm_contribution` - one norm-based weight ``||alpha_ij^h f_h(x_j)||`` by hand.
2. :func:`check_rollout_two_layers` - the rollout after two layers by hand.
3. :func:`check_sink_layer` - which layer gives the special tokens the most attention?
4. :func:`check_best_view` - which view tracks the effect of removing a token best?

Truths are computed from the running model (and from the lesson's own result
objects when the notebook passes them). ``solution_*`` are the worked answers.
"""

from __future__ import annotations

from typing import Any

from attnlab.analysis.faithfulness import VIEWS, Scoreboard, scoreboard
from attnlab.analysis.norm_attention import norm_attention
from attnlab.analysis.rollout import residual_maps, rollout
from attnlab.analysis.sinks import SinkProfile, sink_profile
from attnlab.core.checks import check_index
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import texts as corpus_texts

from . import NOT_YET as _NOT_YET, Feedback, check_array, check_choice, check_number

__all__ = [
    "check_norm_contribution", "solution_norm_contribution",
    "check_rollout_two_layers", "solution_rollout_two_layers",
    "check_sink_layer", "solution_sink_layer",
    "check_best_view", "solution_best_view",
]


# --------------------------------------------------------------------------- 1. one norm-based weight


def solution_norm_contribution(m: LoadedModel, text: str, layer: int, head: int, i: int, j: int) -> float:
    """``||alpha_ij^h f_h(x_j)||`` of one head for one query row ``i`` and key ``j`` of ``text``."""
    layer, head = m.check_layer(layer), m.check_head(head)
    one = norm_attention(m, [text])
    n = one.lengths[0]
    return float(one.per_head[0, layer, head, check_index(i, n, "token"), check_index(j, n, "token")])


def check_norm_contribution(m: LoadedModel, answer: Any, text: str, layer: int, head: int, i: int,
                            j: int) -> Feedback:
    """Is ``answer`` the norm of what head ``head`` of ``layer`` moves from token ``j`` into token ``i``?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = solution_norm_contribution(m, text, layer, head, i, j)
    return check_number(answer, truth, rel=1e-3, abs_tol=1e-5, what="your norm",
                        hint="take the layer input x (hidden_states[layer]), compute v = parts.value(x), keep "
                             "head h's slice, multiply by head h's columns of parts.output.weight, then scale "
                             "by alpha[h, i, j] and take the length of that vector.")


# --------------------------------------------------------------------------- 2. rollout by hand


def solution_rollout_two_layers(m: LoadedModel, text: str) -> list[list[float]]:
    """``A_hat_1 @ A_hat_0`` for ``text``: heads averaged, ``0.5 A + 0.5 I``, rows renormalised."""
    if m.n_layers < 2:
        raise ValueError("this exercise needs a model with at least two layers")
    return rollout(attention(m, [text])[0][:2])[1].tolist()


def check_rollout_two_layers(m: LoadedModel, answer: Any, text: str) -> Feedback:
    """Is ``answer`` (a ``[T, T]`` matrix) the rollout after the first two layers?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = solution_rollout_two_layers(m, text)
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


def solution_sink_layer(m: LoadedModel, profile: SinkProfile | None = None) -> int:
    """0-based layer whose rows give the special tokens the largest mean raw share."""
    profile = profile if profile is not None else sink_profile(m, corpus_texts(m.language, 20))
    return profile.sink_layer()


def check_sink_layer(m: LoadedModel, answer: Any, profile: SinkProfile | None = None) -> Feedback:
    """Is ``answer`` (0-based) the layer with the most attention on [CLS]/[SEP] (or <s>/</s>)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = solution_sink_layer(m, profile)
    verdict = check_choice(answer, truth, what="layer",
                           hint="profile.special('raw') is (texts, layers): average over texts and take the "
                                "argmax; answer 0-based.")
    if not verdict and answer == truth + 1:
        verdict.message += " (Did you answer 1-based? Code indices are 0-based.)"
    return verdict


# --------------------------------------------------------------------------- 4. the best view


def solution_best_view(m: LoadedModel, board: Scoreboard | None = None) -> str:
    """The view with the highest mean Spearman rho on the scoreboard."""
    board = board if board is not None else scoreboard(m, corpus_texts(m.language, 10))
    return board.ranking()[0]


def check_best_view(m: LoadedModel, answer: Any, board: Scoreboard | None = None) -> Feedback:
    """Is ``answer`` (one of ``"raw"``, ``"norm"``, ``"rollout"``, ``"value_zeroing"``) the view
    that ranks tokens most like the effect of removing them?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if answer not in VIEWS:
        return Feedback(False, f"answer one of {list(VIEWS)}, got {answer!r}")
    return check_choice(answer, solution_best_view(m, board), what="view",
                        hint="compare board.interval(view).estimate for the four views.")
