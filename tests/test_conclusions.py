"""Lesson 12's verdicts are computed from the evidence, not written in advance."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.course import conclusions as c
from attnlab.course import results
from attnlab.course.exercises import lesson_12 as ex12
from attnlab.course.verdicts import ClaimVerdict, combine, from_tests


def _evidence(fixed_share=0.8, content_share=0.1, dispersion=(3.0, 2.0, 1.0), single=0.01, prune_max=0.5,
              prunable=0.3, ppl=None, labels=None, effects=None) -> c.Evidence:
    L, H = 2, 4
    n_fixed = int(round(fixed_share * L * H))
    fixed = [[i // H, i % H] for i in range(n_fixed)]
    labels = labels if labels is not None else [["content", "position", "position", "neither"]] * L
    effects = effects if effects is not None else np.full((L, H), single / 2).tolist()
    effects = np.asarray(effects, dtype=float)
    effects.flat[0] = single
    ppl = ppl or {1: (5.3, 0.01), 8: (4.9, 0.01), 32: (5.0, 0.01)}
    slope = float(np.polyfit(range(len(dispersion)), dispersion, 1)[0])
    data = {
        "08_layer_averaging": {"fixedness": np.ones((L, H)).tolist(), "fixed_heads": fixed,
                               "verdicts": {"patterns more fixed with depth": "holds"}},
        "06_perturbation": {"content_follower_share": content_share, "position_follower_share": 0.5,
                            "follower_labels": labels},
        "09_head_diversity": {"dispersion": list(dispersion), "slope": slope, "slope_ci": [slope - 0.1, slope + 0.1],
                              "spearman": -1.0, "verdict": "holds" if slope + 0.1 < 0 else "does not hold"},
        "10_how_many_heads": {"collapse_verdict": "holds", "collapse_numbers": {"focus": "0.9"},
                              "perplexity": {str(h): {"ppl_mean": m, "ppl_sd": s, "seeds": 3} for h, (m, s) in ppl.items()},
                              "head_count_verdict": "holds"},
        "11_pruning_heads": {"base_loss": 1.0, "ablation": effects.tolist(),
                             "curves": {"importance": [1.0, 1.0 + prune_max], "random": [[1.0, 1.0 + prune_max / 2]]},
                             "prunable": {"importance": prunable}, "objective": "test"},
    }
    return c.Evidence(data, {k: "saved" for k in data})


def test_conclusion_1_needs_both_parts():
    assert c.conclusion_1(_evidence(0.8, 0.1)).verdict == "holds"
    assert c.conclusion_1(_evidence(0.8, 0.6)).verdict == "does not hold"   # many content heads
    assert c.conclusion_1(_evidence(0.25, 0.1)).verdict == "does not hold"  # few fixed heads


def test_conclusion_2_follows_the_dispersion_trend():
    assert c.conclusion_2(_evidence(dispersion=(3.0, 2.0, 1.0))).verdict == "holds"
    assert c.conclusion_2(_evidence(dispersion=(1.0, 2.0, 3.0))).verdict == "does not hold"


def test_conclusion_4_weak_heads_strong_ensemble():
    assert c.conclusion_4(_evidence(single=0.05, prune_max=0.5)).verdict == "holds"
    assert c.conclusion_4(_evidence(single=0.4, prune_max=0.5)).verdict == "does not hold"  # one head does most
    assert c.conclusion_4(_evidence(single=0.001, prune_max=0.01)).verdict == "does not hold"  # heads barely matter


def test_conclusion_5_uses_the_seed_spread():
    assert c.conclusion_5(_evidence(ppl={1: (5.3, .01), 8: (4.9, .01), 32: (5.0, .01)})).verdict == "holds"
    assert c.conclusion_5(_evidence(ppl={1: (5.3, .01), 8: (5.0, .01), 32: (4.5, .01)})).verdict == "does not hold"
    assert c.conclusion_5(_evidence(ppl={1: (5.0, .5), 8: (4.9, .5), 32: (5.0, .5)})).verdict == "cannot tell"


def test_conclusion_6_looks_for_non_content_heads_among_the_useful():
    labels = [["content", "position", "position", "neither"], ["content"] * 4]
    useful_content = np.array([[0.9, 0, 0, 0], [0.8, 0, 0, 0]])
    assert c.conclusion_6(_evidence(labels=labels, effects=useful_content.tolist(), single=0.9)).verdict == "does not hold"
    useful_positional = np.array([[0, 0.9, 0, 0], [0, 0, 0, 0]])
    ev = _evidence(labels=labels, effects=useful_positional.tolist(), single=0.0)
    assert c.conclusion_6(ev).verdict == "holds"


def test_missing_evidence_cannot_tell():
    ev = c.Evidence({name: None for name in c.SOURCES}, {name: "missing" for name in c.SOURCES})
    verdicts = c.all_conclusions(ev)
    assert [v.verdict for v in verdicts] == ["cannot tell"] * 6
    assert all("missing evidence" in v.numbers for v in verdicts)


def test_gather_reads_saved_results_and_reruns_missing(tmp_path, monkeypatch, tiny_en):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    results.save("06_perturbation", {"x": 1}, model=tiny_en.name)
    results.save("08_layer_averaging", {"x": 2}, model="another model")  # must not be used
    ran = []

    def runner(name, m):
        ran.append(name)
        if name == "08_layer_averaging":
            results.save(name, {"x": 3}, model=m.name)

    ev = c.gather(tiny_en, ("06_perturbation", "08_layer_averaging", "09_head_diversity"), runner=runner,
                  progress=False)
    assert ran == ["08_layer_averaging", "09_head_diversity"]
    assert ev.origin == {"06_perturbation": "saved", "08_layer_averaging": "recomputed", "09_head_diversity": "missing"}
    assert ev.get("08_layer_averaging") == {"x": 3}


def test_verdict_words_are_checked():
    with pytest.raises(ValueError):
        ClaimVerdict("x", "maybe", {})
    assert combine(["holds", "holds"]) == "holds"
    assert combine(["holds", "cannot tell"]) == "cannot tell"
    assert combine(["cannot tell", "does not hold"]) == "does not hold"
    assert from_tests(False, True) == "does not hold"


def test_lesson_12_exercises():
    ev = _evidence(0.75, 0.4)
    assert ex12.check_fixed_share(ev, ex12.solution_fixed_share(ev))
    assert not ex12.check_fixed_share(ev, 0.5)
    assert ex12.solution_rejudge(ev) == "holds"  # 40% content heads is "at most half"
    assert ex12.check_rejudge(ev, "holds") and not ex12.check_rejudge(ev, "does not hold")
    assert ex12.solution_most_diverse_layer(ev) == 1
    assert not ex12.check_most_diverse_layer(ev, 3)
    assert not ex12.check_fixed_share(ev, None)
