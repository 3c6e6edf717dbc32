"""Exercises of lesson 02 (why scale by sqrt(d_k)).

1. :func:`check_qk_variance` -- predict var(q . k) for random unit-variance vectors.
2. :func:`check_scale_factor` -- the number the running model divides its scores by.
3. :func:`check_saturation_direction` -- without scaling, does the largest
   softmax weight rise or fall as d_k grows?
"""

from __future__ import annotations

import math
from typing import Any

from attnlab.core.language import _
from attnlab.core.checks import check_positive_int
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import Feedback, check_choice, check_number, exercise
from attnlab.scratch.scaling import dot_product_variance, saturation_curve


@exercise
def check_qk_variance(m: LoadedModel, answer: Any, d_k: int = 128) -> Feedback:
    """Predict the variance of ``q . k`` when q and k have ``d_k`` i.i.d. N(0, 1) entries.

    The expected value is the theory (``d_k``); the message also shows a
    measurement so the student sees the prediction hold.
    """
    d_k = check_positive_int(d_k, "d_k")
    verdict = check_number(answer, float(d_k), rel=0.02, what=_("var(q.k) for d_k={d_k}").format(d_k=d_k),
                           hint=_("each of the d_k products has variance 1 and they add up."))
    if verdict:  # show the measurement only after a right prediction
        measured = dot_product_variance(d_k, n_samples=4000, seed=7)
        verdict.message += _(" (measured on 4000 random pairs: {measured})").format(measured=f"{measured:.1f}")
    return verdict


@exercise
def check_scale_factor(m: LoadedModel, answer: Any) -> Feedback:
    """By what number does the running model divide q . k before the softmax?"""
    return check_number(answer, math.sqrt(m.head_dim), rel=0.01, what=_("scale divisor"),
                        hint=_("it is sqrt of one head's width (this model: head width {width}).").format(
                            width=m.head_dim))


@exercise
def check_saturation_direction(m: LoadedModel, answer: Any) -> Feedback:
    """Without 1/sqrt(d_k), does the largest softmax weight ``"rise"`` or ``"fall"``
    as d_k grows? The truth is measured (d_k 8 vs 512), not assumed."""
    curve = saturation_curve([8, 512], scaled=False, n_rows=300, seed=3)
    expected = "rise" if curve.max_weight[1] > curve.max_weight[0] else "fall"
    if answer is None:
        return Feedback(False, _("no answer yet: set answer to 'rise' or 'fall'."), expected)
    verdict = check_choice(answer, expected, what=_("direction"),
                           hint=_("bigger scores make softmax pick one winner."))
    verdict.message += _(" (measured max weight {small} at d_k=8, {large} at d_k=512)").format(
        small=f"{curve.max_weight[0]:.2f}", large=f"{curve.max_weight[1]:.2f}")
    return verdict


