"""Verdicts and checks as cards in a notebook: the claim, the word in colour, the deciding number drawn.

A :class:`~attnlab.course.verdicts.ClaimVerdict` or a :class:`~attnlab.course.checks.Check`
that is the last value of a notebook cell (or passed to ``display``) shows as a card
(its ``_repr_html_``); ``print`` keeps the plain text. A card holds

* the claim (or what was checked) in the reader's language;
* the verdict word in colour (green holds or passed, red does not hold or failed, amber cannot tell);
* the deciding number with its interval against its threshold, drawn as a small inline SVG
  (written here, no external file: it works offline);
* one line on what would change the verdict;
* every number, labelled in the reader's language, folded away in ``<details>``.

The deciding number is found in a verdict's numbers by :func:`deciding`: an
``estimate`` with ``low`` / ``high``, or any ``x`` with ``x low`` / ``x high``
(``x_low`` / ``x_high``; ``its_low`` / ``its_high`` belong to the number before
them), or a ``[estimate, low, high]`` triple; thresholds are the numbers named in
:data:`THRESHOLD_KEYS` (a verdict whose two tests use two lines names them ``"holds above"``
and ``"fails below"``, or ``"holds below"`` and ``"fails above"``). Every key is labelled by :func:`label`, from
:data:`NUMBER_LABELS` (keys written as Python names) or the catalogue.
"""

from __future__ import annotations

import html
import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

from attnlab.core.language import N_, _, current_language, filled_template, translated

#: card colours: the verdict word, the interval, the card's left edge
COLOURS = {"good": "#1a7f37", "bad": "#cf222e", "unsure": "#9a6700"}
#: numbers that are a threshold the deciding number is held to, in the order they are drawn
THRESHOLD_KEYS = ("threshold", "holds above", "holds below", "most means more than", "a few means at most", "few",
                  "many", "bound", "tolerance", "margin", "strong", "alpha")
#: thresholds drawn together: the first threshold found brings its partner
PAIRED_THRESHOLDS = {"few": "many", "holds above": "fails below", "holds below": "fails above"}
#: the untrained twin's verdict and number (:mod:`attnlab.course.twin_control`), shown under the model's
TWIN_VERDICT = N_("untrained twin's verdict")
TWIN_NUMBER = N_("untrained twin's deciding number")
#: what the twin's word means for a verdict that does not hold (the twin never changes that word)
TWIN_SAYS = N_("what the untrained twin says")
#: the key of a verdict's numbers that names its deciding number explicitly (``"estimate"``, whose ends are
#: ``"low"`` and ``"high"``, or any ``x`` whose ends are ``"x low"`` and ``"x high"``)
DECIDED_ON = "decided on"
#: ends of a key that name an interval's ends
LOW_ENDS = ("_low", " low")
HIGH_ENDS = ("_high", " high")

#: labels of the numbers whose keys are Python names (keyword arguments of ``ClaimVerdict.decide``
#: and ``Check.of``); keys written as English phrases are catalogued themselves
NUMBER_LABELS = {
    "alpha": N_("significance level"),
    "at_n": N_("at length n"),
    "attention_faster_at": N_("lengths where attention is faster"),
    "attention_max_over_min": N_("attention: largest over smallest share"),
    "attention_share_first": N_("attention share, shortest length"),
    "attention_share_last": N_("attention share, longest length"),
    "between_layers": N_("mean distance between layers"),
    "bilstm_orders_of_magnitude_lost": N_("BiLSTM: orders of magnitude lost"),
    "bilstm_share_first": N_("BiLSTM share, shortest length"),
    "bilstm_share_last": N_("BiLSTM share, longest length"),
    "bound": N_("bound"),
    "broad_share": N_("share of broad heads"),
    "chance_level": N_("shuffled control"),
    "clear_heads": N_("heads clearly so"),
    "clear_heads_uncorrected": N_("heads clearly so, uncorrected"),
    "d_k_first": N_("smallest d_k"),
    "d_k_last": N_("largest d_k"),
    "decided on": N_("decided on"),
    "decided_on": N_("decided on"),  # the keyword of ClaimVerdict.decide that names it
    "difference": N_("difference"),
    "estimate": N_("estimate"),
    "exponent_attention": N_("attention's time exponent"),
    "exponent_lstm": N_("LSTM's time exponent"),
    "factor": N_("factor"),
    "fall": N_("widths where it falls"),
    "few": N_("a few means at most"),
    "first_clear": N_("first clear heads"),
    "first_layer_spread": N_("spread between heads, first layer"),
    "fixed_group_mean": N_("mean of the fixed heads"),
    "fixed_share": N_("share of fixed heads"),
    "flat": N_("widths where it stays flat"),
    "gap": N_("gap"),
    "head7_lexical": N_("head 7, lexical change"),
    "head7_syntactic": N_("head 7, syntactic change"),
    "head9_lexical": N_("head 9, lexical change"),
    "head9_syntactic": N_("head 9, syntactic change"),
    "head_counts": N_("head counts"),
    "holds above": N_("holds above"),
    "holds below": N_("holds below"),
    "fails above": N_("fails above"),
    "fails below": N_("fails below"),
    "h' without a summary": N_("h' without a summary"),
    "head_index": N_("head (0-based)"),
    "heads_above": N_("heads above"),
    "heads_above_uncorrected": N_("heads above, uncorrected"),
    "heads_below": N_("heads below"),
    "heads_cannot_tell": N_("heads: cannot tell"),
    "heads_fixed": N_("fixed heads"),
    "heads_lexical_and_syntactic": N_("heads changed by both kinds"),
    "heads_lexical_only": N_("heads changed by lexical damage only"),
    "heads_not_fixed": N_("heads not fixed"),
    "heads_possibly_lexical_and_syntactic": N_("heads possibly changed by both kinds"),
    "heads_possibly_lexical_only": N_("heads possibly changed by lexical damage only"),
    "heterogeneous_share": N_("share of heterogeneous heads"),
    "high": N_("high end"),
    "interval": N_("interval"),
    "intervention": N_("intervention"),
    "its_change": N_("its change"),
    "its_upper": N_("its upper end"),
    "its_low": N_("its low end"),
    "its_high": N_("its high end"),
    "its_variance": N_("its variance"),
    "largest_gap": N_("largest gap"),
    "largest_move_of_a_cell": N_("largest move of a cell"),
    "largest_move_of_a_mean": N_("largest move of a mean"),
    "largest_move_of_fixedness": N_("largest move of a head's fixedness"),
    "largest_move_of_one_query": N_("largest move of one query"),
    "last_layer_spread": N_("spread between heads, last layer"),
    "layer_index": N_("layer (0-based)"),
    "layers_opposite": N_("layers against"),
    "layers_supporting": N_("layers for"),
    "layers_weak": N_("layers too weak to say"),
    "layers_with_less_gradient": N_("layers with less gradient"),
    "layers_with_more_gradient": N_("layers with more gradient"),
    "lengths_below_width": N_("lengths below the width"),
    "low": N_("low end"),
    "lstm_faster_at": N_("lengths where the LSTM is faster"),
    "lstm_orders_of_magnitude_lost": N_("LSTM: orders of magnitude lost"),
    "lstm_over_attention_time": N_("LSTM time over attention time"),
    "lstm_share_first": N_("LSTM share, shortest length"),
    "lstm_share_last": N_("LSTM share, longest length"),
    "many": N_("many means more than"),
    "mean_displacement_lexical": N_("mean change, lexical damage"),
    "mean_displacement_syntactic": N_("mean change, syntactic damage"),
    "mean_grad_norm_scaled": N_("mean gradient size, scaled"),
    "mean_grad_norm_unscaled": N_("mean gradient size, unscaled"),
    "median_r": N_("median correlation"),
    "method": N_("method"),
    "missing": N_("missing"),
    "n_first": N_("shortest length"),
    "n_last": N_("longest length"),
    "needed": N_("needed"),
    "permutation_p": N_("permutation p-value"),
    "possible_heads": N_("heads possibly so"),
    "queries": N_("queries"),
    "ratio": N_("ratio"),
    "reading": N_("reading"),
    "remains": N_("what remains"),
    "repeats": N_("repeats"),
    "rise": N_("widths where it rises"),
    "scaled_entropy_max": N_("largest entropy, scaled"),
    "scaled_entropy_min": N_("smallest entropy, scaled"),
    "scaled_grad_norm_max": N_("largest gradient size, scaled"),
    "scaled_grad_norm_min": N_("smallest gradient size, scaled"),
    "score": N_("score"),
    "seeds": N_("seeds"),
    "shrinks_by": N_("shrinks by"),
    "shuffles": N_("shuffled copies"),
    "space": N_("space"),
    "steady": N_("steady"),
    "strong": N_("strong means at least"),
    "texts": N_("texts"),
    "ties": N_("ties"),
    "tokens": N_("number of tokens"),
    "tolerance": N_("tolerance"),
    "too_few_units": N_("too few units"),
    "uniform_entropy": N_("entropy of a uniform row"),
    "unscaled_entropy_first": N_("entropy unscaled, smallest d_k"),
    "unscaled_entropy_last": N_("entropy unscaled, largest d_k"),
    "unscaled_grad_norm_first": N_("gradient size unscaled, smallest d_k"),
    "unscaled_grad_norm_last": N_("gradient size unscaled, largest d_k"),
    "unscaled_max_weight_first": N_("largest weight unscaled, smallest d_k"),
    "unscaled_max_weight_last": N_("largest weight unscaled, largest d_k"),
    "varying_group_mean": N_("mean of the varying heads"),
    "weakest_layer_index": N_("weakest layer (0-based)"),
    "why": N_("why"),
    "width": N_("width"),
    "widths": N_("widths"),
    "widths_within": N_("widths within the tolerance"),
    "within_layer": N_("mean distance within a layer"),
    "worst_d_k": N_("worst d_k"),
    "worst_relative_error": N_("worst relative error"),
    "all_heads_rho": N_("correlation over all heads"),
    "all_replaced_cost": N_("cost with every head replaced"),
    "clark_layers_share": N_("share in Clark et al.'s layers"),
    "control_effect": N_("effect of the control"),
    "control_mass": N_("weight on the control token"),
    "fixed_first_mean_cost": N_("mean cost, fixed heads first"),
    "fraction": N_("fraction"),
    "layers_above": N_("layers above the threshold"),
    "mean_map_cost": N_("cost of the mean map"),
    "mean_queries": N_("queries per mean map"),
    "mean_rho": N_("mean rank correlation"),
    "norm_share": N_("share by the norm view"),
    "other_query_cost": N_("cost of another query's map"),
    "per_layer_rho": N_("correlation per layer"),
    "random_fractions": N_("fractions in random orders"),
    "random_mean_cost": N_("mean cost, random order"),
    "random_orders": N_("random orders"),
    "ranking": N_("ranking"),
    "ranking_deleted": N_("ranking, tokens deleted"),
    "raw_share": N_("share by the raw weights"),
    "removed": N_("removed"),
    "reverse_fraction": N_("fraction in reverse order"),
    "reverse_mean_cost": N_("mean cost, reverse order"),
    "rho_deleted": N_("rank correlation, tokens deleted"),
    "sink_effect": N_("effect of the sink"),
    "sink_mass": N_("weight on the sink"),
    "special_layers_above": N_("layers above the threshold, special tokens"),
    "special_top_layer": N_("top layer, special tokens"),
    "special_top_share": N_("top share, special tokens"),
    "tolerance_share": N_("tolerance as a share"),
    "top_layer": N_("top layer"),
    "top_share": N_("top share"),
    "top_low": N_("top share, low end"),
    "top_high": N_("top share, high end"),
    "within_layer_rho": N_("correlation within a layer"),
    "minus_raw": N_("minus the raw weights"),
    "minus_norm": N_("minus the norm view"),
    "minus_rollout": N_("minus rollout"),
    "minus_value_zeroing": N_("minus value zeroing"),
    "minus_knockout": N_("minus knockout"),
    "minus_raw_deleted": N_("minus the raw weights, tokens deleted"),
    "minus_norm_deleted": N_("minus the norm view, tokens deleted"),
    "minus_rollout_deleted": N_("minus rollout, tokens deleted"),
    "minus_value_zeroing_deleted": N_("minus value zeroing, tokens deleted"),
    "minus_knockout_deleted": N_("minus knockout, tokens deleted"),
}
#: an interval's ends, when a key is a known number's name with ``_low`` / ``_high`` added
END_LABELS = {"low": N_("{what}, low end"), "high": N_("{what}, high end")}


def label(key: Any) -> str:
    """The label of a number's ``key`` in the reader's language.

    :data:`NUMBER_LABELS` first, then the catalogue (a key written as a phrase, or a filled
    template whose filled-in keys are labelled in turn, e.g. ``"6a: fixed_share"``); a key that
    ends in ``_low`` / ``_high`` names its number's interval end."""
    key = str(key)
    if key in NUMBER_LABELS:
        return _(NUMBER_LABELS[key])
    shown = _(key)
    if shown != key:
        return shown
    filled = filled_template(key, label)  # e.g. "6a: {number}" with the number's own label
    if filled is not None:
        return filled
    shown = translated(key)
    if shown != key:
        return shown
    for end, ends in (("low", LOW_ENDS), ("high", HIGH_ENDS)):
        for suffix in ends:
            base = key[: -len(suffix)]
            if key.endswith(suffix) and base and (base in NUMBER_LABELS or translated(base) != base):
                return _(END_LABELS[end]).format(what=label(base))
    return key.replace("_", " ") if current_language() == "en" else key


def value_text(value: Any) -> str:
    """A number's value as shown: floats to 3 significant digits, words and dicts in the reader's language."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):  # numpy floats too
        return f"{float(value):.3g}"
    if isinstance(value, str):
        return translated(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{label(k)}: {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


def numbers_text(numbers: Mapping) -> str:
    """``label = value, ...`` of every number, in the reader's language (the plain-text form)."""
    return ", ".join(f"{label(k)} = {value_text(v)}" for k, v in numbers.items())


@dataclass(frozen=True)
class Decider:
    """The deciding number: its ``key``, ``estimate``, interval ``[low, high]`` (both the estimate when
    there is none) and the ``thresholds`` ``{key: value}`` it is held to."""

    key: str
    estimate: float
    low: float
    high: float
    thresholds: dict

    @property
    def has_interval(self) -> bool:
        return self.high > self.low

    def nearest(self) -> tuple[str, float] | None:
        """The threshold nearest to the interval, or None when there is none."""
        if not self.thresholds:
            return None
        return min(self.thresholds.items(), key=lambda kv: min(abs(kv[1] - self.low), abs(kv[1] - self.high)))


def _finite(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _named_interval(numbers: Mapping) -> tuple[str, float, float, float] | None:
    """``(key, estimate, low, high)`` of the number ``numbers[DECIDED_ON]`` names, else None."""
    key = numbers.get(DECIDED_ON)
    if not isinstance(key, str) or key not in numbers:
        return None
    ends = ("low", "high") if key == "estimate" else (f"{key} low", f"{key} high")
    found = [_finite(numbers.get(k)) for k in (key, *ends)]
    if any(v is None for v in found):  # not measured (NaN): no deciding number to draw
        return None
    return (key, *found)  # type: ignore[return-value]


def _interval(numbers: Mapping) -> tuple[str, float, float, float] | None:
    """``(key, estimate, low, high)`` of the first interval among ``numbers``, else None."""
    keys = list(numbers)
    for i, key in enumerate(keys):
        key = str(key)
        for low_end, high_end in zip(LOW_ENDS, HIGH_ENDS):
            if not key.endswith(low_end):
                continue
            base = key[: -len(low_end)]
            high = numbers.get(base + high_end)
            if base not in numbers and i > 0:  # "its_low", "top_low": the ends of the number before them
                base = str(keys[i - 1])
            estimate = numbers.get(base)
            found = [_finite(v) for v in (estimate, numbers[keys[i]], high)]
            if all(v is not None for v in found):
                return (base, *found)  # type: ignore[return-value]
        if key == "low" and "high" in numbers:  # the ends of "estimate", else of the number before them
            base = "estimate" if "estimate" in numbers else (str(keys[i - 1]) if i > 0 else "")
            found = [_finite(numbers.get(base)), _finite(numbers["low"]), _finite(numbers["high"])]
            if all(v is not None for v in found):
                return (base, *found)  # type: ignore[return-value]
    for key, value in numbers.items():  # an [estimate, low, high] triple
        if isinstance(value, (list, tuple)) and len(value) == 3:
            found = [_finite(v) for v in value]
            if all(v is not None for v in found) and found[1] <= found[0] <= found[2] and found[1] < found[2]:
                return (str(key), *found)  # type: ignore[return-value]
    return None


def deciding(numbers: Mapping, *, value_keys: tuple[str, ...] = ("score",)) -> Decider | None:
    """The deciding number of a verdict's or check's ``numbers`` (see the module's docstring), or None.

    Without an interval, the first of ``value_keys`` that is a number is the deciding one
    (drawn as a point), provided there is a threshold to hold it to."""
    thresholds = {}
    for key in THRESHOLD_KEYS:  # the first threshold named, with its partner ("few" and "many")
        value = _finite(numbers.get(key))
        if value is not None:
            thresholds[key] = value
            partner = PAIRED_THRESHOLDS.get(key)
            if partner is not None and _finite(numbers.get(partner)) is not None:
                thresholds[partner] = _finite(numbers[partner])
            break
    found = _named_interval(numbers) if DECIDED_ON in numbers else _interval(numbers)
    if found is not None:
        key, estimate, low, high = found
        return Decider(key, estimate, min(low, high), max(low, high), thresholds)
    if not thresholds:
        return None
    for key in value_keys:
        value = _finite(numbers.get(key))
        if value is not None:
            return Decider(key, value, value, value, thresholds)
    return None


def interval_svg(d: Decider, colour: str, *, width: int = 360, height: int = 70) -> str:
    """A small SVG: the axis, the interval ``[low, high]`` as a thick bar, the estimate as a dot,
    each threshold as a dashed line with its label (labels on two rows, so that two lines near
    each other stay readable); values in the reader's language."""
    values = [d.low, d.high, d.estimate, *d.thresholds.values()]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.12 or max(abs(hi), 1.0) * 0.1
    lo, hi = lo - pad, hi + pad
    left, right = 12, width - 12

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (right - left)

    axis_y, esc = 44, html.escape
    parts = [f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="#8c959f" stroke-width="1"/>']
    for row, (key, t) in enumerate(d.thresholds.items()):
        tx, ty = x(t), 11 + 12 * (row % 2)
        parts.append(f'<line x1="{tx:.1f}" y1="{ty + 3}" x2="{tx:.1f}" y2="{axis_y + 10}" stroke="#57606a" '
                     f'stroke-width="1.5" stroke-dasharray="4,3"/>')
        anchor = "end" if tx > width * 0.7 else ("start" if tx < width * 0.3 else "middle")
        parts.append(f'<text x="{tx:.1f}" y="{ty}" font-size="10" text-anchor="{anchor}" fill="#57606a">'
                     f'{esc(label(key))} {t:.3g}</text>')
    if d.has_interval:
        parts.append(f'<line x1="{x(d.low):.1f}" y1="{axis_y}" x2="{x(d.high):.1f}" y2="{axis_y}" '
                     f'stroke="{colour}" stroke-width="6" stroke-linecap="round" opacity="0.55"/>')
        for v, anchor in ((d.low, "end"), (d.high, "start")):
            parts.append(f'<text x="{x(v) + (-4 if anchor == "end" else 4):.1f}" y="{axis_y + 19}" font-size="10" '
                         f'text-anchor="{anchor}" fill="currentColor">{v:.3g}</text>')
    parts.append(f'<circle cx="{x(d.estimate):.1f}" cy="{axis_y}" r="5" fill="{colour}"/>')
    title = _("{what}: {estimate:.3g}").format(what=label(d.key), estimate=d.estimate)
    if d.has_interval:
        title += " [" + f"{d.low:.3g}, {d.high:.3g}" + "]"
    return (f'<svg class="al-card-svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}"><title>{esc(title)}</title>'
            + "".join(parts) + "</svg>")


def card(*, kind: str, statement: str, word: str, tone: str, numbers: Mapping, change: str,
         decider: Decider | None, twin: str = "", reason: str = "") -> str:
    """The card's HTML. ``kind``: the heading ("Claim" or "Check", already translated); ``statement``:
    the claim or what was checked; ``word``: the verdict word as shown; ``tone``: a key of
    :data:`COLOURS`; ``change``: what would change the verdict (one line); ``twin``: the untrained
    twin's verdict and number, shown under the model's (one line, already translated); ``reason``:
    why a verdict cannot tell (one line, already translated; shown under the word)."""
    esc, colour = html.escape, COLOURS[tone]
    rows = "".join(f'<tr><td style="padding:1px 12px 1px 0;text-align:left">{esc(label(k))}</td>'
                   f'<td style="text-align:left">{esc(value_text(v))}</td></tr>' for k, v in numbers.items())
    figure = ""
    if decider is not None:
        reading = _("{what}: {estimate:.3g}").format(what=label(decider.key), estimate=decider.estimate)
        if decider.has_interval:
            reading += f" [{decider.low:.3g}, {decider.high:.3g}]"
        twin_line = (f'<div class="al-card-twin" style="font-size:90%;opacity:0.8">{esc(twin)}</div>'
                     if twin else "")
        figure = (f'<div class="al-card-figure" style="margin:4px 0">{interval_svg(decider, colour)}'
                  f'<div class="al-card-number" style="font-size:90%">{esc(reading)}</div>{twin_line}</div>')
    return (
        f'<div class="al-card al-card-{tone}" lang="{current_language()}" style="border:1px solid #d0d7de;'
        f'border-left:5px solid {colour};border-radius:6px;padding:8px 12px;margin:6px 0;max-width:46em">'
        f'<div class="al-card-claim"><span style="opacity:0.7">{esc(kind)}</span> {esc(statement)}</div>'
        f'<div class="al-card-word" style="color:{colour};font-weight:bold;font-size:120%;margin:2px 0">'
        f'{esc(word)}</div>'
        + (f'<div class="al-card-reason" style="font-size:92%;margin:2px 0">{esc(reason)}</div>' if reason else "")
        + f'{figure}'
        f'<div class="al-card-change" style="font-size:92%">{esc(change)}</div>'
        f'<details class="al-card-details" style="margin-top:4px"><summary>{esc(_("Details"))}</summary>'
        f'<table style="font-size:90%">{rows}</table></details></div>'
    )
