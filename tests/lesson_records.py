"""Records of lessons 05-11 built by hand, so that lesson 12 can be tested on evidence
whose verdicts are known in advance (no lesson has to run first)."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.analysis.covering import Covering, layer_pairs
from attnlab.analysis.diversity import DepthShape, HeadDistances, depth_shape
from attnlab.analysis.probes import N_SPLITS, TASKS, TaskStudy, training_halves
from attnlab.analysis.pruning import PruningStudy
from attnlab.analysis.regroup import GroupSummary
from attnlab.analysis.stats import Interval
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS
from attnlab.course.evidence import Evidence
from attnlab.course.lesson_results import (
    AveragingResult,
    DiversityResult,
    HeadCountResult,
    HeadPatternsResult,
    PerturbationResult,
    PruningResult,
)
from attnlab.course.registry import RERUN
from attnlab.course.twin_evidence import save_twin
from attnlab.course.verdicts import ClaimVerdict

L, H = 2, 4  # layers x heads of the hand-made evidence
ANY = ClaimVerdict.missing("a claim of an earlier lesson", "not judged in this test")


def patterns(fixed_share: float = 0.5, n_layers: int = L, n_heads: int = H) -> HeadPatternsResult:
    labels = [["positional"] * n_heads for _ in range(n_layers)]
    return HeadPatternsResult(n_inputs=10, labels=labels, label_counts={"positional": n_layers * n_heads},
                              fixed_share=fixed_share, verdict=ANY, fixed_share_by_layer=np.full(n_layers, fixed_share),
                              depth_spearman=0.0)


def perturbation(content_share: float = 0.1, labels=None, n_layers: int = L, n_heads: int = H, *,
                 half_width: float = 0.03, queries: int = 50) -> PerturbationResult:
    """Lesson 06's record: the first ``content_share`` of the heads follow content (on both readings),
    the rest alternate position / cannot tell; the content share's interval over ``queries`` queries
    is the point +- ``half_width``."""
    if labels is None:  # the first round(content_share * heads) heads follow content, the rest alternate
        n_content = int(round(content_share * n_layers * n_heads))
        flat = ["content" if i < n_content else ("position" if i % 2 else "cannot tell")
                for i in range(n_layers * n_heads)]
        labels = [flat[l * n_heads:(l + 1) * n_heads] for l in range(n_layers)]
    zeros = np.zeros((n_layers, n_heads))
    point = float(np.mean(np.asarray(labels, dtype=object) == "content"))
    share = Interval(point, max(point - half_width, 0.0), min(point + half_width, 1.0), 0.95, queries)
    return PerturbationResult(n_queries=queries, chosen_layer=0, verdict=ANY, follower_labels=labels,
                              position_follower_share=0.5, content_follower_share=content_share,
                              unchanged=zeros + 0.9,
                              sensitivity={"lexical_position": zeros + 0.1, "syntactic_position": zeros + 0.2},
                              follower_gap=zeros,
                              follower_labels_by_reading={ALL_KEYS: labels, CONTENT_KEYS: labels},
                              content_share_by_reading={ALL_KEYS: share, CONTENT_KEYS: share})


def averaging(fixed_share: float = 0.8, n_layers: int = L, n_heads: int = H, slope: float = 0.1, *,
              unsure: float = 0.0, half_width: float = 0.03, shards: int = 20) -> AveragingResult:
    """Lesson 08's record: the first ``fixed_share`` of the heads labelled fixed, the next ``unsure``
    share "cannot tell", the rest varying; the fixed share's interval over ``shards`` shards is the
    point +- ``half_width``, widened to hold the unsure heads either way (as ``label_share`` does)."""
    total = n_layers * n_heads
    n_fixed, n_unsure = int(round(fixed_share * total)), int(round(unsure * total))
    flat = ["fixed"] * n_fixed + ["cannot tell"] * n_unsure + ["varying"] * (total - n_fixed - n_unsure)
    labels = [flat[l * n_heads:(l + 1) * n_heads] for l in range(n_layers)]
    point = n_fixed / total
    share = Interval(point, min(point - half_width, point), max(point + half_width, (n_fixed + n_unsure) / total),
                     0.95, shards)
    per_layer = np.full(n_layers, 0.5)
    return AveragingResult(n_queries=10, n_tokens=5, layers=list(range(n_layers)),
                           fixedness=np.ones((n_layers, n_heads)), sharpness=np.ones((n_layers, n_heads)),
                           fixedness_per_layer=Interval(per_layer, per_layer - 0.1, per_layer + 0.1, 0.95, 10),
                           slope=Interval(slope, slope - 0.05, slope + 0.05, 0.95, 10),
                           fixed_heads=[(i // n_heads, i % n_heads) for i in range(n_fixed)],
                           fixed_threshold=0.5, verdicts={}, labels=labels, fixed_share=share, n_shards=shards,
                           content_fixedness=np.ones((n_layers, n_heads)), content_labels=labels,
                           content_fixed_share=share, special_weight=np.full((n_layers, n_heads), 0.3),
                           sink_labels=labels)


def planted_texts(dispersion, spread: float, n_texts: int, seed: int = 0) -> np.ndarray:
    """``(n_texts, L)``: each text's within-layer dispersion, scattered by ``spread`` (standard deviation)
    around ``dispersion`` ``(L,)`` and centred so that the mean over the texts is ``dispersion`` exactly."""
    noise = np.random.default_rng(seed).normal(0.0, spread, size=(n_texts, len(dispersion)))
    return np.asarray(dispersion, dtype=float) + noise - noise.mean(axis=0)


def planted_shape(dispersion, spread: float = 0.1, n_texts: int = 10, seed: int = 0) -> DepthShape:
    """:func:`~attnlab.analysis.diversity.depth_shape` of texts planted around ``dispersion`` (:func:`planted_texts`)."""
    per_text = torch.tensor(planted_texts(dispersion, spread, n_texts, seed))
    hd = HeadDistances(torch.zeros(1, 1), per_text, list(range(len(dispersion))), n_heads=1)
    return depth_shape(hd, n_boot=500, seed=seed)


def diversity(dispersion=(3.0, 2.0, 1.0), half_width: float = 0.1, control_slope: float = 0.0,
              control_p: float = 0.001, n_texts: int = 10, with_control: bool = True,
              with_shape: bool = True) -> DiversityResult:
    """Lesson 09's record: dispersion per layer, its slope (interval ``half_width`` either side, over
    ``n_texts`` texts), the shuffled-layer control's slope ``control_slope`` with its p, and the
    curve's shape measured on ``n_texts`` texts planted around ``dispersion`` whose means scatter by
    about ``half_width`` (:func:`planted_shape`; the same on the content keys)."""
    disp = np.asarray(dispersion, dtype=float)
    slope = float(np.polyfit(np.arange(len(disp)), disp, 1)[0])
    control = Interval(control_slope, control_slope - 0.05, control_slope + 0.05, 0.95, 200) if with_control else None
    spread = half_width * np.sqrt(n_texts) / 2.0  # a mean of n_texts texts then scatters by about half_width / 2
    shape = planted_shape(disp, spread, n_texts) if with_shape else None
    return DiversityResult(n_queries=n_texts, layers=list(range(len(disp))),
                           dispersion=Interval(disp, disp - 0.1, disp + 0.1, 0.95, n_texts),
                           slope=Interval(slope, slope - half_width, slope + half_width, 0.95, n_texts),
                           spearman=-1.0, verdict=ANY, clustering_verdict=ANY, within_layer=0.2, between_layers=0.3,
                           baseline_slope=control, baseline_p=control_p if with_control else float("nan"),
                           shape=shape, content_shape=shape)


def group(n_groups: int, self_mass: float, cls_mass: float, entropy_ratio: float, *, n_texts: int = 20,
          n_layers: int = L, spread: float = 0.01) -> GroupSummary:
    """A regrouping summary whose texts scatter by ``spread`` around the given masses."""
    rng = np.random.default_rng(n_groups)
    rest = 1.0 - self_mass - cls_mass
    mean = np.array([self_mass, rest / 4, rest / 4, cls_mass, 0.0, rest / 2])  # self, prev, next, [CLS], [SEP], other
    per_text = mean + rng.normal(0, spread, size=(n_texts, 6))
    return GroupSummary(n_groups=n_groups, per_text=per_text, per_layer=np.tile(mean, (n_layers, 1)),
                        entropy_per_text=entropy_ratio + rng.normal(0, spread, size=n_texts), confidence=0.5)


def head_count(ppl=None, regroup=None, ppl_fixed_head=None) -> HeadCountResult:
    """``ppl``: ``{heads: per-seed perplexities}`` at a fixed width (``ppl_fixed_head``: at a fixed
    head size, default the same); ``regroup``: GroupSummary list (default: a collapse onto self)."""
    ppl = ppl or {1: [5.3, 5.31, 5.29], 8: [4.9, 4.91, 4.89], 16: [5.0, 5.01, 4.99]}  # head sizes 64, 8, 4
    ppl_fixed_head = ppl_fixed_head or ppl
    regroup = regroup or [group(H, 0.2, 0.3, 0.6), group(2, 0.7, 0.1, 0.3)]
    counts = sorted(ppl)
    return HeadCountResult(n_texts=10, regroup=regroup, collapse=ANY, head_counts=counts, seeds=[0, 1, 2],
                           perplexity=[list(ppl[h]) for h in counts], head_count=ANY, language="test",
                           perplexity_fixed_head=[list(ppl_fixed_head[h]) for h in counts], d_head=8, d_model=64)


def covering(factor: float = 1.5, top: float = 0.05, *, n_layers: int = L, n_heads: int = H, n_texts: int = 30,
             noise: float = 0.02, n_sets: int = 5, strong: float = 1.0, share: float = 0.5,
             moved: float = 0.5) -> Covering:
    """A covering record: every head alone moves each text's sentence vector by about 1 (head
    ``(0, 0)`` by ``strong``), masking every head by ``1 / top`` (``1 - cos`` of ``moved``, against
    0.5 between two texts), and each random set of ``share`` of the heads masked together by
    ``factor`` x the move additive heads make through the LayerNorm, along the heads' summed
    effects (> 1: the heads cover for one another, 1: additive, < 1: they work only together),
    each text scattered by ``noise`` (the real move about the null's by a tenth of it). The
    LayerNorm null is exactly additive (gain 1); the interaction is the two moves' difference.
    The pairs of heads of one layer (2 matchings a layer) move ``factor`` x their two moves added
    (pair interaction ``factor - 1``: above 0 covering, below 0 saturating)."""
    rng = np.random.default_rng(1)
    total = n_layers * n_heads
    k = max(1, int(round(share * total)))
    sets = [sorted(int(i) for i in rng.choice(total, size=k, replace=False)) for _ in range(n_sets)]
    single = 1.0 + noise * rng.normal(size=(n_texts, total))  # (N, K)
    single[:, 0] *= strong
    sums = np.sqrt(k) * (1.0 + noise * rng.normal(size=(n_sets, n_texts)))  # (S, N)
    null_joint = sums * (1.0 + noise * rng.normal(size=(n_sets, n_texts)))
    joint = factor * null_joint * (1.0 + 0.1 * noise * rng.normal(size=(n_sets, n_texts)))  # along the null's move
    everything = (1.0 / top) * (1.0 + noise * rng.normal(size=n_texts))  # (N,)
    pairs = layer_pairs(n_layers, n_heads) if n_heads > 1 else []
    added = np.sqrt(2.0) * (1.0 + noise * rng.normal(size=(len(pairs), n_texts)))  # (P, N)
    both = factor * added * (1.0 + 0.1 * noise * rng.normal(size=(len(pairs), n_texts)))  # r about factor - 1
    return Covering(k, sets, joint, sums, single, everything, n_heads, dot=joint * sums,
                    null_joint_norm=null_joint, null_sum_norm=sums.copy(), null_dot=null_joint * sums,
                    interaction_norm=np.abs(joint - null_joint),
                    all_distance=moved * (1.0 + noise * rng.normal(size=n_texts)), text_distance=0.5,
                    pairs=pairs, pair_joint_norm=both, pair_sum_norm=added, pair_interaction_norm=np.abs(both - added))


def probe_costs(truth: np.ndarray, rng: np.random.Generator, *, n_texts: int, n_train: int, noise: float,
                probe_noise: float, n_splits: int = N_SPLITS) -> tuple[np.ndarray, np.ndarray]:
    """``(fixed (N, L, H), refits (S, 2, N, L, H))``: one task's per-query head costs around ``truth``
    ``(L, H)``. Each held-out query scatters every head by ``noise`` (the same for every probe); each
    of ``n_train`` training queries pulls every head by its own normal draw, and a probe shifts the
    costs by ``probe_noise`` x the mean pull of its training queries x sqrt(half of ``n_train``): a
    refit on half the queries by SD ``probe_noise``, the probe on all of them by ``probe_noise / sqrt 2``.
    The refits of the ``n_splits`` splits share the training queries, as lesson 11's do."""
    pulls = rng.normal(size=(n_train,) + truth.shape)  # (n_train, L, H)
    scatter = noise * rng.normal(size=(n_texts,) + truth.shape)  # (N, L, H)

    def fitted(rows: np.ndarray) -> np.ndarray:
        return truth + probe_noise * pulls[rows].mean(axis=0) * np.sqrt(n_train / 2) + scatter

    halves = training_halves(n_train, n_splits, int(rng.integers(1 << 30)))
    refits = np.stack([fitted(rows) for rows in halves]).reshape((n_splits, 2, n_texts) + truth.shape)
    return fitted(np.arange(n_train)), refits


def tasks(kind: str = "different", *, n_layers: int = L, n_heads: int = H, n_texts: int = 30, noise: float = 0.05,
          accuracy: float = 0.9, chance: float = 0.3, probe_noise: float = 0.0) -> TaskStudy:
    """A task study: the two probes' per-query head costs scatter by ``noise`` around a ranking
    that is the same for both tasks (``kind="same"``: one task measured twice), reversed
    (``"different"``) or mostly shared (``"correlated"``: 0.8 of the family's ranking plus 0.2 of
    another). Each probe, and each refit of :data:`~attnlab.analysis.probes.N_SPLITS` splits of its
    ``2 * n_texts`` training queries, also shifts every head's cost by what its training sample
    pulls (:func:`probe_costs`, ``probe_noise``)."""
    rng = np.random.default_rng(2)
    total = n_layers * n_heads
    base = np.linspace(0.0, 1.0, total)[rng.permutation(total)].reshape(n_layers, n_heads)
    own = np.linspace(0.0, 1.0, total)[rng.permutation(total)].reshape(n_layers, n_heads)
    other = {"same": base, "different": 1.0 - base, "correlated": 0.8 * base + 0.2 * own}[kind]
    measured = {t: probe_costs(b, rng, n_texts=n_texts, n_train=2 * n_texts, noise=noise, probe_noise=probe_noise)
                for t, b in zip(TASKS, (base, other))}
    return TaskStudy(list(TASKS), {t: m[0] for t, m in measured.items()}, dict.fromkeys(TASKS, accuracy),
                     dict.fromkeys(TASKS, chance), n_train=2 * n_texts, n_test=n_texts,
                     refit_costs={t: m[1] for t, m in measured.items()}, identity_accuracy=0.7)


def pruning(effects=None, prune_max: float = 0.5, base: float = 0.0, n_layers: int = L, n_heads: int = H,
            n_texts: int = 30, noise: float = 0.002, n_random: int = 5, cover: float = 1.5, top: float = 0.05,
            task_kind: str = "different", task_noise: float = 0.05) -> PruningResult:
    """A representation-objective pruning record: single-head effects ``effects`` (default 0.01 each,
    each text scattered by ``noise``), curves rising to ``base + prune_max``, random orders, a
    :func:`covering` record (``cover``, ``top``) and a :func:`tasks` record (``task_kind``, ``task_noise``)."""
    effects = np.full((n_layers, n_heads), 0.01) if effects is None else np.asarray(effects, dtype=float)
    rng = np.random.default_rng(0)
    per_text_effects = effects + rng.normal(0, noise, size=(n_texts,) + effects.shape)  # (N, L, H)
    per_text_effects -= per_text_effects.mean(axis=0) - effects  # exact means
    fractions = np.array([0.0, 0.25, 0.5, 1.0])
    rise = {"importance": np.array([0.0, prune_max / 100, prune_max / 10, prune_max]),
            "reverse": np.array([0.0, prune_max / 2, prune_max * 0.8, prune_max])}
    per_text = {name: base + r[:, None] + np.outer(r, rng.normal(0, 0.05, n_texts)) for name, r in rise.items()}
    total = n_layers * n_heads
    orders = [[(int(i // n_heads), int(i % n_heads)) for i in rng.permutation(total)] for _ in range(n_random)]
    random = np.empty((n_random, len(fractions), n_texts))  # (S, F, N)
    for s, order in enumerate(orders):
        for i, f in enumerate(fractions):
            k = int(round(f * total))
            random[s, i] = base + sum((per_text_effects[:, l, h] for l, h in order[:k]), np.zeros(n_texts))
    per_text["random"] = random
    curves = {name: v.mean(axis=1) for name, v in per_text.items() if name != "random"}
    curves["random"] = random.mean(axis=2)
    study = PruningStudy(fractions=fractions, importance=np.ones((n_layers, n_heads)), curves=curves,
                         base_loss=base, prunable={"importance": 0.5, "random": 0.0, "reverse": 0.0},
                         tolerance=0.01, objective="test objective", relative=False, per_text=per_text,
                         random_orders=orders)
    halves = Interval(0.95, 0.93, 0.97, 0.95, n_texts)
    return PruningResult(study=study, ablation=effects, verdict=ANY, ablation_per_text=per_text_effects,
                         objective_importance={"sentence": effects, "token": effects, "contrastive": effects},
                         split_half={"sentence": halves, "token": halves, "contrastive": halves},
                         objective_agreement=Interval(0.99, 0.98, 0.995, 0.95, n_texts),
                         objective_agreements={"sentence vs token": Interval(0.99, 0.98, 0.995, 0.95, n_texts),
                                               "sentence vs contrastive": Interval(0.3, 0.25, 0.35, 0.95, n_texts)},
                         n_importance_texts=n_texts, n_eval_texts=n_texts,
                         covering=covering(cover, top, n_layers=n_layers, n_heads=n_heads, n_texts=n_texts),
                         tasks=tasks(task_kind, n_layers=n_layers, n_heads=n_heads, n_texts=n_texts,
                                     noise=task_noise))


def evidence(**records) -> Evidence:
    """Every record lesson 12 re-runs when missing (the registry's), each made by the function above named by
    its key, with ``records`` replacing some of them."""
    made = globals()
    return Evidence(**{r.key: made[r.key]() for r in RERUN if r.key not in records}, **records)


def save_hand_made_twin(model) -> None:
    """Save an untrained twin's evidence for ``model`` (a LoadedModel or its name) in the results folder, as
    ``attnlab report`` saves it: heads that do not converge with depth. Lesson 12 then reads it instead of
    measuring a twin."""
    twin = Evidence(diversity=diversity((3.0, 3.0, 3.0), half_width=0.01))
    save_twin(model, twin, name="hand-made twin", kind="shuffled", precision="fp32")
