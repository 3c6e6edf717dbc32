"""Exercises of lesson 06 (perturbation experiments).

1. :func:`check_token_permutation` - write the token permutation of the
   example's syntactic move by hand.
2. :func:`check_most_sensitive_head` - which head changes most under lexical
   damage (position space)?
3. :func:`check_position_follower_share` - what share of heads follow positions?
"""

from __future__ import annotations

from typing import Any

from attnlab.core.language import _
from attnlab.analysis.compare import PerturbationStudy, perturbation_study
from attnlab.analysis.perturb import example_perturbations, token_permutation
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import queries

from . import NOT_YET as _NOT_YET, Feedback, check_array, check_head, check_number, exercise


def _study(m: LoadedModel, study: PerturbationStudy | None, n: int = 30) -> PerturbationStudy:
    """The lesson's study when given, else a small one over ``n`` built-in queries."""
    return study if study is not None else perturbation_study(m, queries(m.language, n))


def _expected_token_permutation(m: LoadedModel, kind: str = "syntactic") -> list[int]:
    """The answer the check expects: the permutation the tokenizer confirms for the example."""
    return token_permutation(m, example_perturbations(m.language)[kind]).tolist()


@exercise
def check_token_permutation(m: LoadedModel, answer: Any, kind: str = "syntactic") -> Feedback:
    """``answer``: list with ``new_tokens[i] == old_tokens[answer[i]]`` for the example's ``kind``."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    expected = _expected_token_permutation(m, kind)
    return check_array(answer, expected, atol=0, what=_("your permutation"),
                       hint=_("Position 0 ({first}) and the last ({last}) stay put; position i of the new "
                              "text holds the old token answer[i].").format(first=m.cls_token, last=m.sep_token))


def _expected_most_sensitive_head(m: LoadedModel, kind: str = "lexical",
                                  study: PerturbationStudy | None = None) -> tuple[int, int]:
    """The answer the check expects: the 0-based (layer, head) with the largest mean position-space change."""
    top = _study(m, study).top_sensitive(kind, "position", k=1)[0]
    return (top.layer, top.head)


@exercise
def check_most_sensitive_head(m: LoadedModel, answer: Any, kind: str = "lexical",
                              study: PerturbationStudy | None = None) -> Feedback:
    """``answer``: 0-based ``(layer, head)`` most changed by ``kind`` in position space."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_head(answer, _expected_most_sensitive_head(m, kind, study),
                      hint=_("Look for the largest value in study.sensitivity(kind, 'position').estimate "
                             "(indices are 0-based)."))


def _expected_position_follower_share(m: LoadedModel, study: PerturbationStudy | None = None,
                                      kind: str = "both") -> float:
    """The answer the check expects: share of heads labelled position-followers."""
    return _study(m, study).follower_shares(kind)["position"]


@exercise
def check_position_follower_share(m: LoadedModel, answer: Any, study: PerturbationStudy | None = None,
                                  kind: str = "both") -> Feedback:
    """``answer``: the share (0..1) of heads that follow positions under ``kind``."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    expected = _expected_position_follower_share(m, study, kind)
    return check_number(answer, expected, rel=0.0, abs_tol=0.011, what=_("your share"),
                        hint=_("Count the heads labelled 'position' by study.followers() and divide by "
                               "the number of heads."))
