"""Attention sinks: tokens that receive much attention and carry little.

Clark et al. (2019) found that BERT-base puts over half of its attention on
[SEP] in layers 6-10, and argued that attending to [SEP] is a "no-op": a head
with nothing to do parks its weight there. Xiao et al. (2023) found the same
"attention sink" (the first token) in large language models. Two measurements:

* :func:`sink_profile`: per text and layer, the share of attention on the first
  special token ([CLS] or ``<s>``), the separator ([SEP] or ``</s>``, the kind
  Clark et al.'s claim is about), punctuation, words and other pieces (pieces
  with no letter or digit that are not punctuation, such as a bare ``"▁"``), in raw weights and in norm-based weights (Kobayashi
  et al. 2020, :mod:`attnlab.analysis.norm_attention`), beside the size
  ``||f(x_j)||`` of what each kind of token can contribute.
* :func:`sink_intervention`: zero the value vectors of the sink (the special
  token with the most attention in that layer) in one layer, and, as a control,
  those of one random word of the same text; measure how much the sentence
  representation moves (cosine distance, :func:`attnlab.analysis.interventions.sentence_vectors`).

Only numbers here; whether they support a claim is decided in
:mod:`attnlab.course.claims.attention_limits`.

Shapes: ``N`` texts, ``L`` layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import cosine_distance, pooled, sentence_vectors, zero_values
from attnlab.analysis.norm_attention import NormAttention, norm_attention, row_shares
from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.analysis.token_roles import is_punctuation, is_word
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import check_texts
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode, run

#: Kinds of token, in the order plots show them.
KINDS = ("start", "end", "punct", "word", "other")
#: The two views of attention that :class:`SinkProfile` compares.
VIEWS = ("raw", "norm")

def token_kinds(m: LoadedModel, tokens: Sequence[str]) -> list[str]:
    """The kind of each token: ``"start"`` (a special token in front: [CLS], ``<s>``), ``"end"``
    (any other special token: the separator [SEP], ``</s>``), ``"punct"``, ``"word"`` (a piece
    with a letter or digit) or ``"other"`` (anything else, e.g. a bare ``"▁"`` or a symbol:
    never drawn as the control word)."""
    special = m.special_tokens
    kinds = []
    for i, tok in enumerate(tokens):
        if tok in special:
            kinds.append("start" if i == 0 else "end")
        elif is_punctuation(tok):
            kinds.append("punct")
        elif is_word(tok):
            kinds.append("word")
        else:
            kinds.append("other")
    return kinds


@dataclass
class SinkProfile:
    """Where attention goes, by kind of token, in raw and norm-based weights.

    Attributes:
        raw: kind -> ``(N, L)``: share of each query row's raw attention that lands on
            tokens of that kind, averaged over rows and heads.
        norm: kind -> ``(N, L)``: the same share for the layer's norm-based weights
            ``||sum_h alpha_ij^h f_h(x_j)||`` (each row rescaled to sum to 1).
        value_norm: kind -> ``(N, L)``: mean ``||f_h(x_j)||`` over heads and tokens of
            that kind (NaN where a text has none).
        start_token, end_token: the model's special tokens ([CLS]/[SEP] or <s>/</s>); the
            ``"end"`` kind is the separator.
    """

    raw: dict[str, np.ndarray]
    norm: dict[str, np.ndarray]
    value_norm: dict[str, np.ndarray]
    start_token: str = ""
    end_token: str = ""
    n_texts: int = 0

    def special(self, view: str = "raw") -> np.ndarray:
        """``(N, L)``: share on both special tokens together (first and separator)."""
        shares = self._view(view)
        return shares["start"] + shares["end"]

    def separator(self, view: str = "raw") -> np.ndarray:
        """``(N, L)``: share on the separator alone ([SEP] or ``</s>``: Clark et al.'s claim)."""
        return self._view(view)["end"]

    def per_layer(self, view: str = "raw", kind: str = "special", *, seed: int = 0,
                  simultaneous: bool = False) -> Interval:
        """Mean share per layer ``(L,)`` with a bootstrap interval over texts; ``kind`` is one of
        :data:`KINDS` or ``"special"`` (first and separator together). ``simultaneous``: the
        L intervals hold together (for "in some layer ..." verdicts)."""
        values = self.special(view) if kind == "special" else self._view(view)[kind]
        return bootstrap_mean(values, seed=seed, simultaneous=simultaneous)

    def sink_layer(self) -> int:
        """0-based layer with the largest mean raw share on the special tokens."""
        return int(self.special("raw").mean(axis=0).argmax())

    def removed_share(self) -> np.ndarray:
        """``(L,)``: how much of the special tokens' raw share disappears in the norm-based view,
        ``1 - norm / raw`` (0: the same, 1: all of it)."""
        raw = self.special("raw").mean(axis=0)
        return 1.0 - self.special("norm").mean(axis=0) / np.maximum(raw, 1e-12)

    def _view(self, view: str) -> dict[str, np.ndarray]:
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
        return self.raw if view == "raw" else self.norm


def kind_shares(maps: torch.Tensor, kinds: Sequence[str]) -> dict[str, torch.Tensor]:
    """Share of each row's weight on each kind of token, averaged over rows: kind -> ``(...)``.

    Args:
        maps: ``(..., n, n)`` maps of one text (rows sum to 1, or are rescaled here).
        kinds: ``n`` kinds from :func:`token_kinds`.
    """
    shares = row_shares(maps)  # (..., n, n)
    out = {}
    for kind in KINDS:
        cols = torch.tensor([k == kind for k in kinds])  # (n,)
        out[kind] = shares[..., cols].sum(dim=-1).mean(dim=-1)  # (...)
    return out


def profile_from(m: LoadedModel, na: NormAttention) -> SinkProfile:
    """:class:`SinkProfile` of the texts of a :class:`NormAttention`."""
    n_texts, n_layers = len(na), na.weights.shape[1]
    raw = {k: np.zeros((n_texts, n_layers)) for k in KINDS}
    norm = {k: np.zeros((n_texts, n_layers)) for k in KINDS}
    value_norm = {k: np.full((n_texts, n_layers), np.nan) for k in KINDS}
    for i in range(n_texts):
        one = na.text(i)
        kinds = token_kinds(m, one.tokens[0])
        raw_i = kind_shares(one.weights[0].mean(dim=1), kinds)  # kind -> (L,), heads averaged
        norm_i = kind_shares(one.combined[0], kinds)  # kind -> (L,)
        for kind in KINDS:
            raw[kind][i] = raw_i[kind].numpy()
            norm[kind][i] = norm_i[kind].numpy()
            cols = [j for j, k in enumerate(kinds) if k == kind]
            if cols:
                value_norm[kind][i] = one.value_norms[0][:, :, cols].mean(dim=(1, 2)).numpy()  # (L,)
    return SinkProfile(raw=raw, norm=norm, value_norm=value_norm, start_token=m.cls_token,
                       end_token=m.sep_token, n_texts=n_texts)


def sink_profile(m: LoadedModel, texts: Sequence[str] | str, *, batch_size: int = 16) -> SinkProfile:
    """Raw and norm-based attention share on [CLS]/[SEP] (or <s>/</s>), punctuation and words,
    per text and layer. See :class:`SinkProfile`."""
    return profile_from(m, norm_attention(m, texts, batch_size=batch_size))


# --------------------------------------------------------------------------- intervention


@dataclass
class SinkIntervention:
    """What zeroing the sink's value vectors in one layer does, beside a random word's.

    Attributes:
        sink_effect: ``(N, L)``: cosine distance of the sentence representation when the
            sink's value vectors are zeroed in that layer (in ``heads``, default all).
        control_effect: ``(N, L)``: the same for one random word token of the text.
        sink_mass: ``(N, L)``: raw attention share the sink receives there (rows and heads averaged).
        control_mass: ``(N, L)``: the same for the control token.
        sink_is_start: ``(N, L)`` bool: the sink was the first special token (else the last).
        heads: the heads intervened on (None: all).
    """

    sink_effect: np.ndarray
    control_effect: np.ndarray
    sink_mass: np.ndarray
    control_mass: np.ndarray
    sink_is_start: np.ndarray
    heads: list[int] | None = None
    n_texts: int = 0

    def difference(self, *, seed: int = 0) -> Interval:
        """Per layer ``(L,)``: sink effect minus control effect, bootstrap interval over texts."""
        return bootstrap_mean(self.sink_effect - self.control_effect, seed=seed)

    def overall_difference(self, *, seed: int = 0) -> Interval:
        """Sink minus control effect averaged over layers, bootstrap interval over texts."""
        return bootstrap_mean((self.sink_effect - self.control_effect).mean(axis=1), seed=seed)


def _mass_on(maps: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Raw share ``(B,)`` that the real rows of ``maps`` ``(B, H, T, T)`` give to one position per
    text, heads and rows averaged; ``mask`` ``(B, T)`` is 1 for real tokens."""
    cols = maps[torch.arange(maps.shape[0]), :, :, positions]  # (B, H, T): every row's weight on it
    return (cols.mean(dim=1) * mask).sum(dim=-1) / mask.sum(dim=-1)  # padding rows left out


def sink_intervention(m: LoadedModel, texts: Sequence[str] | str, *, heads: Iterable[int] | None = None,
                      seed: int = 0, batch_size: int = 32) -> SinkIntervention:
    """Zero the sink's value vectors, one layer at a time, and a random word's as a control.

    Args:
        m: the loaded model.
        texts: texts with at least one word token (not only special tokens and punctuation).
        heads: 0-based heads to intervene on (default every head of the layer).
        seed: chooses each text's control word.
        batch_size: texts per forward pass.

    Returns:
        :class:`SinkIntervention` with one number per text and layer.
    """
    texts, _ = check_texts(m, texts)
    batch_size = check_positive_int(batch_size, "batch_size")
    head_list = None if heads is None else [m.check_head(h) for h in heads]
    if head_list == []:
        raise ValueError("heads is empty: pass None for every head, or the heads to intervene on")
    rng = np.random.default_rng(seed)
    n, n_layers = len(texts), m.n_layers
    arrays = {k: np.zeros((n, n_layers)) for k in ("sink", "control", "sink_mass", "control_mass")}
    is_start = np.zeros((n, n_layers), dtype=bool)
    for start in range(0, n, batch_size):
        chunk = texts[start : start + batch_size]
        inputs = encode(m, chunk).inputs
        mask = inputs["attention_mask"].float()  # (B, T)
        lengths = inputs["attention_mask"].sum(dim=1)  # (B,)
        rows = np.arange(start, start + len(chunk))
        control = torch.tensor([_control_position(m, inputs["input_ids"][b, : int(lengths[b])], rng, chunk[b])
                                for b in range(len(chunk))])  # (B,)
        plain = run(m, inputs, keep=("maps", "output"))  # one unchanged pass: its maps and its output
        base = pooled(plain.output.last_hidden_state, inputs["attention_mask"])  # (B, d)
        batch_index = torch.arange(len(chunk))
        for layer in range(n_layers):
            maps = plain.maps[layer].float()  # (B, H, T, T)
            if head_list is not None:
                maps = maps[:, head_list]
            first = _mass_on(maps, torch.zeros_like(lengths), mask)  # (B,)
            last = _mass_on(maps, lengths - 1, mask)  # (B,)
            sink = torch.where(first >= last, torch.zeros_like(lengths), lengths - 1)  # (B,)
            is_start[rows, layer] = (first >= last).numpy()
            arrays["sink_mass"][rows, layer] = torch.maximum(first, last).numpy()
            arrays["control_mass"][rows, layer] = _mass_on(maps, control, mask).numpy()
            for name, where in (("sink", sink), ("control", control)):
                chosen = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)  # (B, T)
                chosen[batch_index, where] = True
                with zero_values(m, chosen, layers=[layer], heads=head_list):
                    changed = sentence_vectors(m, inputs)  # (B, d)
                arrays[name][rows, layer] = cosine_distance(changed, base).numpy()
    return SinkIntervention(sink_effect=arrays["sink"], control_effect=arrays["control"],
                            sink_mass=arrays["sink_mass"], control_mass=arrays["control_mass"],
                            sink_is_start=is_start, heads=head_list, n_texts=n)


def _control_position(m: LoadedModel, ids: torch.Tensor, rng: np.random.Generator, text: str) -> int:
    """A random word position of one text (its ids without padding)."""
    kinds = token_kinds(m, m.tokenizer.convert_ids_to_tokens(ids.tolist()))
    words = [i for i, k in enumerate(kinds) if k == "word"]
    if not words:
        raise ValueError(f"text {text!r} has no word token (a piece with a letter or digit) to serve as a "
                         "control: use texts with words")
    return int(rng.choice(words))
