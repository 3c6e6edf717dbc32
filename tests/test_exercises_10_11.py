"""Exercise checkers of lessons 10 and 11: right answers pass, wrong ones and None do not."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.importance import make_objective
from attnlab.analysis.pruning import pruning_study
from attnlab.analysis.regroup import regroup_attention
from attnlab.course.exercises import lesson_10 as ex10
from attnlab.course.exercises import lesson_11 as ex11
from attnlab.scratch.head_count_training import LookupLanguage, TrainConfig, head_count_study
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol10 = teacher("10")

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


def test_none_is_not_yet(tiny_en):
    for verdict in (ex10.check_group_width(tiny_en, None), ex10.check_most_focused_group_count(tiny_en, None),
                    ex10.check_best_head_count(tiny_en, None), ex11.check_heads_masked(tiny_en, None),
                    ex11.check_most_important_head(tiny_en, None), ex11.check_prunable_fraction(tiny_en, None)):
        assert not verdict and "not answered yet" in str(verdict)


def test_group_width(tiny_en):
    assert ex10.check_group_width(tiny_en, 16, n_groups=3)  # hidden 48 / 3
    assert not ex10.check_group_width(tiny_en, 4, n_groups=3)  # the old head width
    assert sol10.solution_group_width(tiny_en, 12) == tiny_en.head_dim
    with pytest.raises(ValueError):
        sol10.solution_group_width(tiny_en, 5)
    assert sol10.solution_group_width(tiny_en, np.int64(4)) == 12


def _focus_by_hand(maps: np.ndarray) -> float:
    """Largest single-token mass of one text's maps ``(L, h', n, n)``: first key [CLS], last [SEP],
    else self / previous / next, each row's weight counted once."""
    n = maps.shape[-1]
    masses = {"self": 0.0, "previous": 0.0, "next": 0.0, "[CLS]": 0.0, "[SEP]": 0.0}
    rows = maps.reshape(-1, n, n)
    for block in rows:
        for i in range(n):
            masses["[CLS]"] += block[i, 0]
            masses["[SEP]"] += block[i, n - 1]
            for name, j in (("self", i), ("previous", i - 1), ("next", i + 1)):
                if 0 < j < n - 1:
                    masses[name] += block[i, j]
    return max(masses.values()) / (len(rows) * n)


def test_most_focused_group_count(tiny_en):
    text = "how do you play chess"
    focus = {}
    for g in (12, 6, 4, 3, 2, 1):  # brute force on the regrouped maps
        att = regroup_attention(tiny_en, [text], g)
        focus[g] = _focus_by_hand(att.tensor[0].numpy())
    best = max(focus, key=focus.get)
    assert ex10.check_most_focused_group_count(tiny_en, best, texts=[text])
    assert not ex10.check_most_focused_group_count(tiny_en, 12 if best != 12 else 1, texts=[text])


def test_best_head_count(tiny_en):
    config = TrainConfig(d_model=16, n_layers=1, steps=5, batch_size=8, n_train=64, n_val=32, eval_every=5, warmup=1)
    study = head_count_study((1, 4), seeds=(0,), language=LookupLanguage(vocab=3, offsets=(1, 2), seq_len=8),
                             config=config)
    ppl = {h: study.perplexities(h).mean() for h in (1, 4)}
    best = min(ppl, key=ppl.get)
    assert ex10.check_best_head_count(tiny_en, best, study=study)
    assert not ex10.check_best_head_count(tiny_en, 5 - best, study=study)
    assert not ex10.check_best_head_count(tiny_en, best)  # no study given


def test_heads_masked(tiny_en):
    assert ex11.check_heads_masked(tiny_en, 7, fraction=0.3)  # round(0.3 * 24) = 7
    assert not ex11.check_heads_masked(tiny_en, 8, fraction=0.3)


def test_most_important_head(tiny_en):
    scores = np.zeros((2, 12))
    scores[1, 5] = 3.0
    assert ex11.check_most_important_head(tiny_en, (1, 5), importance=scores)
    assert not ex11.check_most_important_head(tiny_en, (2, 6), importance=scores)  # 1-based by mistake
    assert not ex11.check_most_important_head(tiny_en, "L2 H6", importance=scores)


def test_prunable_fraction(tiny_en):
    objective = make_objective(tiny_en, ["how do you play chess", "what is the best game", "where is the king"])
    study = pruning_study(tiny_en, objective, n_random=1)
    assert ex11.check_prunable_fraction(tiny_en, study.prunable["importance"], study=study)
    assert not ex11.check_prunable_fraction(tiny_en, study.prunable["importance"] + 0.1, study=study)
