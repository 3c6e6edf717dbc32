"""Self-attention and multi-head attention, written out for teaching.

Everything here is a few lines of plain tensor code, so a student can see
there is nothing scary inside a Transformer's attention:

1. :func:`scaled_dot_product_attention` -- ``softmax(Q K^T / sqrt(d_k)) V``,
   returning the weights next to the output.
2. :func:`split_heads` / :func:`merge_heads` -- cut a ``d``-wide vector into
   ``H`` heads of ``d / H`` and glue them back.
3. :class:`MultiHeadSelfAttention` -- the four projections (query, key,
   value, output) around 1 and 2; :meth:`MultiHeadSelfAttention.from_model`
   copies the weights of a loaded model's layer.
4. :func:`recompute_layer_attention` -- rebuild a real model layer's per-head
   attention from its weights and the hidden states that enter the layer,
   padding mask included. The tests check it against the model's own maps.

Plus small helpers for the lessons: the tiny hand-sized example of lesson 01
(:func:`tiny_example`, :func:`attention_steps`), the three classic shapes of
an attention matrix (:func:`pattern_scores`, :func:`find_pattern_heads`, and
the shuffled control :func:`pattern_chance`), how much the heads of a layer
differ (:func:`head_spread_rows`) and
"one big projection vs H small ones" (:func:`project_per_head`).

Shapes: ``B`` batch, ``T`` tokens, ``d`` model width, ``H`` heads, ``d_h``
head width (``d = H * d_h``). Indices are 0-based.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn

from attnlab.core.checks import check_positive_int
from attnlab.core.distributions import js_divergence, smooth
from attnlab.core.extract import check_texts
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode, run

# --------------------------------------------------------------------------- refused while a student's own is checked

#: the functions of this module a build-it-yourself exercise asks a student to write, refused right now
_REFUSED: set[str] = set()
#: which of them were called while refused (kept even when the caller swallowed the error)
_CALLED: list[str] = []


class ReferenceRefused(RuntimeError):
    """The package's own version of a function was called while a student's own version of it was checked."""


@contextlib.contextmanager
def refusing(*names: str) -> Iterator[list[str]]:
    """While the block runs, each function of ``names`` (e.g. ``"split_heads"``) raises
    :class:`ReferenceRefused` instead of computing; yields the list of those called (by any alias)."""
    _REFUSED.update(names)
    _CALLED.clear()
    called: list[str] = []
    try:
        yield called
    finally:
        called.extend(_CALLED)
        _REFUSED.difference_update(names)
        _CALLED.clear()


def _refuse(name: str) -> None:
    if name in _REFUSED:
        _CALLED.append(name)
        raise ReferenceRefused(name)


# --------------------------------------------------------------------------- 1. one head


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: bool | float = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q k^T * s) v`` with the attention weights returned too.

    Args:
        q: queries ``(..., T_q, d_k)``.
        k: keys ``(..., T_k, d_k)``.
        v: values ``(..., T_k, d_v)``.
        mask: optional boolean tensor broadcastable to ``(..., T_q, T_k)``;
            True where a query may look at a key, False to hide that key
            (padding). Hidden keys get weight 0. A row with every key hidden
            gets uniform weights instead of NaN.
        scale: True divides the scores by ``sqrt(d_k)`` (the Transformer's
            choice, see lesson 02); False uses the raw dot products; a number
            multiplies the scores by that number.

    Returns:
        ``(output (..., T_q, d_v), weights (..., T_q, T_k))``; each row of
        ``weights`` sums to 1.

    Raises:
        ValueError: the shapes do not fit together.
    """
    _refuse("scaled_dot_product_attention")
    _check_qkv(q, k, v)
    d_k = q.shape[-1]
    if scale is True:
        factor = 1.0 / math.sqrt(d_k)
    elif scale is False:
        factor = 1.0
    else:
        factor = float(scale)
    # step 1: similarity of every query with every key
    scores = q @ k.transpose(-2, -1) * factor  # (..., T_q, T_k)
    # step 2: hide keys the query must not see (padding)
    if mask is not None:
        mask = _check_mask(mask, scores.shape)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    # step 3: each row becomes a probability distribution over the keys
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    # step 4: each query's output is the weighted average of the values
    output = weights @ v  # (..., T_q, d_v)
    return output, weights


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(_("{name} must be a torch.Tensor, got {kind}").format(name=name, kind=type(t).__name__))
        if t.ndim < 2:
            raise ValueError(_("{name} must have at least 2 dimensions (tokens, features), got shape {shape}").format(
                name=name, shape=tuple(t.shape)))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            _("q and k must have the same feature width d_k: q is {q}, k is {k}").format(
                q=tuple(q.shape), k=tuple(k.shape)))
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            _("k and v must have the same number of tokens: k is {k}, v is {v}").format(
                k=tuple(k.shape), v=tuple(v.shape)))


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor):
        mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            _("mask must be a boolean tensor (True = may attend), got dtype {dtype}; "
              "for a 0/1 padding mask use mask.bool()").format(dtype=mask.dtype))
    try:
        torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(
            _("mask of shape {mask} does not broadcast to the scores {scores} "
              "(queries x keys); a (B, T) padding mask needs padding_mask(...) first").format(
                mask=tuple(mask.shape), scores=tuple(scores_shape))) from None
    return mask


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Turn a tokenizer's ``attention_mask (B, T)`` (1 = real token, 0 = padding)
    into a boolean key mask ``(B, 1, 1, T)`` that broadcasts over heads and queries."""
    if attention_mask.ndim != 2:
        raise ValueError(_("attention_mask must be (batch, tokens), got shape {shape}").format(
            shape=tuple(attention_mask.shape)))
    return attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)


# --------------------------------------------------------------------------- 2. heads


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Cut the feature dimension into heads: ``(B, T, d) -> (B, H, T, d / H)``.

    Head ``h`` gets features ``h * d_h .. (h + 1) * d_h - 1`` of every token.
    """
    _refuse("split_heads")
    n_heads = check_positive_int(n_heads, "n_heads")
    if x.ndim != 3:
        raise ValueError(_("split_heads expects (batch, tokens, features), got shape {shape}").format(
            shape=tuple(x.shape)))
    B, T, d = x.shape
    if d % n_heads:
        raise ValueError(
            _("feature width {d} is not divisible by n_heads={n_heads}: every head must get the "
              "same number of features (e.g. 768 = 12 x 64, 384 = 12 x 32)").format(d=d, n_heads=n_heads))
    d_h = d // n_heads
    return x.view(B, T, n_heads, d_h).transpose(1, 2)  # (B, H, T, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Concatenate the heads again: ``(B, H, T, d_h) -> (B, T, H * d_h)``."""
    _refuse("merge_heads")
    if x.ndim != 4:
        raise ValueError(_("merge_heads expects (batch, heads, tokens, head width), got shape {shape}").format(
            shape=tuple(x.shape)))
    B, H, T, d_h = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_h)  # (B, T, d)


def project_per_head(x: torch.Tensor, linear: nn.Linear, n_heads: int) -> torch.Tensor:
    """The same projection as ``split_heads(linear(x), n_heads)``, done as ``H``
    small projections: head ``h`` uses only rows ``h*d_h:(h+1)*d_h`` of the weight.

    Args:
        x: ``(B, T, d_in)``.
        linear: a ``d_in -> H * d_h`` projection (e.g. a layer's query map).

    Returns:
        ``(B, H, T, d_h)``.
    """
    _refuse("split_heads")
    n_heads = check_positive_int(n_heads, "n_heads")
    d_out = linear.out_features
    if d_out % n_heads:
        raise ValueError(_("projection width {d_out} is not divisible by n_heads={n_heads}").format(
            d_out=d_out, n_heads=n_heads))
    d_h = d_out // n_heads
    heads = []
    for h in range(n_heads):
        rows = slice(h * d_h, (h + 1) * d_h)
        w_h = linear.weight[rows]  # (d_h, d_in): this head's small projection
        b_h = linear.bias[rows] if linear.bias is not None else None  # (d_h,)
        heads.append(nn.functional.linear(x, w_h, b_h))  # (B, T, d_h)
    return torch.stack(heads, dim=1)  # (B, H, T, d_h)


# --------------------------------------------------------------------------- 3. the module


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention as in BERT, written out step by step.

    ``forward(x)`` with ``x (B, T, d)``:

    1. project: ``q, k, v = x W_q, x W_k, x W_v``, each ``(B, T, H * d_h)``
    2. split:   each becomes ``(B, H, T, d_h)``
    3. attend:  per head ``softmax(q k^T / sqrt(d_h)) v`` -> ``(B, H, T, d_h)``
    4. merge:   concatenate the heads -> ``(B, T, H * d_h)``
    5. output projection -> ``(B, T, d)``

    Args:
        d_model: width ``d`` of the token vectors.
        n_heads: number of heads ``H``.
        head_dim: width of one head (default ``d_model // n_heads``).
        bias: whether the four projections have biases (BERT's do).
    """

    def __init__(self, d_model: int, n_heads: int, head_dim: int | None = None, bias: bool = True):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        n_heads = check_positive_int(n_heads, "n_heads")
        if head_dim is None:
            if d_model % n_heads:
                raise ValueError(_("d_model={d_model} is not divisible by n_heads={n_heads}; pass head_dim").format(
                    d_model=d_model, n_heads=n_heads))
            head_dim = d_model // n_heads
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = head_dim
        inner = n_heads * head_dim
        self.query = nn.Linear(d_model, inner, bias=bias)
        self.key = nn.Linear(d_model, inner, bias=bias)
        self.value = nn.Linear(d_model, inner, bias=bias)
        self.output = nn.Linear(inner, d_model, bias=bias)

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Args:
            x: token vectors ``(B, T, d)``.
            attention_mask: optional ``(B, T)``, 1 for real tokens, 0 for padding.

        Returns:
            ``(output (B, T, d), weights (B, H, T, T))``.
        """
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(_("x must be (batch, tokens, {d_model}), got shape {shape}").format(
                d_model=self.d_model, shape=tuple(x.shape)))
        q = split_heads(self.query(x), self.n_heads)  # (B, H, T, d_h)
        k = split_heads(self.key(x), self.n_heads)  # (B, H, T, d_h)
        v = split_heads(self.value(x), self.n_heads)  # (B, H, T, d_h)
        mask = None
        if attention_mask is not None:
            if attention_mask.shape != x.shape[:2]:
                raise ValueError(
                    _("attention_mask must be (batch, tokens) = {expected}, got {shape}").format(
                        expected=tuple(x.shape[:2]), shape=tuple(attention_mask.shape)))
            mask = padding_mask(attention_mask)  # (B, 1, 1, T)
        context, weights = scaled_dot_product_attention(q, k, v, mask=mask)  # (B, H, T, d_h), (B, H, T, T)
        merged = merge_heads(context)  # (B, T, H * d_h)
        return self.output(merged), weights  # (B, T, d), (B, H, T, T)

    @classmethod
    def from_model(cls, m: LoadedModel, layer: int) -> "MultiHeadSelfAttention":
        """A copy of layer ``layer`` (0-based) of a loaded model's attention.

        Args:
            m: a :class:`~attnlab.core.models.LoadedModel`.
            layer: which layer's query/key/value/output weights to copy.
        """
        layer = m.check_layer(layer)
        parts = m.layer_parts()[layer]
        d_model = parts.query.in_features
        mhsa = cls(d_model, m.n_heads, head_dim=parts.query.out_features // m.n_heads,
                   bias=parts.query.bias is not None)
        with torch.no_grad():
            for mine, theirs in ((mhsa.query, parts.query), (mhsa.key, parts.key),
                                 (mhsa.value, parts.value), (mhsa.output, parts.output)):
                mine.weight.copy_(theirs.weight)
                if mine.bias is not None:
                    mine.bias.copy_(theirs.bias)
        return mhsa.to(parts.query.weight.device).eval()


# --------------------------------------------------------------------------- 4. a real layer


@dataclass
class LayerAttention:
    """A layer recomputed from its weights.

    Attributes:
        weights: per-head attention ``(B, H, T, T)``, padding keys at 0.
        q, k: per-head queries and keys ``(B, H, T, d_h)``.
        hidden: the hidden states entering the layer ``(B, T, d)``.
        attention_mask: ``(B, T)``, 1 for real tokens.
        tokens: the tokens of each text (padding included).
    """

    weights: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    hidden: torch.Tensor
    attention_mask: torch.Tensor
    tokens: list[list[str]]


def hidden_states(m: LoadedModel, texts: list[str] | str) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor], tuple]:
    """Run the model once; return ``(hidden_states, inputs, attentions)``.

    ``hidden_states[l]`` ``(B, T, d)`` is the input of layer ``l`` (index 0 is
    the embedding output); ``attentions[l]`` ``(B, H, T, T)`` is the model's own
    attention of layer ``l``.
    """
    texts, _pairs = check_texts(m, texts)
    inputs = encode(m, texts).inputs
    cache = run(m, inputs, keep=("maps", "hidden"))
    hidden = tuple(cache.hidden[l] for l in range(m.n_layers + 1))  # L + 1 tensors (B, T, d)
    return hidden, inputs, tuple(cache.maps[l] for l in range(m.n_layers))  # L tensors (B, H, T, T)


def recompute_layer_attention(m: LoadedModel, texts: list[str] | str, layer: int) -> LayerAttention:
    """Recompute layer ``layer``'s per-head attention with the teaching code.

    Takes the hidden states that enter the layer (``output_hidden_states=True``),
    applies the layer's own query and key projections, splits them into heads
    and runs :func:`scaled_dot_product_attention` with the padding mask. The
    result should equal the model's returned attention (the tests check 1e-5).

    Args:
        m: a :class:`~attnlab.core.models.LoadedModel`.
        texts: one text or a list (padded to the longest).
        layer: 0-based layer index.
    """
    layer = m.check_layer(layer)
    hs, inputs, _attentions = hidden_states(m, texts)
    x = hs[layer]  # (B, T, d)
    parts = m.layer_parts()[layer]
    with torch.no_grad():
        q = split_heads(parts.query(x), m.n_heads)  # (B, H, T, d_h)
        k = split_heads(parts.key(x), m.n_heads)  # (B, H, T, d_h)
        v = split_heads(parts.value(x), m.n_heads)  # (B, H, T, d_h)
        mask = padding_mask(inputs["attention_mask"])  # (B, 1, 1, T)
        _context, weights = scaled_dot_product_attention(q, k, v, mask=mask)  # (B, H, T, T)
    tokens = [m.tokenizer.convert_ids_to_tokens(ids) for ids in inputs["input_ids"].tolist()]
    return LayerAttention(weights, q, k, x, inputs["attention_mask"], tokens)


# --------------------------------------------------------------------------- lesson 01 helpers


def tiny_example() -> dict:
    """The hand-sized example of lesson 01: 3 tokens, 4 features, one 4-wide head.

    Returns a dict with ``tokens`` (3), ``x (3, 4)`` and ``w_q``, ``w_k``,
    ``w_v`` ``(4, 4)``: zeros and ones, so a student can multiply by hand, and
    ``d_k = 4`` so that dividing by ``sqrt(d_k)`` is dividing by 2.
    """
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0],  # "I"
                      [0.0, 1.0, 0.0, 1.0],  # "like"
                      [1.0, 1.0, 0.0, 0.0]])  # "tea"
    w_q = torch.tensor([[1.0, 0.0, 1.0, 0.0],
                        [0.0, 1.0, 0.0, 0.0],
                        [1.0, 0.0, 0.0, 1.0],
                        [0.0, 0.0, 1.0, 0.0]])
    w_k = torch.tensor([[0.0, 1.0, 0.0, 0.0],
                        [1.0, 0.0, 1.0, 0.0],
                        [1.0, 0.0, 0.0, 0.0],
                        [0.0, 0.0, 1.0, 1.0]])
    w_v = torch.tensor([[1.0, 0.0, 0.0, 0.0],
                        [0.0, 1.0, 0.0, 0.0],
                        [0.0, 0.0, 1.0, 0.0],
                        [0.0, 0.0, 0.0, 1.0]])
    return {"tokens": ["I", "like", "tea"], "x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}


def attention_steps(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every intermediate of single-head self-attention, for printing.

    Args:
        x: token vectors ``(T, d)``; ``w_q``, ``w_k``: ``(d, d_k)``; ``w_v``: ``(d, d_v)``.

    Returns:
        ``Q, K (T, d_k)``, ``V (T, d_v)``, ``scores`` = Q K^T ``(T, T)``,
        ``scaled`` = scores / sqrt(d_k), ``exp`` = exp(scaled), ``weights``
        (rows sum to 1) and ``output`` ``(T, d_v)``.
    """
    _refuse("scaled_dot_product_attention")
    if x.ndim != 2 or w_q.ndim != 2 or x.shape[1] != w_q.shape[0]:
        raise ValueError(_("x must be (tokens, d) and w_q (d, d_k); got {x} and {w_q}").format(
            x=tuple(x.shape), w_q=tuple(w_q.shape)))
    Q, K, V = x @ w_q, x @ w_k, x @ w_v  # (T, d_k), (T, d_k), (T, d_v)
    scores = Q @ K.T  # (T, T)
    scaled = scores / math.sqrt(Q.shape[-1])  # (T, T)
    exp = torch.exp(scaled)  # (T, T)
    weights = exp / exp.sum(dim=-1, keepdim=True)  # (T, T): softmax written out
    output = weights @ V  # (T, d_v)
    return {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "exp": exp,
            "weights": weights, "output": output}


def pattern_scores(maps: torch.Tensor) -> dict[str, torch.Tensor]:
    """How strongly each head shows the three classic shapes.

    Args:
        maps: attention of one text ``(..., n, n)`` (e.g. ``att[i]`` ``(L, H, n, n)``).

    Returns:
        dict of ``(...)`` tensors:
        ``diagonal`` mean weight a token puts on itself;
        ``vertical`` the largest mean weight that all queries put on one
        column (a stripe: everyone looks at the same token);
        ``vertical_column`` which column that is;
        ``previous`` / ``next`` mean weight on the token just before / after
        (an off-diagonal band).
    """
    if maps.ndim < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(_("maps must be (..., n, n), got shape {shape}").format(shape=tuple(maps.shape)))
    n = maps.shape[-1]
    if n < 2:
        raise ValueError(_("need at least 2 tokens to look for patterns"))
    diag = maps.diagonal(dim1=-2, dim2=-1).mean(-1)  # (...)
    col_mean = maps.mean(dim=-2)  # (..., n): mean over queries of each column
    vertical, column = col_mean.max(dim=-1)  # (...)
    previous = maps.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)  # a[i, i-1]
    nxt = maps.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1)  # a[i, i+1]
    return {"diagonal": diag, "vertical": vertical, "vertical_column": column,
            "previous": previous, "next": nxt}


def find_pattern_heads(maps: torch.Tensor) -> dict[str, tuple[int, int, float]]:
    """For one text's maps ``(L, H, n, n)``, the 0-based ``(layer, head, score)``
    that shows each shape most strongly: ``diagonal``, ``vertical`` and
    ``band`` (previous- or next-token, whichever is stronger)."""
    if maps.ndim != 4:
        raise ValueError(_("maps must be (layers, heads, n, n), got shape {shape}").format(shape=tuple(maps.shape)))
    s = pattern_scores(maps)
    band = torch.maximum(s["previous"], s["next"])  # (L, H)
    found = {}
    for name, score in (("diagonal", s["diagonal"]), ("vertical", s["vertical"]), ("band", band)):
        flat = int(score.argmax())
        layer, head = divmod(flat, score.shape[1])
        found[name] = (layer, head, float(score[layer, head]))
    return found


def shuffle_keys(maps: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """The control for :func:`find_pattern_heads`: every row's weights put on the keys
    in a random order, independently per row.

    Each row keeps its weights (so a sharp head stays exactly as sharp) but loses
    *where* they sit, so any diagonal, stripe or band left is there by chance.

    Args:
        maps: ``(..., n, n)``.

    Returns:
        ``(..., n, n)``, every row a permutation of the same row of ``maps``.
    """
    if maps.ndim < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(_("maps must be (..., n, n), got shape {shape}").format(shape=tuple(maps.shape)))
    order = torch.rand(maps.shape, generator=generator).argsort(dim=-1)  # (..., n, n): a permutation per row
    return maps.gather(-1, order.to(maps.device))


def pattern_chance(maps: torch.Tensor, n_shuffles: int = 200, seed: int = 0) -> dict[str, list[float]]:
    """What the strongest head of each shape scores when the shapes are destroyed.

    Scores ``n_shuffles`` copies of ``maps`` passed through :func:`shuffle_keys`
    the way :func:`find_pattern_heads` scores the maps themselves.

    Args:
        maps: one text's maps ``(L, H, n, n)``.

    Returns:
        shape (``diagonal``, ``vertical``, ``band``) -> ``n_shuffles`` best scores
        over all heads, one per shuffled copy.
    """
    n_shuffles = check_positive_int(n_shuffles, "n_shuffles")
    if maps.ndim != 4:
        raise ValueError(_("maps must be (layers, heads, n, n), got shape {shape}").format(shape=tuple(maps.shape)))
    gen = torch.Generator().manual_seed(seed)
    best: dict[str, list[float]] = {"diagonal": [], "vertical": [], "band": []}
    for start in range(0, n_shuffles, 50):  # 50 copies at a time keep memory small for long texts
        copies = maps.float().cpu().expand(min(50, n_shuffles - start), *maps.shape)  # (S, L, H, n, n)
        s = pattern_scores(shuffle_keys(copies, gen))  # dict of (S, L, H)
        band = torch.maximum(s["previous"], s["next"])  # (S, L, H)
        for name, score in (("diagonal", s["diagonal"]), ("vertical", s["vertical"]), ("band", band)):
            best[name] += score.flatten(1).max(dim=1).values.tolist()  # (S,): the best head of each copy
    return best


# --------------------------------------------------------------------------- lesson 04 helpers


def head_contributions(context: torch.Tensor, output: nn.Linear) -> torch.Tensor:
    """Split the output projection into one term per head.

    ``output(merge_heads(context))`` equals ``head_contributions(...).sum(1) + output.bias``:
    head ``h``'s context only meets the columns ``h*d_h:(h+1)*d_h`` of ``W_o``.

    Args:
        context: per-head outputs ``(B, H, T, d_h)``.
        output: the ``H * d_h -> d`` output projection.

    Returns:
        ``(B, H, T, d)``: what each head adds to each token's output (bias excluded).
    """
    if context.ndim != 4:
        raise ValueError(_("context must be (batch, heads, tokens, head width), got shape {shape}").format(
            shape=tuple(context.shape)))
    B, H, T, d_h = context.shape
    if output.in_features != H * d_h:
        raise ValueError(_("output projection takes {features} features, context has {heads} x {width}").format(
            features=output.in_features, heads=H, width=d_h))
    w = output.weight.view(output.out_features, H, d_h)  # (d, H, d_h): column block per head
    return torch.einsum("bhte,dhe->bhtd", context, w)  # (B, H, T, d)


def head_spread_rows(maps: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """How different the heads of one layer are, per query token of one text.

    For each query row: the mean over all pairs of heads of the Jensen-Shannon
    divergence between their rows (each row smoothed by ``eps`` as in Clark et
    al. 2019). 0 when all heads agree; at most ``ln 2``.

    Args:
        maps: ``(H, n, n)``, one layer of one text.

    Returns:
        ``(n,)``, one value per query token.
    """
    if maps.ndim != 3 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(_("maps must be (heads, n, n), got shape {shape}").format(shape=tuple(maps.shape)))
    H = maps.shape[0]
    if H < 2:
        raise ValueError(_("need at least 2 heads to compare"))
    p = smooth(maps.double(), eps)  # (H, n, n)
    i, j = torch.triu_indices(H, H, offset=1)  # every pair once
    return js_divergence(p[i], p[j]).mean(dim=0)  # (pairs, n) -> (n,)
