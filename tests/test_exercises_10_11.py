"""Exercise checkers of lessons 10 and 11: right answers pass, wrong ones and None do not."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.head_stats import head_stats_of
from attnlab.analysis.importance import make_objective
from attnlab.analysis.pruning import pruning_study
from attnlab.analysis.regroup import regroup_attention
from attnlab.course.exercises import lesson_10 as ex10
from attnlab.course.exercises import lesson_11 as ex11
from attnlab.scratch.head_count_training import LookupLanguage, TrainConfig, head_count_study


def test_none_is_not_yet(tiny_en):
    for verdict in (ex10.check_group_width(tiny_en, None), ex10.check_most_focused_group_count(tiny_en, None),
                    ex10.check_best_head_count(tiny_en, None), ex11.check_heads_masked(tiny_en, None),
                    ex11.check_most_important_head(tiny_en, None), ex11.check_prunable_fraction(tiny_en, None)):
        assert not verdict and "not answered yet" in str(verdict)


def test_group_width(tiny_en):
    assert ex10.check_group_width(tiny_en, 16, n_groups=3)  # hidden 48 / 3
    assert not ex10.check_group_width(tiny_en, 4, n_groups=3)  # the old head width
    assert ex10.solution_group_width(tiny_en, 12) == tiny_en.head_dim
    with pytest.raises(ValueError):
        ex10.solution_group_width(tiny_en, 5)
    assert ex10.solution_group_width(tiny_en, np.int64(4)) == 12


def test_most_focused_group_count(tiny_en):
    text = "how do you play chess"
    focus = {}
    for g in (12, 6, 4, 3, 2, 1):  # brute force with head_stats_of directly
        s = head_stats_of(regroup_attention(tiny_en, [text], g))
        focus[g] = max(s.self_mass.mean(), s.cls_mass.mean(), s.sep_mass.mean())
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
