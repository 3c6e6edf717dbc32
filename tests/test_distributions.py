"""The shared measures against scipy's independent implementations."""

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy as sp_entropy

from attnlab.core.distributions import entropy, js_divergence, kl_divergence, smooth


def _rows(seed, shape):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g, dtype=torch.float64) * 2, dim=-1)


def test_entropy_matches_scipy():
    p = _rows(0, (5, 7))
    expected = np.array([sp_entropy(r) for r in p.numpy()])
    np.testing.assert_allclose(entropy(p).numpy(), expected, rtol=1e-10)


def test_entropy_of_one_hot_and_uniform():
    assert entropy(torch.tensor([0.0, 1.0, 0.0])).item() == 0.0
    assert abs(entropy(torch.full((8,), 1 / 8)).item() - np.log(8)) < 1e-6


def test_kl_and_js_match_scipy():
    p, q = _rows(1, (4, 6)), _rows(2, (4, 6))
    np.testing.assert_allclose(kl_divergence(p, q).numpy(),
                               [sp_entropy(a, b) for a, b in zip(p.numpy(), q.numpy())], rtol=1e-10)
    # scipy returns the JS *distance*, the square root of the divergence
    np.testing.assert_allclose(js_divergence(p, q).numpy(),
                               [jensenshannon(a, b) ** 2 for a, b in zip(p.numpy(), q.numpy())], rtol=1e-8)


def test_js_is_symmetric_zero_on_self_and_bounded():
    p, q = _rows(3, (10, 5)), _rows(4, (10, 5))
    assert torch.allclose(js_divergence(p, q), js_divergence(q, p))
    assert torch.allclose(js_divergence(p, p), torch.zeros(10, dtype=p.dtype))
    disjoint = js_divergence(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))
    assert abs(disjoint.item() - np.log(2)) < 1e-6


def test_smooth_keeps_rows_normalised():
    p = _rows(5, (3, 9))
    s = smooth(p, 1e-3)
    assert torch.allclose(s.sum(-1), torch.ones(3, dtype=p.dtype))
    assert (s > 0).all()
