"""Exercises for lesson 05 (reading head heatmaps and the pattern zoo).

* :func:`check_head_label` — predict a head's pattern label from its statistics.
* :func:`check_cls_mass` — compute one head's average weight on [CLS] for the example query.
* :func:`check_layer_majority` — which label is most common in a given layer?

Truths are computed from the running model: the labels come from the lesson's
survey (:func:`attnlab.analysis.taxonomy.default_survey`, cached, so the notebook and
the checkers see the same numbers). The worked answers are in the teacher's source folder
(``classroom/solutions/``).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from attnlab.core import class_setting
from attnlab.core.language import _
from attnlab.analysis.taxonomy import LABELS, HeadLabels, classify_heads, default_survey
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.data.examples import example_for

from . import NOT_YET as _NOT_YET, Feedback, check_number, exercise

__all__ = [
    "quiz_head", "check_head_label",
    "check_cls_mass",
    "check_layer_majority",
]


def _labels(m: LoadedModel) -> HeadLabels:
    return classify_heads(default_survey(m))


def _not_a_label(answer: Any) -> Feedback | None:
    """The feedback for an answer that is no label of :data:`LABELS` ("not yet" for None); None for a label."""
    if answer is None:
        return Feedback(False, _NOT_YET, None)
    if not isinstance(answer, str) or answer.strip().lower() not in LABELS:
        return Feedback(False, _("answer with one of: {labels} (got {answer!r}).").format(
            labels=", ".join(LABELS), answer=answer), None)
    return None


# --------------------------------------------------------------------------- 1. predict a label


def quiz_head(m: LoadedModel, seed: int = 0, *, show: bool = True) -> tuple[int, int]:
    """Pick a head for the quiz and print its statistics (not its label).

    A label present in the model is drawn first, then a head with that label,
    so rare patterns come up as often as common ones.

    Returns:
        ``(layer, head)``, 0-based.
    """
    labels = _labels(m)
    rng = random.Random(class_setting.student_seed(seed))  # per student in a class
    present = [name for name in LABELS if labels.heads(name)]
    layer, head = rng.choice(labels.heads(rng.choice(present)))
    if show:
        s = labels.stats.head(layer, head)
        print(_("Quiz head: layer {number}, head {head_number} (0-based: layer={layer}, head={head})").format(
            number=layer + 1, head_number=head + 1, layer=layer, head=head))
        for key in ("self_mass", "prev_mass", "next_mass", "cls_mass", "sep_mass", "punct_mass",
                    "segment_mass", "entropy", "uniform_entropy", "confidence", "argmax_offset", "offset_share"):
            v = s[key]
            print(f"  {key:<16} {v:.3f}" if key != "argmax_offset" else f"  {key:<16} {int(v):+d}")
    return layer, head


@exercise
def check_head_label(m: LoadedModel, answer: Any, layer: int, head: int) -> Feedback:
    """Is ``answer`` the label the lesson's rules give head ``(layer, head)``?

    Args:
        answer: one of ``"self"``, ``"previous"``, ``"next"``, ``"vertical"``,
            ``"block"``, ``"broad"``, ``"heterogeneous"`` (or None).
    """
    layer = m.check_layer(layer)
    head = m.check_head(head)
    refused = _not_a_label(answer)
    if refused is not None:
        return refused
    labels = _labels(m)
    truth = labels[layer, head]
    if answer.strip().lower() == truth:
        return Feedback(True, f"{truth!r}: {labels.reasons[layer, head]}.", truth)
    return Feedback(False, _("{answer!r} is not it. Go through the rules in order: positional masses "
                             "(>= 0.5) or the argmax offset share (>= 0.9), then first + last special token mass (>= 0.6), then "
                             "own-sentence mass, then entropy relative to uniform (>= 0.8).").format(answer=answer),
                    None)


# --------------------------------------------------------------------------- 2. [CLS] mass by hand


@exercise
def check_cls_mass(m: LoadedModel, answer: Any, layer: int, head: int, text: str | None = None) -> Feedback:
    """The head's weight on [CLS], averaged over all query rows of the example query.

    Args:
        answer: a number between 0 and 1 (or None).
        text: the text (default: the course's example query).
    """
    layer = m.check_layer(layer)
    head = m.check_head(head)
    if answer is None:
        return Feedback(False, _NOT_YET, None)
    expected = _expected_cls_mass(m, layer, head, text)
    verdict = check_number(answer, expected, rel=0.01, abs_tol=2e-3, what=_("{token} mass").format(token=m.cls_token),
                           hint=_("Take the head's [n, n] map, keep the {token} column (index 0) and "
                                  "average it over the rows.").format(token=m.cls_token))
    if not verdict.correct:
        verdict.expected = None
    return verdict


def _expected_cls_mass(m: LoadedModel, layer: int, head: int, text: str | None = None) -> float:
    """Mean over query rows of the weight in the [CLS] column (position 0)."""
    att = attention(m, [text or example_for(m)])
    weights = att.head(0, layer, head)  # (n, n): rows are queries
    cls_col = [t for t, tok in enumerate(att.tokens[0]) if tok == m.cls_token]
    return float(weights[:, cls_col].sum(dim=1).mean())


# --------------------------------------------------------------------------- 3. majority in a layer


@exercise
def check_layer_majority(m: LoadedModel, answer: Any, layer: int) -> Feedback:
    """Which label do most heads of ``layer`` (0-based) have? Ties: any of the tied labels counts."""
    layer = m.check_layer(layer)
    refused = _not_a_label(answer)
    if refused is not None:
        return refused
    counts = Counter(_labels(m).labels[layer].tolist())
    top = max(counts.values())
    winners = sorted(name for name, c in counts.items() if c == top)
    if answer.strip().lower() in winners:
        return Feedback(True, _("{answer!r} has {top} of {heads} heads in layer {number}.").format(
            answer=answer, top=top, heads=m.n_heads, number=layer + 1), winners)
    return Feedback(False, _("{answer!r} has {count} heads in layer {number}; "
                             "count the labels in that row of the taxonomy map.").format(
        answer=answer, count=counts.get(answer.strip().lower(), 0), number=layer + 1), None)


