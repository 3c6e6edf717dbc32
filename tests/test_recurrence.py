"""Lesson 03's measurements: complexity facts, Jacobians, timings (verdicts: test_claims_recurrence)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.scratch.recurrence import (
    COMPLEXITY,
    Influence,
    Timing,
    complexity_markdown,
    crossover_length,
    exponent_summary,
    first_token_influence,
    growth_exponent,
    make_layer,
    path_length,
    position_jacobian_norms,
    sequential_steps,
    time_layers,
)
from attnlab.viz.recurrence_plots import SHARE_FLOOR, plot_first_token_share, plot_timing


def test_table_one_facts():
    rows = {r["layer"]: r for r in COMPLEXITY}
    assert rows["Self-attention"]["per_layer"] == "O(n^2 · d)"
    assert rows["Self-attention"]["sequential"] == rows["Self-attention"]["path"] == "O(1)"
    assert rows["Recurrent (RNN/LSTM)"]["per_layer"] == "O(n · d^2)"
    assert rows["Recurrent (RNN/LSTM)"]["sequential"] == rows["Recurrent (RNN/LSTM)"]["path"] == "O(n)"
    # the projections every attention layer also runs: n tokens times a d x d matrix, in parallel
    assert rows["Self-attention: Q/K/V/O projections"]["per_layer"] == "O(n · d^2)"
    assert rows["Self-attention: Q/K/V/O projections"]["sequential"] == "O(1)"
    md = complexity_markdown()
    assert md.count("\n") == len(COMPLEXITY) + 1 and "| Self-attention |" in md


def test_path_and_steps():
    assert path_length("attention", 50) == 1
    assert path_length("lstm", 50) == 49 and path_length("bilstm", 50) == 49
    assert sequential_steps("attention", 50) == 1 and sequential_steps("lstm", 50) == 50
    with pytest.raises(ValueError, match="kind must be"):
        path_length("gru", 5)
    with pytest.raises(ValueError):
        path_length("lstm", 1)


@pytest.mark.parametrize("kind", ["lstm", "bilstm", "attention"])
def test_position_jacobian_norms_match_brute_force(kind):
    layer = make_layer(kind, width=6, n_heads=2, seed=0)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))
    # brute force: full Jacobian of the last output w.r.t. the whole input
    jac = torch.autograd.functional.jacobian(lambda inp: layer(inp.unsqueeze(0))[0, -1], x)  # (6, 5, 6)
    expected = jac.pow(2).sum(dim=(0, 2)).sqrt()
    assert torch.allclose(position_jacobian_norms(layer, x), expected, atol=1e-6)
    with pytest.raises(ValueError):
        position_jacobian_norms(layer, x.unsqueeze(0))


def test_make_layer_shapes_and_errors():
    for kind in ("lstm", "bilstm", "attention"):
        assert make_layer(kind, 8, n_heads=2)(torch.zeros(2, 3, 8)).shape == (2, 3, 8)
    with pytest.raises(ValueError):
        make_layer("bilstm", 7)
    with pytest.raises(ValueError):
        make_layer("transformer", 8)
    with pytest.raises(ValueError, match="batch"):
        time_layers([8], batch=0)


def test_lstm_forgets_first_token_attention_does_not():
    inf = first_token_influence([4, 40], width=16, seeds=(0, 1))
    assert inf.share["lstm"][1] < 0.1 * inf.share["lstm"][0]
    # the mean share is the mean of the per-seed shares; one row per seed
    assert inf.seed_shares("lstm").shape == (2, 2)
    assert inf.share["bilstm"] == pytest.approx(inf.seed_shares("bilstm").mean(axis=0).tolist())
    assert 0.5 < inf.share["attention"][1] < 2.0
    assert Influence.from_record(inf.to_record()) == inf


def test_timing_structure_and_growth_exponent():
    threads = torch.get_num_threads()
    t = time_layers([8, 16], width=16, batch=2, repeats=3)
    assert set(t.seconds) == set(t.samples) == {"lstm", "attention"}
    assert all(len(v) == 2 and all(s > 0 for s in v) for v in t.seconds.values())
    # every repeat is kept, and the reported time is their median
    for kind in ("lstm", "attention"):
        assert [len(r) for r in t.samples[kind]] == [3, 3]
        assert t.seconds[kind] == pytest.approx([float(np.median(r)) for r in t.samples[kind]])
        assert t.repeats(kind).shape == (3, 2)
    assert Timing.from_record(t.to_record()) == t
    assert torch.get_num_threads() == threads  # restored after timing on one thread
    assert Timing([8], 1, 4, {"lstm": [2.0]}).repeats("lstm").tolist() == [[2.0]]  # no samples: the one value
    ns = [10, 20, 40, 80]
    assert growth_exponent(ns, [3e-6 * n**2 for n in ns]) == pytest.approx(2.0)
    assert growth_exponent(ns, [5e-4 * n for n in ns]) == pytest.approx(1.0)


def test_crossover_and_exponents_on_constructed_numbers():
    fast = Timing([16, 32, 128], 4, 64, {"lstm": [2.0, 3.0, 4.0], "attention": [1.0, 1.0, 9.0]})
    assert crossover_length(fast) == 128
    slow = Timing([16, 32], 4, 64, {"lstm": [1.0, 1.0], "attention": [2.0, 0.5]})
    assert crossover_length(slow) == 16
    never = Timing([16, 32], 4, 64, {"lstm": [3.0, 4.0], "attention": [1.0, 2.0]})
    assert crossover_length(never) is None
    exps = exponent_summary(Timing([10, 20, 40], 1, 8, {"lstm": [1.0, 2.0, 4.0], "attention": [1.0, 4.0, 16.0]}))
    assert exps == pytest.approx({"lstm": 1.0, "attention": 2.0})
    assert Timing.from_record(fast.to_record()) == fast


def test_plots_draw_the_measurements():
    import matplotlib

    matplotlib.use("Agg")
    t = Timing([16, 32], 4, 64, {"lstm": [0.002, 0.003], "attention": [0.001, 0.004]},
               samples={"lstm": [[0.001, 0.002, 0.005], [0.003, 0.003, 0.003]],
                        "attention": [[0.001, 0.001, 0.001], [0.002, 0.004, 0.006]]})
    ax = plot_timing(t)
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert set(lines) == {"LSTM", "self-attention"}  # names, not code identifiers
    assert lines["LSTM"] == pytest.approx([2.0, 3.0]) and lines["self-attention"] == pytest.approx([1.0, 4.0])  # ms
    # one bar per kind and length, from the fastest to the slowest repeat
    bars = [c for c in ax.containers if c.has_yerr]
    assert len(bars) == 2
    segments = bars[0].lines[2][0].get_segments()  # the lstm's vertical bars
    assert [(seg[0][1], seg[1][1]) for seg in segments] == [pytest.approx((1.0, 5.0)), pytest.approx((3.0, 3.0))]
    inf = Influence([4, 64], [0], 16, share={"lstm": [0.5, 0.0], "attention": [1.0, 1.0]})
    ax = plot_first_token_share(inf)
    ys = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert ys["LSTM"] == [0.5, SHARE_FLOOR] and ys["self-attention"] == [1.0, 1.0]  # an underflowed share stays on the log axis
    assert any(label.startswith("0 (underflow)") for label in ys)  # and the floor is marked as such
    kept = Influence([4, 64], [0], 16, share={"lstm": [0.5, 0.1], "attention": [1.0, 1.0]})
    assert not any(line.get_label().startswith("0 (underflow)") for line in plot_first_token_share(kept).get_lines())
