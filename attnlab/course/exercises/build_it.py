"""Build-it-yourself exercises: the student writes the function, the checker tests it against the package's.

Lesson 01 has the student write scaled dot-product attention, lesson 04 the
multi-head split and merge. Each checker runs small tests in order on random
tensors, new ones at every check (their sizes too: nothing to learn by heart), and
stops at the first that fails, with a message that says what is wrong
and how to fix it (the hint); it compares with the package's own
:func:`~attnlab.scratch.self_attention.scaled_dot_product_attention`,
:func:`~attnlab.scratch.self_attention.split_heads` and
:func:`~attnlab.scratch.self_attention.merge_heads`, and with one head computed
alone. The usual mistakes (no scale, heads cut from the wrong axis, a missing
transpose) are recognised and named.

A function whose body is still ``raise NotImplementedError`` (or ``...``) is
"not yet written": the checker says so and the notebook runs on. While the student's
function runs, the package's own version of what it asks for cannot be used
(:func:`attnlab.scratch.self_attention.refusing`): a function that calls it, under any
name, fails with one sentence saying so.
"""

from __future__ import annotations

import math
import secrets
from typing import Any, Callable

import torch

from attnlab.core.language import _
from attnlab.course.exercises import Feedback
from attnlab.scratch.self_attention import (ReferenceRefused, merge_heads, refusing, scaled_dot_product_attention,
                                            split_heads)

#: how far a student's float32 result may be from the package's
ATOL = 1e-5


class NotWritten(Exception):
    """The student's function is still the placeholder."""


class Failed(Exception):
    """A test failed; the message says what is wrong and how to fix it (already translated)."""


#: what each exercise asks the student to write: the package's own versions, refused during their call
ATTENTION = ("scaled_dot_product_attention",)
SPLIT_MERGE = ("split_heads", "merge_heads")


def _refused(names: list[str]) -> Failed:
    return Failed(_("your function calls the package's own {name}: that is what this exercise asks you to write, "
                    "so it scores 0 until the function computes it itself.").format(name=names[0]))


def _call(fn: Callable, *args, refuse: tuple[str, ...] = ()) -> Any:
    """``fn(*args)`` with the package's functions ``refuse`` unusable; the student's placeholder is
    :class:`NotWritten`, anything it raises a :class:`Failed` that says what."""
    with refusing(*refuse) as called:
        try:
            out = fn(*args)
        except NotImplementedError as exc:
            raise NotWritten from exc
        except ReferenceRefused:
            out = None  # said below, from `called`
        except Exception as exc:  # noqa: BLE001 - the student's code may raise anything: say what, and go on
            raise Failed(_("your function raised {kind}: {error}").format(kind=type(exc).__name__, error=exc)) from exc
    if called:  # even when the student's code caught the refusal and went on
        raise _refused(called)
    if out is None or out is Ellipsis:  # a body of `...` (or `return ...`)
        raise NotWritten
    return out


def _generator() -> torch.Generator:
    """A generator with a fresh seed: every check draws new inputs, which no student has seen."""
    return torch.Generator().manual_seed(secrets.randbits(62))


def _size(g: torch.Generator, low: int, high: int) -> int:
    """A random int in ``[low, high]``."""
    return int(torch.randint(low, high + 1, (1,), generator=g))


def _gap(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest absolute difference of two same-shape tensors."""
    return float((a.detach().double() - b.detach().double()).abs().max())


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return tuple(a.shape) == tuple(b.shape) and _gap(a, b) <= ATOL


def _tensor(x: Any, what: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise Failed(_("{what} should be a torch tensor, got {kind}").format(what=what, kind=type(x).__name__))
    return x


def _pair(out: Any) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Failed(_("return two tensors, (output, weights); got {kind}").format(kind=type(out).__name__))
    return _tensor(out[0], _("the output")), _tensor(out[1], _("the weights"))


# --------------------------------------------------------------------------- lesson 01: attention


def _qkv(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random queries ``(B, H, T_q, d_k)``, keys ``(B, H, T_k, d_k)`` and values ``(B, H, T_k, d_v)``:
    2-3 texts, 2-4 heads, 3-6 queries against 4-9 keys, d_k of 10-16 and a wider d_v: every size differs
    from the others it could be mistaken for, so a swapped axis always shows in a shape."""
    B, H, T_q = _size(g, 2, 3), _size(g, 2, 4), _size(g, 3, 6)
    T_k, d_k = T_q + _size(g, 1, 3), 2 * _size(g, 5, 8)
    d_v = d_k + _size(g, 1, 3)
    return (torch.randn(B, H, T_q, d_k, generator=g), torch.randn(B, H, T_k, d_k, generator=g),
            torch.randn(B, H, T_k, d_v, generator=g))


def _mask(g: torch.Generator, batch: int, T_q: int, T_k: int) -> torch.Tensor:
    """``(batch, 1, T_q, T_k)`` booleans, True where a query may look at a key; every row keeps key 0."""
    keep = torch.rand(batch, 1, T_q, T_k, generator=g) < 0.6
    keep[..., 0] = True
    return keep


def attention_problem(fn: Callable) -> str | None:
    """The first test ``fn(q, k, v, mask=None) -> (output, weights)`` fails, as a message; None when all pass.

    Raises :class:`NotWritten` when ``fn`` is still the placeholder."""
    g = _generator()
    q, k, v = _qkv(g)
    B, H, T_q, T_k = *q.shape[:3], k.shape[2]
    want_out, want_w = scaled_dot_product_attention(q, k, v)  # (B, H, T_q, d_v), (B, H, T_q, T_k)
    try:
        out, w = _pair(_call(fn, q, k, v, refuse=ATTENTION))
        if tuple(w.shape) == (B, H, T_k, T_q):
            raise Failed(_("the weights have shape {got}: keys and queries are swapped. The scores are "
                           "q @ k.transpose(-2, -1), one row per query: (..., T_q, T_k)").format(got=tuple(w.shape)))
        if tuple(w.shape) != tuple(want_w.shape):
            raise Failed(_("the weights should have shape (..., T_q, T_k) = {want}, got {got}: the scores are "
                           "q @ k.transpose(-2, -1)").format(want=tuple(want_w.shape), got=tuple(w.shape)))
        if tuple(out.shape) != tuple(want_out.shape):
            raise Failed(_("the output should have shape (..., T_q, d_v) = {want}, got {got}: it is "
                           "weights @ v").format(want=tuple(want_out.shape), got=tuple(out.shape)))
        row_error = float((w.detach().double().sum(-1) - 1).abs().max())
        if not row_error <= ATOL:
            raise Failed(_("each row of the weights should sum to 1 (largest error {err:.2g}): take the softmax "
                           "over the keys, the last dimension (dim=-1)").format(err=row_error))
        if not _close(w, want_w):
            if _close(w, scaled_dot_product_attention(q, k, v, scale=False)[1]):
                raise Failed(_("no scale: your weights are softmax(q k^T). Divide the scores by sqrt(d_k) "
                               "before the softmax (lesson 02 shows why)"))
            if _close(w, scaled_dot_product_attention(q, k, v, scale=1 / q.shape[-1])[1]):
                raise Failed(_("the scores are divided by d_k; divide them by sqrt(d_k)"))
            raise Failed(_("the weights differ from softmax(q k^T / sqrt(d_k)) by up to {err:.3g}").format(
                err=_gap(w, want_w)))
        if not _close(out, want_out):
            raise Failed(_("the weights are right but the output differs by up to {err:.3g}: the output is "
                           "weights @ v").format(err=_gap(out, want_out)))
        mask = _mask(g, B, T_q, T_k)
        with refusing(*ATTENTION) as called:
            try:
                out_m, w_m = _pair(fn(q, k, v, mask))
            except NotImplementedError as exc:
                raise NotWritten from exc
            except ReferenceRefused:
                out_m = w_m = None
            except TypeError as exc:
                raise Failed(_("your function should accept a fourth argument, mask (True where a query may look "
                               "at a key, or None): {error}").format(error=exc)) from exc
            except Failed:
                raise
            except Exception as exc:  # noqa: BLE001
                raise Failed(_("with a mask, your function raised {kind}: {error}").format(
                    kind=type(exc).__name__, error=exc)) from exc
        if called:
            raise _refused(called)
        hidden = float(w_m.detach().double().masked_fill(mask, 0).abs().max()) if w_m.shape == w.shape else math.inf
        if not hidden <= ATOL:
            raise Failed(_("a key hidden by the mask (False) should get weight 0 (largest weight on a hidden key: "
                           "{w:.3g}): set its score to -inf before the softmax, e.g. "
                           "scores.masked_fill(~mask, float('-inf'))").format(w=hidden))
        want_out_m, want_w_m = scaled_dot_product_attention(q, k, v, mask)
        if not (_close(w_m, want_w_m) and _close(out_m, want_out_m)):
            raise Failed(_("with a mask the weights differ from the package's by up to {err:.3g}: hide the keys "
                           "before the softmax, not after").format(err=_gap(w_m, want_w_m)))
        one_out, one_w = _pair(_call(fn, q[0, 1], k[0, 1], v[0, 1], refuse=ATTENTION))  # one head: (T_q, d_k)
        if not (_close(one_w, want_w[0, 1]) and _close(one_out, want_out[0, 1])):
            raise Failed(_("one head alone, (tokens, d_k), gives other weights than the same head in a batch of "
                           "heads: use the last two dimensions only (k.transpose(-2, -1), softmax(dim=-1))"))
    except Failed as failure:
        return str(failure)
    return None


# --------------------------------------------------------------------------- lesson 04: split and merge


def _hidden(g: torch.Generator, width: int, n_heads: int) -> torch.Tensor:
    """``(B, T, width)``: 2-3 texts of 4-7 tokens, never as many tokens as heads (so swapped axes show)."""
    tokens = [t for t in range(4, 8) if t != n_heads]
    return torch.randn(_size(g, 2, 3), tokens[_size(g, 0, len(tokens) - 1)], width, generator=g)


def _per_head_attention(q_big: torch.Tensor, k_big: torch.Tensor, v_big: torch.Tensor, n_heads: int,
                        mask: torch.Tensor) -> torch.Tensor:
    """Multi-head attention written head by head, without split or merge: head ``h`` attends with
    features ``h*d_h .. (h+1)*d_h - 1`` and the heads' outputs are concatenated. Inputs ``(B, T, d)``,
    ``mask`` ``(B, T)``; returns ``(B, T, d)``."""
    d_h = q_big.shape[-1] // n_heads
    outs = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        scores = q_big[..., cols] @ k_big[..., cols].transpose(-2, -1) / math.sqrt(d_h)  # (B, T, T)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        outs.append(torch.softmax(scores, dim=-1) @ v_big[..., cols])  # (B, T, d_h)
    return torch.cat(outs, dim=-1)  # (B, T, d)


def split_merge_problem(split: Callable, merge: Callable, *, width: int = 24, n_heads: int = 4) -> str | None:
    """The first test ``split(x, n_heads) -> (B, H, T, d_h)`` and ``merge(x) -> (B, T, H*d_h)`` fail, as a
    message; None when all pass. Raises :class:`NotWritten` while either is the placeholder."""
    if width % n_heads or n_heads < 2 or width // n_heads < 2:
        raise ValueError(f"width {width} must split into n_heads={n_heads} >= 2 heads of 2 or more features")
    g = _generator()
    x = _hidden(g, width, n_heads)  # (B, T, d)
    B, T, d = x.shape
    d_h = d // n_heads
    want = split_heads(x, n_heads)  # (B, H, T, d_h)
    try:
        got = _tensor(_call(split, x, n_heads, refuse=SPLIT_MERGE), _("what split returns"))
        if tuple(got.shape) == (B, T, n_heads, d_h):
            raise Failed(_("split gives {got}: the heads are cut but still sit after the tokens. Swap the tokens "
                           "and heads axes: .transpose(1, 2), to (batch, heads, tokens, head width)").format(
                got=tuple(got.shape)))
        if tuple(got.shape) != tuple(want.shape):
            raise Failed(_("split should give (batch, heads, tokens, head width) = {want}, got {got}").format(
                want=tuple(want.shape), got=tuple(got.shape)))
        if not _close(got, want):
            if _close(got, x.reshape(B, n_heads, T, d_h)):
                raise Failed(_("wrong transpose: the shape is right but tokens and heads are mixed up. Reshape to "
                               "(batch, tokens, heads, head width) first, then swap tokens and heads "
                               "(transpose(1, 2)); reshaping straight to (batch, heads, ...) cuts across tokens"))
            if _close(got, x.reshape(B, T, d_h, n_heads).permute(0, 3, 1, 2)):
                raise Failed(_("wrong split: each head got every {heads}th feature. Head h owns the neighbouring "
                               "features h*d_h .. (h+1)*d_h - 1: reshape to (batch, tokens, heads, head width), "
                               "not (batch, tokens, head width, heads)").format(heads=n_heads))
            raise Failed(_("split gives the right shape but other numbers than split_heads (up to {err:.3g} "
                           "apart): head h owns features h*d_h .. (h+1)*d_h - 1 of every token").format(
                err=_gap(got, want)))
        one = _tensor(_call(split, x, 1, refuse=SPLIT_MERGE), _("what split returns"))
        if not _close(one, x[:, None]):
            raise Failed(_("with one head, split should give that head the whole width: (batch, 1, tokens, "
                           "features), got {got}").format(got=tuple(one.shape)))
        merged = _tensor(_call(merge, want, refuse=SPLIT_MERGE), _("what merge returns"))
        if tuple(merged.shape) != (B, T, d):
            raise Failed(_("merge should give (batch, tokens, heads x head width) = {want}, got {got}").format(
                want=(B, T, d), got=tuple(merged.shape)))
        if not _close(merged, x):
            if _close(merged, want.reshape(B, T, d)):
                raise Failed(_("wrong transpose in merge: the shape is right but tokens and heads are mixed up. "
                               "Swap heads and tokens back first (transpose(1, 2)), then reshape to "
                               "(batch, tokens, heads x head width)"))
            raise Failed(_("merge(split_heads(x)) should give x back; it differs by up to {err:.3g}").format(
                err=_gap(merged, x)))
        wq, wk, wv = (torch.randn(d, d, generator=g) / math.sqrt(d) for _i in range(3))
        mask = torch.ones(B, T, dtype=torch.bool)
        mask[1, -2:] = False  # the second text is 2 tokens shorter, padded
        q, k, v = x @ wq, x @ wk, x @ wv  # (B, T, d)
        parts = [_call(split, t, n_heads, refuse=SPLIT_MERGE) for t in (q, k, v)]  # (B, H, T, d_h) each
        context, _w = scaled_dot_product_attention(*parts, mask[:, None, None, :])
        mine = _tensor(_call(merge, context, refuse=SPLIT_MERGE), _("what merge returns"))  # (B, T, d)
        by_head = _per_head_attention(q, k, v, n_heads, mask)  # (B, T, d)
        if not _close(mine, by_head):
            raise Failed(_("multi-head attention built with your split and merge differs from the heads computed "
                           "one at a time by up to {err:.3g}").format(err=_gap(mine, by_head)))
    except Failed as failure:
        return str(failure)
    return None


# --------------------------------------------------------------------------- feedback


def not_written() -> Feedback:
    """The placeholder is still there: no attempt, and the notebook runs on."""
    return Feedback(False, _("not yet written: replace `raise NotImplementedError` with your code and run the "
                             "cell again."), attempted=False)


def feedback(problem: Callable[[], str | None], passed: str) -> Feedback:
    """Run ``problem()`` and turn its outcome into feedback; ``passed`` is the message when every test passes."""
    try:
        message = problem()
    except NotWritten:
        return not_written()
    return Feedback(True, passed) if message is None else Feedback(False, message)
