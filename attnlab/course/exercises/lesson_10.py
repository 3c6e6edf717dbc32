"""Exercises of lesson 10 (how many heads).

1. :func:`check_group_width` - the width of one head after regrouping.
2. :func:`check_most_focused_group_count` - which h' puts most attention on one token?
3. :func:`check_best_head_count` - which head count trained best in your run?
"""

from __future__ import annotations

from typing import Any, Sequence

from attnlab.analysis.regroup import group_width, regroup_summaries
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.data.examples import example_for
from attnlab.scratch.head_count_training import HeadCountStudy

from . import NOT_YET as _NOT_YET, Feedback, check_choice, check_number, exercise


def _expected_group_width(m: LoadedModel, n_groups: int = 3) -> int:
    """The answer the check expects: ``d_model / h'`` (every group keeps all the dimensions of its heads)."""
    return group_width(m, n_groups)


@exercise
def check_group_width(m: LoadedModel, answer: Any, n_groups: int = 3) -> Feedback:
    """``answer``: the width (dimensions of Q and K) of one head after regrouping into ``n_groups``."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_number(answer, _expected_group_width(m, n_groups), rel=0, abs_tol=0.5, what=_("your width"),
                        hint=_("{heads} heads of {width} dimensions are cut into {groups} groups.").format(
                            heads=m.n_heads, width=m.head_dim, groups=n_groups))


def _expected_most_focused_group_count(m: LoadedModel, texts: Sequence[str] | None = None) -> int:
    """The answer the check expects: the h' with the largest ``focus`` (largest of self/[CLS]/[SEP] mass)."""
    summaries = regroup_summaries(m, list(texts) if texts else [example_for(m)])
    return max(summaries, key=lambda g: summaries[g].focus)


@exercise
def check_most_focused_group_count(m: LoadedModel, answer: Any, texts: Sequence[str] | None = None) -> Feedback:
    """``answer``: the number of heads h' (a divisor of H) at which attention is most focused
    on a single token (self, [CLS] or [SEP]) for ``texts`` (default: the example)."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_choice(answer, _expected_most_focused_group_count(m, texts), what=_("your h'"),
                        hint=_("regroup_summaries(m, texts)[g].focus is the focus at h' = g; take the largest."))


def _expected_best_head_count(study: HeadCountStudy) -> int:
    """The answer the check expects: the head count with the lowest mean validation perplexity."""
    summary = study.summary()
    return min(summary, key=lambda h: summary[h]["ppl_mean"])


@exercise
def check_best_head_count(m: LoadedModel, answer: Any, study: HeadCountStudy | None = None) -> Feedback:
    """``answer``: the head count with the lowest mean validation perplexity in ``study``."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if study is None:
        return Feedback(False, _("pass the study you trained: check_best_head_count(m, answer, study=study)."))
    return check_choice(answer, _expected_best_head_count(study), what=_("your head count"),
                        hint=_("study.summary()[h]['ppl_mean'] is the mean perplexity of h heads."))
