"""Fixedness per head and per layer, against a null of each head's own, with intervals over queries.

**The measure.** For one query row ``r`` of one head let ``p_i`` be text
``i``'s attention row (``n`` keys), ``p̄`` their mean and ``u`` the uniform
row. ``KL(q || u) = ln n - H(q)`` says how much a row tells about where the
head looks. Averaging over texts can only lose information
(``KL(p̄ || u) <= mean_i KL(p_i || u)``); what it keeps is the part every text
shares. So

    fixedness = (KL(p̄ || u) - b) / (mean_i KL(p_i || u) - b),

summed over query rows before dividing (rows that say little weigh little),
is the **share of a row's information that the mean map explains**: 1 when
every text gets the same map, sharp or diffuse; about 0 when the rows are
drawn independently per text, however sharp or diffuse they are (their mean
tends to ``u``). :meth:`attnlab.core.streaming.MeanAttention.fixedness`
computes it from the sums the accumulator keeps; the old score
``1 - JS / ln n`` (:meth:`~attnlab.core.streaming.MeanAttention.js_score`)
measured diffuseness as much as fixedness (i.i.d. Dirichlet(2) rows: 0.92)
and is kept only to show that.

**The null, per head.** Even rows with no pattern keep some information in a
finite mean: shuffle each text's row over its key positions independently
(the head's own rows, any pattern destroyed); the mean of ``N`` shuffled
rows has ``E[KL(p̄ || u)] = b = (n mean_i ||p_i||^2 - 1) / (2N)`` nats to
second order (each cell of a shuffled row has variance ``(||p||^2 - 1/n) / n``,
and ``KL(q || u) ~ n/2 sum_j (q_j - 1/n)^2``): ``(n - 1) / (2N)`` for one-hot
rows. ``b`` comes from the sums of squared maps the accumulator already
keeps, so the null costs nothing and needs no stored rows; it is subtracted
above (:attr:`FixednessReport.null_share` shows its size, ``b`` over the
rows' information), and ``tests/test_fixedness.py`` checks it against real
shuffles. It is exact in the limit of many queries and matters only for
short runs (a few hundred queries).

**Uniform heads.** A head whose rows carry almost no information (under
:data:`UNIFORM_INFO` of the maximum ``ln n``) attends evenly every time; the
share is undefined (0 / 0). Such heads are their own kind ("uniform"),
left out of every per-layer average.

**Intervals** come from resampling query **shards** (never heads): each
resample weights the shards' sums, so every statistic follows exactly. This
module measures, from the shards:

* each head's fixedness ``[L, H]`` with its interval, its rows' information,
  the null's share and the mean map's sharpness;
* the mean fixedness of every layer, its slope against depth, and how often
  the last layer is the most fixed one;
* beside a **control** run (random vocabulary pieces, no content at all):
  the control's fixedness, the difference real - control per head and per
  layer, and the slope of the per-layer difference against depth, with
  intervals from resampling both runs' shards independently;
* how the fixedness settles as more queries are averaged
  (:func:`fixedness_curve`).

**Two readings.** Most heads of a trained encoder rest much of every row on
a special token (``<s>``, [CLS], [SEP]: an attention sink, lesson 13). That
part is the same for every query, so it counts as "fixed" whatever the rest
of the row does: a head with 90% of each row on ``<s>`` and the other 10% on
a token chosen anew by every text scores about 0.9. Every report therefore
holds both readings (the accumulator fills both in one pass): the report
itself reads **all keys**, :attr:`FixednessReport.content` reads the **content
keys** (special columns left out, rows renormalised:
:func:`attnlab.core.distributions.content_keys`), and
:attr:`FixednessReport.special_weight` says how much of each head's rows the
content reading leaves out.

**Rows weighted by their content mass.** Renormalising hides how little of a
row reads the text: inside one head, a row with 99% on ``<s>`` and 1% on one
fixed word becomes a sharp, perfectly fixed content row, and counted like the
rows that put all their weight on the text it can make a head whose content
rows vary read as fixed. The content reading therefore weights each query
row ``r`` by its mean content mass ``m_r`` (its weight on the content keys,
averaged over texts; :func:`row_content_mass`) in every sum over rows:
``sum_r m_r (KL(p̄_r || u) - b_r) / sum_r m_r (mean_i KL(p_{i,r} || u) - b_r)``,
and the rows' information is the ``m``-weighted mean. A row at 1% counts a
hundredth of a row at 100%; with the same mass on every row the weights cancel
and the share is the unweighted one (:attr:`FixednessReport.unweighted` keeps
that one for comparison). The all-keys reading counts every row the same: it
is the article's reading of the maps it drew, special tokens included.

Only numbers live here; which heads count as fixed and what that says about
the source article's claims is :mod:`attnlab.course.claims.averaging`'s job.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from attnlab.analysis.stats import Interval, correlation, interval_from_samples, resample_counts, slope
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import MeanAttention, information_from_sums, mean_attention, merge_all


#: bootstrap resamples computed together in :func:`bootstrap_fixedness`
RESAMPLES_AT_ONCE = 50
#: a head whose rows carry less than this share of the maximum information ``ln n`` is "uniform"
UNIFORM_INFO = 0.01


def row_content_mass(acc: MeanAttention) -> torch.Tensor:
    """``[L, H, n]``: each query row's weight on the content keys, **summed** over the accumulator's
    texts (divide by ``acc.count`` for the mean); ones times the count when the special keys are unknown."""
    keep = ~acc.special_keys()  # (n,)
    return acc.total[..., keep].sum(dim=-1)  # (L, H, n)


def head_numbers(acc: MeanAttention, row_mass: torch.Tensor | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fixedness, information, null_share)``, each ``[L, H]``, of one accumulator.

    ``information``: the rows' mean information ``mean_{r,i} KL(p_{i,r} || u) / ln n`` in [0, 1];
    ``null_share``: ``b / mean_i KL(p_i || u)``, what a pattern-free head with these rows would score
    before the null is subtracted. With ``row_mass`` ``[L, H, n]`` (each row's content mass summed
    over the same texts, :func:`row_content_mass`), every sum over rows weights a row by its mean
    content mass, and ``information`` is the weighted mean (see the module docstring).
    """
    acc._need(1)
    count = torch.tensor(float(acc.count))
    return _numbers(acc.total, acc.total_sq, acc.entropy_total, count,
                    None if row_mass is None else row_mass / count)


def _numbers(total, total_sq, entropy_total, count,
             row_weight: torch.Tensor | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean_info, row_info, null_info = information_from_sums(total, total_sq, entropy_total, count,
                                                           row_weight)  # (..., L, H)
    n = total.shape[-1]
    rows = torch.tensor(float(n)) if row_weight is None else row_weight.sum(dim=-1)  # (..., L, H): weight of the rows
    room = row_info - null_info  # (..., L, H)
    share = torch.where(room > 1e-12, (mean_info - null_info) / room.clamp_min(1e-12), torch.nan)
    information = row_info / (rows.clamp_min(1e-12) * math.log(n))  # (..., L, H): per row, relative to ln n
    null_share = null_info / row_info.clamp_min(1e-12)
    return share.numpy(), information.numpy(), null_share.numpy()


def bootstrap_numbers(shards: Sequence[MeanAttention], n_boot: int = 500, seed: int = 0,
                      row_mass: Sequence[torch.Tensor] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(fixedness, information)``, each ``[n_boot, L, H]``, of resamples of the shards (with replacement).

    A resample weights each shard by how often it was drawn
    (:func:`attnlab.analysis.stats.resample_counts`); the weighted sums are the
    sums of the resampled queries, so both numbers follow exactly. Resamples are
    handled :data:`RESAMPLES_AT_ONCE` at a time, so memory does not grow with ``n_boot``.
    ``row_mass``: each shard's summed row content mass ``[L, H, n]`` (:func:`head_numbers`),
    resampled with its shard.
    """
    total = torch.stack([s.total for s in shards])  # (S, L, H, n, n)
    total_sq = torch.stack([s.total_sq for s in shards])  # (S, L, H, n, n)
    ent = torch.stack([s.entropy_total for s in shards])  # (S, L, H, n)
    mass = None if row_mass is None else torch.stack(list(row_mass))  # (S, L, H, n)
    count = torch.tensor([float(s.count) for s in shards], dtype=torch.float64)  # (S,)
    weights = torch.from_numpy(resample_counts(len(shards), n_boot, seed)).double()  # (B, S)
    shares, infos = [], []
    for w in weights.split(RESAMPLES_AT_ONCE):  # (b, S)
        drawn = w @ count  # (b,)
        row_weight = (None if mass is None
                      else torch.einsum("bs,s...->b...", w, mass) / drawn.reshape(-1, 1, 1, 1))  # (b, L, H, n)
        share, info, _sharp = _numbers(torch.einsum("bs,s...->b...", w, total),  # (b, L, H, n, n)
                                       torch.einsum("bs,s...->b...", w, total_sq),
                                       torch.einsum("bs,s...->b...", w, ent),  # (b, L, H, n)
                                       drawn, row_weight)
        shares.append(share)
        infos.append(info)
    return np.concatenate(shares), np.concatenate(infos)  # (B, L, H) each


def bootstrap_fixedness(shards: Sequence[MeanAttention], n_boot: int = 500, seed: int = 0) -> torch.Tensor:
    """Fixedness ``[n_boot, L, H]`` of resamples of the shards (see :func:`bootstrap_numbers`)."""
    return torch.from_numpy(bootstrap_numbers(shards, n_boot, seed)[0])


@dataclass
class FixednessReport:
    """Fixedness of every head and its trend with depth, measured over query shards.

    Arrays are numpy; layers and heads 0-based (printed 1-based). Fixedness is
    NaN for heads whose rows carry no information beyond the null.

    Attributes:
        layers: the model layers of the first axis.
        fixedness: ``[L, H]`` information share, 1 = every query gets the same map, ~0 = no pattern.
        head_interval: ``[L, H]`` fixedness with its interval over shards.
        information: ``[L, H]`` with interval: the rows' information ``E KL(row || u) / ln n``
            (0 = every row uniform, 1 = every row one-hot).
        uniform: ``[L, H]`` booleans, point information below :data:`UNIFORM_INFO`
            (left out of the per-layer means).
        null_share: ``[L, H]``, what the null keeps of the rows' information (subtracted).
        js_score: ``[L, H]``, the old score ``1 - JS / ln n`` (for comparison only).
        sharpness: ``[L, H]``, how far each mean map is from uniform (0 = flat).
        per_layer: mean fixedness of each layer's non-uniform heads, ``[L]``, interval over shards.
        slope: least-squares slope of ``per_layer`` against the layer index, with its interval.
        depth_rho: Spearman correlation of ``per_layer`` with depth (NaN below 3 layers).
        sharp_fixed_rho: Spearman correlation over non-uniform heads of sharpness and fixedness.
        last_is_most_fixed_share: share of resamples in which the last layer is the most fixed.
        count: queries; n_shards: shards they were split into (1: no interval).
        model_name: the model that made the maps.
        head_boots: ``[B, L, H]`` fixedness of each resample (``[1, L, H]`` with one shard).
        info_boots: ``[B, L, H]`` information of the same resamples.
        control: fixedness ``[L, H]`` of the control run (None without one).
        control_uniform: ``[L, H]`` uniform heads of the control.
        control_per_layer: the control's per-layer fixedness ``[L]`` with its interval.
        difference: real minus control fixedness ``[L, H]``, with an interval from
            resampling the shards of both runs independently.
        difference_per_layer: per-layer mean of the difference over heads uniform in neither run ``[L]``.
        difference_slope: slope of ``difference_per_layer`` against depth, with its interval.
        control_count: strings in the control run; control_shards: their shards.
        reading: which reading of the rows these numbers are (``ALL_KEYS`` or ``CONTENT_KEYS``).
        special_weight: ``[L, H]`` mean weight on the special keys ([CLS]/[SEP], ``<s>``/``</s>``)
            over rows and queries (None when the special positions are unknown).
        content: the same report on the **content keys**, each row weighted by its content mass
            (None when the shards hold no content reading); its own ``content`` is None.
        row_weighted: the rows were weighted by their content mass (the content reading).
        unweighted: ``[L, H]`` fixedness of the same reading with every row counted the same
            (the content reading only; None otherwise), shown beside for comparison.
    """

    layers: list[int]
    fixedness: np.ndarray  # (L, H)
    head_interval: Interval  # (L, H)
    information: Interval  # (L, H)
    uniform: np.ndarray  # (L, H)
    null_share: np.ndarray  # (L, H)
    js_score: np.ndarray  # (L, H)
    sharpness: np.ndarray  # (L, H)
    per_layer: Interval  # (L,)
    slope: Interval
    depth_rho: float
    sharp_fixed_rho: float
    last_is_most_fixed_share: float
    count: int
    n_shards: int
    model_name: str = ""
    head_boots: np.ndarray | None = None  # (B, L, H)
    info_boots: np.ndarray | None = None  # (B, L, H)
    control: np.ndarray | None = None  # (L, H)
    control_uniform: np.ndarray | None = None  # (L, H)
    control_per_layer: Interval | None = None  # (L,)
    difference: Interval | None = None  # (L, H)
    difference_per_layer: Interval | None = None  # (L,)
    difference_slope: Interval | None = None
    control_count: int = 0
    control_shards: int = 0
    reading: str = ALL_KEYS
    special_weight: np.ndarray | None = None  # (L, H)
    content: "FixednessReport | None" = None
    row_weighted: bool = False
    unweighted: np.ndarray | None = None  # (L, H)

    def reading_report(self, reading: str) -> "FixednessReport":
        """The report of one reading: ``ALL_KEYS`` (this one) or ``CONTENT_KEYS`` (:attr:`content`).

        Raises:
            ValueError: an unknown reading, or the content reading was not measured.
        """
        if reading == self.reading:
            return self
        if reading == CONTENT_KEYS and self.content is not None:
            return self.content
        raise ValueError(f"reading {reading!r} is not in this report (it reads {self.reading!r}"
                         f"{'' if self.content is None else ' and ' + CONTENT_KEYS!r})")

    def share_most_fixed(self, layer: int, among: Sequence[int] | None = None) -> float:
        """Share of resamples in which model layer ``layer`` has the highest per-layer
        fixedness among the model layers ``among`` (default: all averaged layers)."""
        among = list(self.layers) if among is None else list(among)
        if layer not in among or any(l not in self.layers for l in among):
            raise ValueError(f"layers {among} (with {layer}) must all be among the averaged layers {self.layers}")
        rows = [self.layers.index(l) for l in among]
        boots = self.head_boots if self.head_boots is not None else self.fixedness[None]  # (B, L, H)
        per_layer = layer_means(boots[:, rows], self.uniform[rows])  # (B, len(among))
        return float((np.nan_to_num(per_layer, nan=-np.inf).argmax(axis=1) == among.index(layer)).mean())

    def summary(self) -> str:
        """The numbers in a few lines (layers 1-based), in the reader's language."""
        per_layer = ", ".join(
            f"L{l + 1} {x:.3f} [{lo:.3f}, {hi:.3f}]"
            for l, x, lo, hi in zip(self.layers, self.per_layer.estimate, self.per_layer.low, self.per_layer.high)
        )
        lines = [
            _("{n} queries in {k} shards; {u} of {total} heads uniform (rows carry < {info:.0%} of ln n).").format(
                n=self.count, k=self.n_shards, u=int(self.uniform.sum()), total=self.uniform.size, info=UNIFORM_INFO),
            _("Mean fixedness per layer ({level:.0%} interval over shards): {layers}").format(
                level=self.per_layer.level, layers=per_layer),
            _("Slope against depth {s:+.4f} per layer [{low:+.4f}, {high:+.4f}], Spearman rho with depth {rho:+.2f}; "
              "the last layer is the most fixed in {last:.0%} of resamples.").format(
                s=self.slope.estimate, low=self.slope.low, high=self.slope.high, rho=self.depth_rho,
                last=self.last_is_most_fixed_share),
            _("Largest share the null keeps (subtracted): {b:.4f}; Spearman rho of sharpness and fixedness over "
              "heads: {rho:+.2f}").format(b=np.nanmax(self.null_share), rho=self.sharp_fixed_rho),
        ]
        return "\n".join(lines) + (self._control_summary() if self.control is not None else "")

    def _control_summary(self) -> str:
        c = self.control_per_layer
        per_layer = ", ".join(f"L{l + 1} {x:.3f}" for l, x in zip(self.layers, c.estimate))
        d = self.difference_slope
        return "\n" + _("Control ({n} strings of random vocabulary pieces), mean fixedness per layer: {layers}").format(
            n=self.control_count, layers=per_layer) + "\n" + _(
            "Slope of real - control against depth {s:+.4f} per layer [{low:+.4f}, {high:+.4f}]").format(
            s=d.estimate, low=d.low, high=d.high)


def layer_means(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``[..., L]``: mean over heads of ``values`` ``[..., L, H]``, leaving out the heads ``skip`` ``[L, H]``
    and NaN values (NaN for a layer with no head left)."""
    kept = np.where(skip, np.nan, values)  # (..., L, H)
    with np.errstate(invalid="ignore"):
        counts = np.sum(~np.isnan(kept), axis=-1)  # (..., L)
        sums = np.nansum(kept, axis=-1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _slopes(depth: np.ndarray, per_layer: np.ndarray) -> np.ndarray:
    """Slope of each row of ``per_layer`` ``[..., L]`` against ``depth`` (0 below two layers)."""
    if len(depth) < 2:
        return np.zeros(per_layer.shape[:-1]) if per_layer.ndim > 1 else np.float64(0.0)
    return slope(depth, per_layer)


def fixedness_report(shards: Sequence[MeanAttention] | MeanAttention, *, n_boot: int = 500,
                     seed: int = 0, control: Sequence[MeanAttention] | MeanAttention | None = None,
                     row_mass: Sequence[torch.Tensor] | None = None,
                     control_row_mass: Sequence[torch.Tensor] | None = None) -> FixednessReport:
    """Fixedness per head and per layer, with intervals from resampling query shards.

    Args:
        shards: the output of :func:`attnlab.core.streaming.sharded_mean_attention`,
            or one accumulator (then every interval collapses to its point).
        n_boot: bootstrap resamples of the shards.
        seed: seed of the resampling.
        control: shards of the control run (same model, layers and length),
            e.g. over :func:`attnlab.data.querygen.random_token_queries`.
        row_mass, control_row_mass: each shard's summed row content mass ``[L, H, n]``
            (:func:`row_content_mass`) to weight the rows by; None counts every row the same.
            The content reading (:attr:`FixednessReport.content`) is always weighted.
    """
    parts = _as_parts(shards)
    whole = merge_all(parts)
    mass = None if row_mass is None else list(row_mass)
    whole_mass = None if mass is None else torch.stack(mass).sum(dim=0)  # (L, H, n)
    fixed, info, null = head_numbers(whole, whole_mass)  # (L, H) each
    uniform = ~(info >= UNIFORM_INFO)  # (L, H): also True where the information is NaN
    sharp = whole.sharpness().numpy()  # (L, H)
    depth = np.asarray(whole.layers, dtype=float)  # (L,)
    boots, info_boots = _boots(parts, n_boot, seed, mass)  # (B, L, H) each
    per_layer = layer_means(fixed, uniform)  # (L,)
    boot_layer = layer_means(boots, uniform)  # (B, L)
    shown = ~uniform & ~np.isnan(fixed)
    n = len(parts)
    report = FixednessReport(
        layers=list(whole.layers), fixedness=fixed, head_interval=interval_from_samples(fixed, boots, n=n),
        information=interval_from_samples(info, info_boots, n=n), uniform=uniform, null_share=null,
        js_score=whole.js_score().numpy(), sharpness=sharp,
        per_layer=interval_from_samples(per_layer, boot_layer, n=n),
        slope=interval_from_samples(_slopes(depth, per_layer), _slopes(depth, boot_layer), n=n),
        depth_rho=correlation(depth, per_layer) if len(depth) > 2 else float("nan"),
        sharp_fixed_rho=correlation(sharp[shown], fixed[shown]) if shown.sum() > 2 else float("nan"),
        last_is_most_fixed_share=float((np.nan_to_num(boot_layer, nan=-np.inf).argmax(axis=1)
                                        == len(depth) - 1).mean()),
        count=whole.count, n_shards=n, model_name=whole.model_name, head_boots=boots, info_boots=info_boots,
        row_weighted=mass is not None,
    )
    if mass is not None:
        report.unweighted = head_numbers(whole)[0]
    if control is not None:
        _add_control(report, _as_parts(control), n_boot, seed, control_row_mass)
    if whole.special:
        report.special_weight = whole.special_weight().numpy()
    if all(p.content is not None for p in parts):
        controls = _as_parts(control) if control is not None else None
        with_content = controls is not None and all(c.content is not None for c in controls)
        report.content = fixedness_report(
            [p.content for p in parts], n_boot=n_boot, seed=seed,
            control=[c.content for c in controls] if with_content else None,
            row_mass=[row_content_mass(p) for p in parts],
            control_row_mass=[row_content_mass(c) for c in controls] if with_content else None)
        report.content.reading = CONTENT_KEYS
        report.content.special_weight = report.special_weight
    return report


def _as_parts(shards: Sequence[MeanAttention] | MeanAttention) -> list[MeanAttention]:
    return [shards] if isinstance(shards, MeanAttention) else list(shards)


def _boots(parts: list[MeanAttention], n_boot: int, seed: int,
           row_mass: list[torch.Tensor] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``[B, L, H]`` resampled fixedness and information; ``[1, L, H]`` (the point) for a single shard."""
    if len(parts) > 1:
        return bootstrap_numbers(parts, n_boot, seed, row_mass)
    share, info, _sharp = head_numbers(merge_all(parts), None if row_mass is None else row_mass[0])
    return share[None], info[None]


def _add_control(report: FixednessReport, parts: list[MeanAttention], n_boot: int, seed: int,
                 row_mass: Sequence[torch.Tensor] | None = None) -> None:
    """Fill the control fields of ``report`` from the control run's shards (rows weighted by ``row_mass``)."""
    whole = merge_all(parts)
    if whole.layers != report.layers:
        raise ValueError(f"the control averaged layers {whole.layers}, the real run {report.layers}")
    mass = None if row_mass is None else list(row_mass)
    control, info, _sharp = head_numbers(whole, None if mass is None else torch.stack(mass).sum(dim=0))  # (L, H)
    c_uniform = ~(info >= UNIFORM_INFO)  # (L, H)
    boots, _infos = _boots(parts, n_boot, seed + 1, mass)  # (B', L, H): resampled independently of the real run
    real_boots = report.head_boots  # (B, L, H)
    k = min(len(boots), len(real_boots))
    if len(boots) == 1 or len(real_boots) == 1:  # one side without resamples: the other side's spread only
        diff_boots = real_boots - boots if len(boots) == 1 else report.fixedness[None] - boots
    else:
        diff_boots = real_boots[:k] - boots[:k]  # (k, L, H)
    n = min(len(parts), report.n_shards)
    skip = report.uniform | c_uniform  # (L, H): compared only where both runs have information
    diff = report.fixedness - control  # (L, H)
    diff_layer, diff_layer_boots = layer_means(diff, skip), layer_means(diff_boots, skip)  # (L,), (k, L)
    depth = np.asarray(report.layers, dtype=float)
    report.control = control
    report.control_uniform = c_uniform
    report.control_per_layer = interval_from_samples(layer_means(control, c_uniform), layer_means(boots, c_uniform),
                                                     n=len(parts))
    report.difference = interval_from_samples(diff, diff_boots, n=n)
    report.difference_per_layer = interval_from_samples(diff_layer, diff_layer_boots, n=n)
    report.difference_slope = interval_from_samples(_slopes(depth, diff_layer), _slopes(depth, diff_layer_boots), n=n)
    report.control_count = whole.count
    report.control_shards = len(parts)


# --------------------------------------------------------------------------- more queries, steadier answer


@dataclass
class FixednessCurve:
    """Fixedness after the first ``counts[k]`` queries of a run (nested prefixes).

    Attributes:
        counts: queries averaged at each point, increasing.
        fixedness: ``[K, L, H]``, each head's fixedness after ``counts[k]`` queries.
        layers: the model layers of the second axis.
    """

    counts: list[int]
    fixedness: np.ndarray  # (K, L, H)
    layers: list[int]

    def per_layer(self) -> np.ndarray:
        """``[K, L]``: mean fixedness of each layer's heads at each count."""
        return self.fixedness.mean(axis=2)


def leading_pieces(m: LoadedModel, texts: Iterator[str], bounds: Sequence[int], **kwargs) -> list[MeanAttention]:
    """Accumulators of texts ``1..bounds[0]``, ``bounds[0]+1..bounds[1]``, ... read from the iterator ``texts``.

    The iterator is left after text ``bounds[-1]``, so the rest of the run
    (e.g. :func:`attnlab.core.streaming.sharded_mean_attention`) continues
    where the pieces stop. Merged, the pieces are the first shard; kept apart,
    they are the first points of :func:`fixedness_curve`. Keyword arguments go
    to :func:`attnlab.core.streaming.mean_attention`.
    """
    if list(bounds) != sorted(set(bounds)) or not bounds or bounds[0] < 2:
        raise ValueError(f"bounds must increase from at least 2 (a piece needs a variance), got {list(bounds)}")
    pieces, done = [], 0
    for bound in bounds:
        chunk = list(itertools.islice(texts, bound - done))
        if len(chunk) < bound - done:
            raise ValueError(f"the texts ran out after {done + len(chunk)} of the first {bound}")
        pieces.append(mean_attention(m, chunk, progress=False, **kwargs))
        done = bound
    return pieces


def decades(total: int) -> list[int]:
    """10, 100, 1,000, ... below ``total``, then ``total``: the counts of the curve."""
    out, c = [], 10
    while c < total:
        out.append(c)
        c *= 10
    return out + [total]


def fixedness_curve(parts: Sequence[MeanAttention], counts: Sequence[int]) -> FixednessCurve:
    """Fixedness of every head after the first ``counts`` queries of ``parts`` (in order).

    ``parts`` are consecutive accumulators of one stream (e.g. the first 10
    queries, the next 90, the next 900, then shards of 1,000); every count must
    fall on a boundary between parts, so each point is exact.

    Raises:
        ValueError: a count that is not a cumulative count of the parts.
    """
    running = None
    reached: dict[int, np.ndarray] = {}
    for part in parts:
        running = part if running is None else running.merge(part)
        if running.count in counts:
            reached[running.count] = running.fixedness().numpy()
    missing = [c for c in counts if c not in reached]
    if missing:
        bounds = list(itertools.accumulate(p.count for p in parts))
        raise ValueError(f"counts {missing} do not fall between parts (cumulative counts: {bounds[:8]}...)")
    ordered = sorted(set(counts))
    return FixednessCurve(ordered, np.stack([reached[c] for c in ordered]), list(parts[0].layers))
