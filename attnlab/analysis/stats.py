"""The statistics every analysis uses: bootstrap intervals, slopes, correlations
and permutation tests. One way to do each, so every lesson's numbers mean the same.

* An :class:`Interval` is an estimate with a percentile-bootstrap interval.
  ``estimate``, ``low`` and ``high`` are floats or arrays of one shape.
* :func:`bootstrap` resamples the *units* of the first axis (queries, texts,
  shards, heads) with replacement and recomputes a statistic. With
  ``simultaneous=True`` the intervals of an array statistic (one per head, say)
  hold *together* with the confidence level (:func:`simultaneous_from_samples`),
  which a "some head ..." verdict needs: among 144 heads with 95% intervals each,
  about 7 lie wholly on the wrong side of a line by chance alone.
* :func:`slope` is the least-squares slope; :func:`bootstrap_slope` its interval.
* :func:`bootstrap_correlation` resamples pairs; :func:`permutation_test`
  shuffles group labels to ask whether a difference of means beats chance.

Resampling uses numpy's ``default_rng(seed)``: a fixed seed gives the same
interval on every machine.
"""

from __future__ import annotations

import functools
import warnings
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, TypeVar

import numpy as np
from scipy import stats as _scipy_stats

from attnlab.core.language import N_
from attnlab.core.memo import forget, memo
from attnlab.core.records import nan_for_none

Statistic = Callable[[np.ndarray], "np.ndarray | float"]


@dataclass(frozen=True)
class Interval:
    """An estimate with its ``level`` confidence interval ``[low, high]`` from ``n`` units.

    Fields are floats, or arrays of one shape (e.g. ``[L, H]``, one interval per head).
    ``family``: how many intervals share the coverage ``level``: 1 when each interval
    covers its own value with that probability; K when the K intervals of the array
    cover all K values *together* (:func:`simultaneous_from_samples`).

    A scalar bootstrap interval also keeps, in memory only (never in a record), its resamples
    ``samples`` ``(B,)`` and ``draws``, which units it drew and how (:func:`draws_of`): two intervals
    with equal ``draws`` resampled the same units the same way, so their difference can be taken
    resample by resample (:func:`paired_difference`).
    """

    estimate: "np.ndarray | float"
    low: "np.ndarray | float"
    high: "np.ndarray | float"
    level: float = 0.95
    n: int = 0
    family: int = 1
    samples: "np.ndarray | None" = field(default=None, compare=False, repr=False)
    draws: "tuple | None" = field(default=None, compare=False, repr=False)

    def above(self, value: float = 0.0) -> "np.ndarray | bool":
        """True where the whole interval lies above ``value``."""
        return _plain(np.asarray(self.low) > value)

    def below(self, value: float = 0.0) -> "np.ndarray | bool":
        """True where the whole interval lies below ``value``."""
        return _plain(np.asarray(self.high) < value)

    def contains(self, value: float) -> "np.ndarray | bool":
        """True where ``value`` lies inside the interval (the data cannot rule it out)."""
        return _plain((np.asarray(self.low) <= value) & (value <= np.asarray(self.high)))

    def to_record(self) -> dict:
        """Plain JSON-ready numbers (arrays become nested lists)."""
        return {"estimate": np.asarray(self.estimate).tolist(), "low": np.asarray(self.low).tolist(),
                "high": np.asarray(self.high).tolist(), "level": self.level, "n": self.n, "family": self.family}

    @classmethod
    def from_record(cls, data: dict) -> "Interval":
        def back(v):
            v = nan_for_none(v)  # a NaN bound was saved as null
            return float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float)

        return cls(back(data["estimate"]), back(data["low"]), back(data["high"]),
                   float(nan_for_none(data["level"])), int(data["n"]), int(data.get("family", 1)))

    def __str__(self) -> str:
        if np.ndim(self.estimate) == 0:
            return f"{float(self.estimate):.3g} [{float(self.low):.3g}, {float(self.high):.3g}]"
        return f"Interval(shape {np.shape(self.estimate)}, level {self.level:.0%}, n {self.n})"


def _plain(a: np.ndarray) -> "np.ndarray | bool":
    return bool(a) if a.ndim == 0 else a


def _quantiles(boots: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    alpha = (1.0 - level) / 2
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)  # no value: a NaN bound, cannot tell
        low, high = np.nanquantile(boots, [alpha, 1 - alpha], axis=0)
    return low, high


def interval_from_samples(estimate, boots, *, level: float = 0.95, n: int = 0) -> Interval:
    """The percentile interval of bootstrap samples ``boots`` ``[B, ...]`` around ``estimate``."""
    boots = np.asarray(boots, dtype=float)
    low, high = _quantiles(boots, level)
    shape = np.shape(estimate)
    if shape == ():
        return Interval(float(estimate), float(low), float(high), level, n)
    return Interval(np.asarray(estimate, dtype=float), low.reshape(shape), high.reshape(shape), level, n)


def simultaneous_from_samples(estimate, boots, *, level: float = 0.95, n: int = 0, se=None,
                              boot_se=None) -> Interval:
    """Intervals for every column of ``estimate`` that cover all columns *together* with
    probability ``level`` (the max-statistic bootstrap).

    Each column ``k`` gets ``estimate_k +- c * se_k``. ``c`` is the ``level`` quantile over
    the resamples of the *largest* studentised deviation ``max_k |boots_bk - estimate_k| /
    se_bk``: in 95% of the resamples every column stays within its interval at once. With
    one column this is a (symmetric) 95% interval; with 144 heads ``c`` is near 3.6
    instead of 1.96.

    Args:
        estimate: the statistic on all units, float or array ``[...]``.
        boots: ``[B, ...]`` its bootstrap samples (from resampling the units: queries,
            texts; never the columns). NaN samples are left out of their column.
        se, boot_se: the standard error of each column on all units ``[...]`` and in
            each resample ``[B, ...]`` (the bootstrap-t, which keeps the heavier tails of
            a mean over few units). Without them, ``se`` is the standard deviation of the
            samples and every resample is divided by it.

    Returns:
        :class:`Interval` with ``family`` = the number of columns that vary (a column whose
        samples do not vary gets the point interval and does not count).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    est = np.asarray(estimate, dtype=float)
    b = np.asarray(boots, dtype=float)
    flat_est = est.reshape(-1)  # (K,)
    flat = b.reshape(b.shape[0], -1)  # (B, K)
    if flat.shape[1] != flat_est.size:
        raise ValueError(f"boots {b.shape} do not match the estimate's shape {est.shape}")
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column without values has no spread: it is left out
        if se is None:
            scale = np.nanstd(flat, axis=0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat_est.size)  # (K,)
            boot_scale = np.broadcast_to(scale, flat.shape)  # (B, K)
        else:
            scale = np.asarray(se, dtype=float).reshape(-1)
            boot_scale = np.asarray(boot_se, dtype=float).reshape(flat.shape)
    varies = np.isfinite(scale) & (scale > 0) & np.isfinite(flat_est)  # (K,)
    c = 0.0
    if varies.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.abs(flat[:, varies] - flat_est[varies]) / boot_scale[:, varies]  # (B, K')
        t = np.where(np.isnan(t), -np.inf, t)  # a column without a value in a resample does not count there
        t_max = t.max(axis=1)  # (B,): the largest deviation in each resample
        kept = t_max[np.isfinite(t_max) | (t_max == np.inf)]
        if kept.size:
            c = float(np.quantile(kept, level))
    half = np.where(varies, c * np.nan_to_num(scale), 0.0)  # (K,)
    low, high = flat_est - half, flat_est + half
    family = int(varies.sum())
    if est.ndim == 0:
        return Interval(float(flat_est[0]), float(low[0]), float(high[0]), level, n, family)
    return Interval(est, low.reshape(est.shape), high.reshape(est.shape), level, n, family)


def _mean_samples_with_se(v: np.ndarray, n_boot: int, seed: int):
    """``(estimate [...], se [...], boots [B, ...], boot_se [B, ...], n)`` of the mean over the
    first axis of ``v`` ``[N, ...]`` (rows with NaN dropped), each resample's own standard error
    computed from its resample weights (the sample standard deviation over sqrt(N))."""
    v = v[~np.isnan(v.reshape(v.shape[0], -1)).any(axis=1)]
    n = v.shape[0]
    if n == 0:
        raise ValueError("every value is NaN: nothing to average")
    flat = v.reshape(n, -1)  # (N, K)
    weights = resample_counts(n, n_boot, seed) / n  # (B, N)
    means = weights @ flat  # (B, K)
    second = weights @ (flat * flat)  # (B, K)
    spread = np.maximum(second - means * means, 0.0) * n / max(n - 1, 1)  # (B, K): sample variance per resample
    boot_se = np.sqrt(spread / n)
    se = flat.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(flat.shape[1])
    shape = v.shape[1:]
    return (flat.mean(axis=0).reshape(shape), se.reshape(shape), means.reshape((n_boot,) + shape),
            boot_se.reshape((n_boot,) + shape), n)


def resample_counts(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """``[n_boot, n]``: how often each of ``n`` units is drawn in each resample (rows sum to ``n``)."""
    if n < 1:
        raise ValueError("resampling needs at least one unit")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)


def bootstrap(values, statistic: Statistic | None = None, *, n_boot: int = 1000, level: float = 0.95,
              seed: int = 0, simultaneous: bool = False) -> Interval:
    """Percentile-bootstrap interval of ``statistic`` over the units of the first axis.

    Args:
        values: ``[N, ...]``, one row per unit (query, text, shard, head).
        statistic: maps ``[N', ...]`` rows to a float or an array; default the
            mean over the first axis (computed exactly by resample weights).
            Rows with NaN are dropped for the default mean.
        n_boot: resamples.
        level: confidence level, e.g. 0.95.
        simultaneous: for an array statistic, intervals that hold for all its entries
            together (:func:`simultaneous_from_samples`, ``family`` = the entries);
            otherwise each entry's own percentile interval.

    Returns:
        :class:`Interval` of the statistic on all rows, with its interval.
    """
    if simultaneous and statistic is None:  # the bootstrap-t of a mean: every resample has its own standard error
        v = np.asarray(values, dtype=float)
        if v.ndim < 1 or v.shape[0] == 0:
            raise ValueError("bootstrap needs at least one value")
        estimate, se, boots, boot_se, n = _mean_samples_with_se(v, n_boot, seed)
        if np.ndim(estimate) == 0:
            estimate = float(estimate)
        return simultaneous_from_samples(estimate, boots, level=level, n=n, se=se, boot_se=boot_se)
    estimate, boots, n = bootstrap_samples(values, statistic, n_boot=n_boot, seed=seed)
    if simultaneous:
        return simultaneous_from_samples(estimate, boots, level=level, n=n)
    interval = interval_from_samples(estimate, boots, level=level, n=n)
    if np.ndim(estimate) != 0:
        return interval
    v = np.asarray(values, dtype=float)
    kept = (~np.isnan(v.reshape(v.shape[0], -1)).any(axis=1) if statistic is None
            else np.ones(v.shape[0], dtype=bool))  # (N,): the rows the resamples drew from
    method = "mean" if statistic is None else "rows"
    return replace(interval, samples=np.asarray(boots, dtype=float), draws=draws_of(method, kept, seed, n_boot))


def bootstrap_samples(values, statistic: Statistic | None = None, *, n_boot: int = 1000,
                      seed: int = 0) -> tuple["np.ndarray | float", np.ndarray, int]:
    """``(estimate, boots [n_boot, ...], n)``: the statistic on all rows, on each resample of
    the rows, and the number of rows (see :func:`bootstrap` for the arguments)."""
    v = np.asarray(values, dtype=float)
    if v.ndim < 1 or v.shape[0] == 0:
        raise ValueError("bootstrap needs at least one value")
    if statistic is None:
        v = v[~np.isnan(v.reshape(v.shape[0], -1)).any(axis=1)]
        if v.shape[0] == 0:
            raise ValueError("every value is NaN: nothing to average")
        n = v.shape[0]
        flat = v.reshape(n, -1)  # (N, K)
        boots = resample_counts(n, n_boot, seed) / n @ flat  # (B, K): one mean per resample
        estimate = flat.mean(axis=0).reshape(v.shape[1:])
        if estimate.ndim == 0:
            estimate = float(estimate)
        return estimate, boots.reshape((n_boot,) + v.shape[1:]), n
    n = v.shape[0]
    rng = np.random.default_rng(seed)
    boots = np.stack([np.asarray(statistic(v[rng.integers(0, n, n)]), dtype=float) for _ in range(n_boot)])
    est = statistic(v)
    return (est if np.ndim(est) else float(est)), boots, n


def bootstrap_mean(values, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                   simultaneous: bool = False) -> Interval:
    """Mean over the first axis with its bootstrap interval (rows with NaN dropped);
    ``simultaneous``: as in :func:`bootstrap`."""
    return bootstrap(values, None, n_boot=n_boot, level=level, seed=seed, simultaneous=simultaneous)


def slope(x, y) -> "np.ndarray | float":
    """Least-squares slope of ``y`` ``[..., K]`` against ``x`` ``[K]`` (one per leading index)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or y.shape[-1] != x.shape[0] or x.shape[0] < 2:
        raise ValueError(f"slope needs x [K] (K >= 2) and y [..., K], got {x.shape} and {y.shape}")
    xc = x - x.mean()
    if not (xc * xc).sum() > 0:
        raise ValueError("x is constant: no slope")
    out = ((y - y.mean(axis=-1, keepdims=True)) * xc).sum(axis=-1) / (xc * xc).sum()
    return float(out) if np.ndim(out) == 0 else out


def bootstrap_slope(x, per_unit, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> Interval:
    """Slope against ``x`` ``[K]`` of the mean over units of ``per_unit`` ``[N, K]``, resampling units."""
    per_unit = np.asarray(per_unit, dtype=float)
    return bootstrap(per_unit, lambda v: slope(x, v.mean(axis=0)), n_boot=n_boot, level=level, seed=seed)


def correlation(x, y, method: str = "spearman") -> float:
    """Spearman (rank) or Pearson correlation of two flat samples; NaN when one is constant."""
    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"x and y need the same number (>= 3) of values, got {a.size} and {b.size}")
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    if method == "spearman":
        return float(_scipy_stats.spearmanr(a, b)[0])
    return float(_scipy_stats.pearsonr(a, b)[0])


def bootstrap_correlation(x, y, *, method: str = "spearman", n_boot: int = 2000, level: float = 0.95,
                          seed: int = 0) -> Interval:
    """Correlation of paired values with an interval from resampling the pairs.

    Resamples in which one side is constant have no correlation and are left out.
    """
    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    r = correlation(a, b, method)
    low, high = _interval_of_correlations(np.stack([a, b], axis=1), method, n_boot, level, seed)
    return Interval(r, low, high, level, a.size)


def _interval_of_correlations(pairs: np.ndarray, method: str, n_boot: int, level: float,
                              seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    n = pairs.shape[0]
    boots = [correlation(*pairs[rng.integers(0, n, n)].T, method) for _ in range(n_boot)]
    low, high = _quantiles(np.asarray(boots, dtype=float), level)  # NaN resamples are ignored
    return float(low), float(high)


def permutation_test(group_a, group_b, *, n_perm: int = 5000, seed: int = 0,
                     alternative: str = "greater") -> tuple[float, float]:
    """Is mean(a) - mean(b) larger (or smaller, or different) than label shuffling gives?

    Returns:
        ``(difference, p)``: the observed difference of means and the share of
        label permutations at least as extreme (the observed labelling counts as
        one permutation, so p is never 0).
    """
    a = np.asarray(group_a, dtype=float).ravel()
    b = np.asarray(group_b, dtype=float).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("both groups need at least one value")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    both = np.concatenate([a, b])
    k = a.size
    diff = a.mean() - b.mean()
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(both) for _ in range(n_perm)])  # (P, N)
    null = perms[:, :k].mean(axis=1) - perms[:, k:].mean(axis=1)
    if alternative == "greater":
        extreme = null >= diff - 1e-12
    elif alternative == "less":
        extreme = null <= diff + 1e-12
    else:
        extreme = np.abs(null) >= abs(diff) - 1e-12
    return float(diff), float((extreme.sum() + 1) / (n_perm + 1))


#: the fewest resampled units (queries, texts, shards, seeds) a bootstrap interval
#: may rest on before a verdict built on it must say "cannot tell"
MIN_UNITS = 8


# --------------------------------------------------------------------------- one measurement, many thresholds
M = TypeVar("M", bound=Callable)

#: the records measured inside the active :func:`measurements_reused` block (None: no block is active)
_measured: list | None = None


@contextmanager
def measurements_reused() -> Iterator[None]:
    """Inside the block, a measure marked :func:`reusable` is computed once per record and arguments.

    A sensitivity table judges one record under many thresholds: the thresholds change, the
    bootstrap intervals measured on the record do not. The results are held by the package's one
    memo (:func:`attnlab.core.memo.memo`, with the record in the model's place) and forgotten when the
    block ends: outside it every call computes (a record may be changed between two calls), inside it
    the records must not change.
    """
    global _measured
    if _measured is not None:  # nested: the outer block's results hold
        yield
        return
    _measured = []
    try:
        yield
    finally:
        for record in _measured:
            forget(record)
        _measured = None


def reusable(measure: M) -> M:
    """Mark ``measure(record, *args, **kwargs)`` (a deterministic function of the record and its
    hashable arguments) as reusable inside :func:`measurements_reused`."""

    @functools.wraps(measure)
    def once(record, *args, **kwargs):
        if _measured is None:
            return measure(record, *args, **kwargs)
        if not any(r is record for r in _measured):
            _measured.append(record)
        return memo(record, measure.__qualname__, (args, tuple(sorted(kwargs.items()))),
                    lambda: measure(record, *args, **kwargs), smoke=False)  # a record's numbers know no mode

    return once  # type: ignore[return-value]


def too_few_units(interval: Interval, need: int = MIN_UNITS) -> str | None:
    """Why a verdict resting on ``interval`` must be "cannot tell", or None when it has enough units.

    A percentile interval from a handful of units (smoke mode's 4 shards, say) is far
    too narrow to decide anything: its resamples repeat the same few values.
    """
    if interval.n < need:
        return N_("the interval rests on {n} resampled units; deciding needs at least {need}").format(
            n=interval.n, need=need)
    return None


def too_small_groups(group_a, group_b, need: int = 2) -> str | None:
    """Why two groups cannot be compared (one has fewer than ``need`` values), or None when both can.

    Every claim that compares two groups asks this first and answers "cannot tell"
    with the reason, instead of calling :func:`permutation_test` on an empty group.
    """
    sizes = (np.asarray(group_a).size, np.asarray(group_b).size)
    if min(sizes) < need:
        return N_("one group is too small to compare (sizes {a} and {b}; each needs at least {need})").format(
            a=sizes[0], b=sizes[1], need=need)
    return None


#: the three sides of a threshold an interval can be on: wholly above, wholly below, straddling it
ABOVE, BELOW, STRADDLES = 1, -1, 0


def side_of(interval: Interval, threshold: float) -> "np.ndarray | int":
    """Per unit of the interval (e.g. each head ``[L, H]``): :data:`ABOVE` when the
    whole interval lies above ``threshold``, :data:`BELOW` when it lies below, and
    :data:`STRADDLES` when it reaches both sides (the data cannot tell)."""
    low, high = np.asarray(interval.low, dtype=float), np.asarray(interval.high, dtype=float)
    out = np.where(low > threshold, ABOVE, np.where(high < threshold, BELOW, STRADDLES)).astype(int)
    return int(out) if out.ndim == 0 else out


def bootstrap_share_above(values, threshold: float, *, n_boot: int = 1000, level: float = 0.95,
                          seed: int = 0, column_weights=None) -> Interval:
    """Share of the columns (e.g. heads) whose mean over units lies above ``threshold``,
    with an interval from resampling the *units* (rows: queries, texts), never the columns.

    Args:
        values: ``[N, ...]``: one row per unit, one column per head (any trailing
            shape); rows with NaN are dropped.

        column_weights: optional, the trailing shape: each column counts in the share by its weight
            (e.g. a head by its content mass); default every column the same.

    Returns:
        scalar :class:`Interval`: the share on all rows, and how far it moves when
        the rows are resampled (each resample labels every head anew).
    """
    return bootstrap_share_all_above([(values, threshold)], n_boot=n_boot, level=level, seed=seed,
                                     column_weights=column_weights)


def bootstrap_share_all_above(pairs, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                              column_weights=None) -> Interval:
    """Like :func:`bootstrap_share_above` for a head that must pass several tests at once.

    Args:
        pairs: ``[(values, threshold), ...]``, every ``values`` ``[N, ...]`` of one
            shape over the same N units; a head counts when the mean of each lies
            above its threshold. The units are resampled together (a unit with a
            NaN in any of them is dropped).
    """
    arrays = [np.asarray(v, dtype=float) for v, _ in pairs]
    if not arrays or arrays[0].ndim < 2 or arrays[0].shape[0] == 0:
        raise ValueError("need values [N, ...] with at least one unit and one column")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError(f"every value array needs the same shape, got {[a.shape for a in arrays]}")
    flat = np.stack([a.reshape(a.shape[0], -1) for a in arrays])  # (Q, N, K)
    flat = flat[:, ~np.isnan(flat).any(axis=(0, 2))]  # (Q, N', K)
    n = flat.shape[1]
    if n == 0:
        raise ValueError("every unit has a NaN: nothing to average")
    thresholds = np.array([float(t) for _, t in pairs])[:, None, None]  # (Q, 1, 1)
    k = flat.shape[2]
    w = np.ones(k) if column_weights is None else np.clip(np.nan_to_num(np.asarray(column_weights, float).ravel()), 0, None)
    if w.shape != (k,) or not w.sum() > 0:
        raise ValueError(f"column_weights must have {k} values, not all zero")
    w = w / w.sum()  # (K,)
    weights = resample_counts(n, n_boot, seed) / n  # (B, N)
    means = np.einsum("bn,qnk->qbk", weights, flat)  # (Q, B, K): each quantity's mean per resample
    boots = (means > thresholds).all(axis=0) @ w  # (B,): (weighted) share of heads passing every test
    point = (flat.mean(axis=1) > thresholds[:, 0]).all(axis=0) @ w
    return interval_from_samples(float(point), boots, level=level, n=n)


def permutation_correlation_within(x, y, groups, *, n_perm: int = 2000, seed: int = 0,
                                   alternative: str = "less", method: str = "spearman") -> tuple[float, float]:
    """Is ``x`` related to ``y`` inside the groups, beyond what shuffling ``x`` within each group gives?

    The statistic is the mean over groups of the within-group correlation (groups where it is
    undefined are left out). The null keeps every group's values and breaks the pairing by
    permuting ``x`` among the members of its own group, so a difference *between* groups
    (depth, say) cannot make the statistic look significant.

    Returns:
        ``(statistic, p)``: p is the share of permutations at least as extreme in the direction of
        ``alternative`` (``"less"``, ``"greater"`` or ``"two-sided"``), the observed one counted.
    """
    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    g = np.asarray(groups).ravel()
    if not (a.size == b.size == g.size) or a.size == 0:
        raise ValueError("x, y and groups must be non-empty and of one length")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    members = [idx for idx in (np.nonzero(g == label)[0] for label in np.unique(g)) if idx.size >= 3]
    if method == "spearman":
        a, b = a.copy(), b.copy()
        for idx in members:  # Spearman = Pearson of (tie-averaged) ranks, and ranks permute with values
            a[idx], b[idx] = _scipy_stats.rankdata(a[idx]), _scipy_stats.rankdata(b[idx])
    elif method != "pearson":
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    rng = np.random.default_rng(seed)
    observed_parts, null_parts = [], []
    for idx in members:
        xs, ys = a[idx], b[idx] - b[idx].mean()
        if np.ptp(xs) == 0 or np.ptp(ys) == 0:
            continue  # undefined in this group
        xs = xs - xs.mean()
        scale = np.sqrt((xs ** 2).sum() * (ys ** 2).sum())
        observed_parts.append(float(xs @ ys / scale))
        perms = np.stack([xs[rng.permutation(idx.size)] for _ in range(n_perm)])  # (P, n_g)
        null_parts.append(perms @ ys / scale)  # (P,)
    if not observed_parts:
        return float("nan"), float("nan")
    observed = float(np.mean(observed_parts))
    null = np.mean(null_parts, axis=0)  # (P,)
    if alternative == "less":
        extreme = null <= observed + 1e-12
    elif alternative == "greater":
        extreme = null >= observed - 1e-12
    else:
        extreme = np.abs(null) >= abs(observed) - 1e-12
    return observed, float((extreme.sum() + 1) / (n_perm + 1))


def _weighted_means(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``[B, G, K]``: per row of ``weights`` ``[B, N]`` the weighted mean over the N units of
    ``values`` ``[N, G, K]``, each column leaving out its NaN units (NaN where none is left)."""
    n = values.shape[0]
    flat = values.reshape(n, -1)  # (N, G * K)
    finite = np.isfinite(flat)
    total = weights @ np.where(finite, flat, 0.0)  # (B, G * K)
    count = weights @ finite.astype(float)  # (B, G * K): weight of the units that have a value
    means = np.full(total.shape, np.nan)
    np.divide(total, count, out=means, where=count > 0)
    return means.reshape((weights.shape[0],) + values.shape[1:])


def _correlations_per_group(a: np.ndarray, b: np.ndarray, method: str) -> np.ndarray:
    """``[..., G]``: the correlation across the last axis (K columns) of ``a`` and ``b`` ``[..., G, K]``;
    NaN where one side is constant or has a NaN (the same convention as :func:`correlation`)."""
    if method == "spearman":
        a = _scipy_stats.rankdata(a, axis=-1)  # ties share their mean rank; a NaN makes its row NaN
        b = _scipy_stats.rankdata(b, axis=-1)
    elif method != "pearson":
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    ac = a - a.mean(axis=-1, keepdims=True)
    bc = b - b.mean(axis=-1, keepdims=True)
    scale = np.sqrt((ac * ac).sum(axis=-1) * (bc * bc).sum(axis=-1))  # (..., G)
    constant = (np.ptp(a, axis=-1) == 0) | (np.ptp(b, axis=-1) == 0)
    out = np.full(scale.shape, np.nan)
    np.divide((ac * bc).sum(axis=-1), scale, out=out, where=~constant & (scale > 0))
    return np.clip(out, -1.0, 1.0)


def bootstrap_correlation_of_means(x, y, *, method: str = "spearman", n_boot: int = 2000, level: float = 0.95,
                                   seed: int = 0) -> Interval:
    """Per group, the correlation across its columns of the unit-means of ``x`` and of ``y``,
    with an interval from resampling the *units*, paired.

    Typical use: units = queries, groups = layers, columns = the heads of a layer. Each
    head gets one value of ``x`` and one of ``y``, the mean over the queries; the
    statistic is the rank correlation of those means across the heads of a layer. The
    heads are the whole population, so they are never resampled: the noise is in the
    queries, so every resample draws queries with replacement (one weights matrix from
    :func:`resample_counts`, the same draws for ``x`` and ``y``), recomputes every head's
    two means and then each layer's correlation.

    Args:
        x, y: ``[N, G, K]`` per-unit values over the same N units, in the same order;
            NaN where a unit has no value (it is left out of that column's mean, as in
            :func:`bootstrap_mean`, so each mean is the one a lesson prints). Units with
            no value in either are dropped.
        method: ``"spearman"`` (rank) or ``"pearson"``.

    Returns:
        :class:`Interval` with arrays ``(G,)``; ``n`` = the units resampled. Resamples in
        which a group's correlation is undefined (a constant side) are left out of its interval.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(f"x and y must both be [units, groups, columns], got {a.shape} and {b.shape}")
    if a.shape[2] < 3:
        raise ValueError(f"a correlation needs at least 3 columns per group, got {a.shape[2]}")
    keep = np.isfinite(a).any(axis=(1, 2)) | np.isfinite(b).any(axis=(1, 2))  # (N,): units with any value
    a, b = a[keep], b[keep]
    n = a.shape[0]
    if n == 0:
        raise ValueError("no unit has a value in x or y")
    everything = np.ones((1, n))  # (1, N): the estimate weighs every unit once
    estimate = _correlations_per_group(_weighted_means(everything, a), _weighted_means(everything, b), method)[0]
    weights = resample_counts(n, n_boot, seed).astype(float)  # (B, N): one draw of the units per resample
    boots = _correlations_per_group(_weighted_means(weights, a), _weighted_means(weights, b), method)  # (B, G)
    return interval_from_samples(estimate, boots, level=level, n=n)


def chance_beyond(effect: float, line: float, half_width: float, level: float = 0.95) -> float:
    """The chance that a normal estimate of ``effect`` with an interval of ``half_width`` (at ``level``)
    lands with its whole interval beyond ``line`` (above it when ``effect >= line`` is the side asked, i.e.
    the interval's low end above the line): ``Phi((effect - line) / se - z)``, ``se = half_width / z``.

    The power of a rule that decides when an interval clears a line, at a given noise: e.g. the chance that
    a model beating its untrained twin by twice the floor reads "holds" (``effect = 2 floor``,
    ``line = floor``). A zero half-width gives 1 or 0."""
    z = float(_scipy_stats.norm.ppf(0.5 + level / 2))
    if not half_width > 0:
        return float(effect > line)
    return float(_scipy_stats.norm.cdf((effect - line) / (half_width / z) - z))


def draws_of(method: str, kept: np.ndarray, seed: int, n_boot: int) -> tuple:
    """What identifies a bootstrap's resamples: its method, how many units there were and which of
    them it kept (a checksum of the boolean mask ``kept``, in units' order), its seed and the number of
    resamples. Two intervals with equal draws drew the same units by position in every resample."""
    kept = np.asarray(kept, dtype=bool)
    return (method, int(kept.size), zlib.crc32(np.packbits(kept).tobytes()), int(seed), int(n_boot))


def paired_difference(model: Interval, twin: Interval) -> Interval | None:
    """``model - twin`` from the **same resamples** of the same units (texts, queries): the percentile
    interval of the resample-by-resample differences, which counts what the two runs share (the
    texts' own spread) once. None when either interval kept no resamples or they drew differently
    (other units, another seed): then only :func:`difference_interval` applies."""
    if model.samples is None or twin.samples is None or model.draws is None or model.draws != twin.draws:
        return None
    gaps = np.asarray(model.samples, dtype=float) - np.asarray(twin.samples, dtype=float)  # (B,)
    low, high = _quantiles(gaps, model.level)
    estimate = float(model.estimate) - float(twin.estimate)
    return Interval(estimate, float(low), float(high), model.level, min(model.n, twin.n))


def difference_interval(model: Interval, twin: Interval) -> Interval:
    """``model - twin`` with an interval that counts both runs' noise, taken as independent: each side's
    half-width is the quadrature sum of the model's half-width on that side and the twin's on the opposite
    side (the untrained-twin control, :mod:`attnlab.course.twin_control`)."""
    estimate = model.estimate - twin.estimate
    below = float(np.hypot(model.estimate - model.low, twin.high - twin.estimate))
    above = float(np.hypot(model.high - model.estimate, twin.estimate - twin.low))
    return Interval(estimate, estimate - below, estimate + above, 0.95, 0)
