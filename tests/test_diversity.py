"""Head distances (Clark et al.) against scipy, dispersion against loops, the depth trend."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

import attnlab as al
from attnlab.analysis.diversity import (
    HeadDistances,
    depth_trend,
    head_distances,
    layer_dispersion,
    pairwise_head_js,
)

from test_aggregate import same_length_texts


def _random_maps(b=3, k=5, n=6, seed=0):
    torch.manual_seed(seed)
    return torch.softmax(torch.randn(b, k, n, n) * 2, dim=-1)


def test_js_of_a_head_with_itself_is_zero_and_symmetric():
    d = pairwise_head_js(_random_maps())
    assert torch.all(d.diagonal(dim1=1, dim2=2) == 0)
    torch.testing.assert_close(d, d.transpose(1, 2))
    same = pairwise_head_js(_random_maps()[:, :1].expand(3, 4, 6, 6))
    assert float(same.abs().max()) < 1e-6


def test_js_matches_scipy_summed_over_rows():
    maps = _random_maps()
    p = (0.999 * maps + 0.001 / 6).double().numpy()
    d = pairwise_head_js(maps)
    for b, i, j in [(0, 0, 1), (1, 2, 4), (2, 3, 0)]:
        ref = sum(jensenshannon(p[b, i, r], p[b, j, r]) ** 2 for r in range(6))  # natural log, squared
        assert d[b, i, j].item() == pytest.approx(ref, abs=1e-6)


def test_layer_dispersion_is_the_mean_over_head_pairs():
    torch.manual_seed(1)
    x = torch.rand(2, 12, 12).double()
    d = x + x.transpose(1, 2)
    d[:, range(12), range(12)] = 0
    got = layer_dispersion(d, n_layers=3, n_heads=4)  # (2, 3)
    for b in range(2):
        for l in range(3):
            pairs = [d[b, 4 * l + i, 4 * l + j] for i in range(4) for j in range(i + 1, 4)]
            assert got[b, l].item() == pytest.approx(float(sum(pairs) / len(pairs)))


def test_head_distances_match_brute_force_over_all_maps(tiny_en):
    texts = same_length_texts(9, seed=12)
    hd = head_distances(tiny_en, texts, batch_size=4, progress=False)
    maps = al.attention(tiny_en, texts).tensor  # (N, L, H, n, n)
    n = maps.shape[-1]
    flat = maps.reshape(9, 24, n, n)
    p = (0.999 * flat + 0.001 / n).double().numpy()
    for a, b in [(0, 1), (3, 17), (12, 23)]:
        ref = np.mean([sum(jensenshannon(p[t, a, r], p[t, b, r]) ** 2 for r in range(n)) for t in range(9)])
        assert hd.distance[a, b].item() == pytest.approx(ref, abs=1e-5)
    assert hd.per_text.shape == (9, 2)
    np.testing.assert_allclose(hd.dispersion(), layer_dispersion(hd.distance, 2, 12).numpy(), atol=1e-9)


def test_mds_output_shape(tiny_en):
    hd = head_distances(tiny_en, same_length_texts(4), progress=False)
    xy = hd.mds(seed=0)
    assert xy.shape == (24, 2) and np.isfinite(xy).all()
    assert hd.labels()[13] == (1, 1)


def _fake(per_text: np.ndarray) -> HeadDistances:
    n_layers = per_text.shape[1]
    return HeadDistances(torch.zeros(n_layers * 2, n_layers * 2), torch.tensor(per_text), list(range(n_layers)), 2)


def test_depth_trend_verdicts():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.05, (200, 6))
    shrinking = _fake(np.linspace(2.0, 1.0, 6) + noise)
    growing = _fake(np.linspace(1.0, 2.0, 6) + noise)
    flat = _fake(np.full(6, 1.5) + rng.normal(0, 1.0, (200, 6)))
    assert depth_trend(shrinking, n_boot=300).verdict() == "holds"
    assert depth_trend(growing, n_boot=300).verdict() == "does not hold"
    t = depth_trend(shrinking, n_boot=300)
    assert t.slope == pytest.approx(-0.2, abs=0.02) and t.spearman < -0.9
    assert np.all(t.low <= t.dispersion) and np.all(t.dispersion <= t.high)
    assert depth_trend(flat, n_boot=300).verdict() in ("cannot tell", "holds", "does not hold")
    assert "Slope" in t.summary()


def test_depth_trend_needs_three_layers():
    with pytest.raises(ValueError):
        depth_trend(_fake(np.ones((5, 2))))
