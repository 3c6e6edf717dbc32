"""The one memo: entries per model object, per run mode and per arguments, dropped with the model."""

from __future__ import annotations

import gc

import pytest

from attnlab.core.memo import forget, is_memoized, memo, models_held
from attnlab.core.models import load_model
from attnlab.tools.testing import save_tiny_model


def tiny_model(folder, seed):
    """A fresh tiny BERT loaded from ``folder`` (1 layer, 2 heads)."""
    return load_model(str(save_tiny_model(folder, n_layers=1, n_heads=2, hidden=8, seed=seed)), verbose=False)


class Counter:
    """A ``compute`` that says how often it ran and returns a fresh object each time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> list[int]:
        self.calls += 1
        return [self.calls]


def test_the_same_model_mode_and_arguments_compute_once(tiny_en):
    forget(tiny_en)
    count = Counter()
    first = memo(tiny_en, "sums", (3, 4), count)
    assert memo(tiny_en, "sums", (3, 4), count) is first and count.calls == 1
    other_args = memo(tiny_en, "sums", (3, 5), count)
    other_name = memo(tiny_en, "means", (3, 4), count)
    assert count.calls == 3 and other_args is not first and other_name is not first


def test_smoke_and_full_mode_never_share_an_entry(tiny_en, monkeypatch):
    forget(tiny_en)
    count = Counter()
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    smoke = memo(tiny_en, "survey", (), count)
    assert is_memoized(tiny_en, "survey", ()) and not is_memoized(tiny_en, "survey", (), smoke=False)
    monkeypatch.setenv("ATTNLAB_SMOKE", "0")
    full = memo(tiny_en, "survey", (), count)
    assert count.calls == 2 and full is not smoke
    assert memo(tiny_en, "survey", (), count, smoke=True) is smoke  # the mode can also be named
    assert memo(tiny_en, "survey", (), count, smoke=False) is full and count.calls == 2


def test_two_models_never_share_an_entry_even_with_the_same_name_and_shape(tmp_path):
    a = tiny_model(tmp_path / "a", seed=1)
    b = load_model(a.path, verbose=False)  # the same folder loaded twice
    assert (a.name, a.n_layers, a.n_heads) == (b.name, b.n_layers, b.n_heads)
    count = Counter()
    from_a, from_b = memo(a, "x", (), count), memo(b, "x", (), count)
    assert count.calls == 2 and from_a is not from_b
    assert memo(a, "x", (), count) is from_a and memo(b, "x", (), count) is from_b


def test_a_dead_models_entries_go_and_a_new_model_starts_empty(tmp_path):
    gc.collect()  # models of earlier tests that only a collection frees go now, not inside the count below
    held = models_held()
    m = tiny_model(tmp_path / "m", seed=2)
    memo(m, "x", (), Counter())
    assert models_held() == held + 1
    del m
    gc.collect()
    assert models_held() == held
    fresh = load_model(str(tmp_path / "m"), verbose=False)  # may reuse the dead model's id(): it must not see its entries
    assert not is_memoized(fresh, "x", ())


def test_a_failed_compute_leaves_no_entry_and_forget_drops_a_models_entries(tiny_en):
    forget(tiny_en)

    def broken():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        memo(tiny_en, "broken", (), broken)
    assert not is_memoized(tiny_en, "broken", ())
    memo(tiny_en, "kept", (), Counter())
    forget(tiny_en)
    assert not is_memoized(tiny_en, "kept", ())


def test_memo_refuses_what_it_cannot_key():
    with pytest.raises(ValueError, match="name"):
        memo(object.__new__(type("M", (), {})), "", (), Counter())
    with pytest.raises(TypeError, match="weakly"):
        memo(1, "x", (), Counter())
