"""Untrained twins (:mod:`attnlab.core.twins`) and the control that holds every claim about the model
against its twin (:mod:`attnlab.course.twin_control`), with the floors of conclusions 2, 3 and 5."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import lesson_records as rec
from attnlab.core.twins import changed_parameters, kept_parameters, shuffled_for_a_while, untrained_twin
from attnlab.course import evidence as c
from attnlab.course import twin_evidence
from attnlab.course.claims import conclusions as claims
from attnlab.course.claims import head_count as hc
from attnlab.analysis import covering as cv
from attnlab.analysis.stats import bootstrap_mean, paired_difference
from attnlab.course.twin_control import (
    AS_MUCH,
    HOW_DIFFERENCED,
    NEITHER,
    PAIRED,
    REMOVED,
    UNPAIRED,
    against_twin,
    clears_floor,
    difference,
    pooled_twin,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, ClaimVerdict
from attnlab.analysis.stats import Interval


# --------------------------------------------------------------------------- making a twin


def test_shuffled_twin_permutes_each_tensor_and_keeps_embeddings_and_layernorms(tiny_en):
    twin = untrained_twin(tiny_en, seed=3)
    trained = dict(tiny_en.model.named_parameters())
    shuffled = dict(twin.model.named_parameters())
    kept = kept_parameters(tiny_en.model)
    assert any("word_embeddings" in n for n in kept) and any("LayerNorm" in n for n in kept)
    for name, p in trained.items():
        q = shuffled[name]
        if name in kept:
            assert torch.equal(p, q), name
            continue
        # the same values, another arrangement: the scale is kept and the learning gone
        assert torch.equal(p.detach().flatten().sort().values, q.detach().flatten().sort().values), name
        if p.detach().unique().numel() > 8:  # (a tensor of zeros has one arrangement)
            assert not torch.equal(p, q), name
    assert twin.name != tiny_en.name and "untrained twin" in twin.name
    assert twin.model is not tiny_en.model  # the trained model is left as it was


def test_twin_in_the_models_own_weights_is_put_back_bit_for_bit(tiny_en):
    """Lesson 12's reduced twin shuffles the model's own weights (no second copy in memory): inside the
    block they are the copied twin's, afterwards the trained ones exactly, also when the block fails."""
    trained = {n: p.detach().clone() for n, p in tiny_en.model.named_parameters()}
    copied = dict(untrained_twin(tiny_en, seed=4).model.named_parameters())
    with pytest.raises(RuntimeError, match="stopped"):
        with shuffled_for_a_while(tiny_en, seed=4) as twin:
            assert twin.model is tiny_en.model and "untrained twin" in twin.name
            inside = dict(twin.model.named_parameters())
            assert all(torch.equal(inside[n], copied[n]) for n in trained)
            assert any(not torch.equal(inside[n], trained[n]) for n in trained)  # the check can fail
            raise RuntimeError("stopped")
    assert all(torch.equal(p, trained[n]) for n, p in tiny_en.model.named_parameters())


def test_fresh_twin_initialises_the_changed_tensors_anew(tiny_en):
    twin = untrained_twin(tiny_en, kind="fresh", seed=5)  # (the tiny model was itself drawn with seed 0)
    trained = dict(tiny_en.model.named_parameters())
    fresh = dict(twin.model.named_parameters())
    changed = changed_parameters(tiny_en.model)
    weights = [n for n in changed if n.endswith("weight") and trained[n].dim() == 2]
    assert weights and all(not torch.equal(trained[n], fresh[n]) for n in weights)
    # a linear layer's fresh weights follow the architecture's initialiser (normal, std initializer_range)
    std = tiny_en.model.config.initializer_range
    spread = torch.cat([fresh[n].detach().flatten() for n in weights]).std().item()
    assert spread == pytest.approx(std, rel=0.2)
    for name in kept_parameters(tiny_en.model):
        assert torch.equal(trained[name], fresh[name]), name


def test_twin_refuses_an_unknown_kind(tiny_en):
    with pytest.raises(ValueError, match="kind must be one of"):
        untrained_twin(tiny_en, kind="random")


# --------------------------------------------------------------------------- the control


def _verdict(word: str, estimate: float, low: float, high: float, floor: float = 0.0) -> ClaimVerdict:
    return ClaimVerdict("a claim", word, {"estimate": estimate, "low": low, "high": high, "floor": floor})


def test_difference_counts_both_runs_noise():
    d = difference(Interval(1.0, 0.7, 1.4, 0.95, 10), Interval(0.5, 0.1, 0.6, 0.95, 10))
    assert d.estimate == pytest.approx(0.5)
    assert d.low == pytest.approx(0.5 - np.hypot(0.3, 0.1))  # the model's lower side, the twin's upper side
    assert d.high == pytest.approx(0.5 + np.hypot(0.4, 0.4))


@pytest.mark.parametrize(("diff", "direction", "floor", "expected"), [
    ((0.3, 0.2, 0.4), +1, 0.1, True),
    ((0.3, 0.05, 0.4), +1, 0.1, False),  # the interval reaches inside the floor
    ((-0.3, -0.4, -0.2), +1, 0.1, False),  # beyond, but on the side away from holding
    ((-0.3, -0.4, -0.2), -1, 0.1, True),
    ((-0.3, -0.4, -0.05), -1, 0.1, False),
])
def test_clears_floor_reads_the_side_toward_holding(diff, direction, floor, expected):
    assert clears_floor(Interval(*diff, 0.95, 10), direction, floor) is expected


def test_clears_floor_needs_a_direction():
    with pytest.raises(ValueError, match="toward holding"):
        clears_floor(Interval(0.3, 0.2, 0.4, 0.95, 10), 0, 0.1)


# the model's and the twin's deciding numbers for each word, on a claim that holds above 0.5 (floor 0.1)
NUMBER_OF = {HOLDS: (0.9, 0.85, 0.95), FAILS: (0.1, 0.05, 0.15), UNSURE: (0.5, 0.3, 0.7)}


@pytest.mark.parametrize("twin_word", [HOLDS, FAILS, UNSURE, None])
@pytest.mark.parametrize("model_word", [HOLDS, FAILS, UNSURE])
def test_twin_gates_only_holds(model_word, twin_word):
    """Every pair of the model's and the twin's words: the twin takes away only a "holds"; "does not hold"
    stays, saying what the twin does; "cannot tell" stays; a "holds" stands only beyond the twin by the floor,
    and without a twin it waits for the twin's evidence."""
    model = _verdict(model_word, *NUMBER_OF[model_word], floor=0.1)
    model.numbers["holds above"] = 0.6  # the line the rule draws (0.5 and the floor)
    twin = None if twin_word is None else _verdict(twin_word, *NUMBER_OF[twin_word], floor=0.1)
    checked = against_twin("1", model, twin, direction=+1)  # row 1: a larger number is toward "holds"
    if model_word == FAILS:
        assert checked.verdict == FAILS
        if twin_word is not None:
            assert checked.numbers["what the untrained twin says"] == (REMOVED if twin_word == HOLDS else NEITHER)
        assert checked.reason() == ""
    elif model_word == UNSURE:
        assert checked.verdict == UNSURE and checked.because == "interval"
        assert checked.reason() == "The interval [0.3, 0.7] reaches the line at 0.6."
    elif twin_word is None:
        assert checked.verdict == UNSURE and checked.because == "missing"
        assert "It waits for evidence" in checked.what_would_change()
    elif twin_word == HOLDS:  # the twin gives the same: no learned effect beyond it
        assert checked.verdict == UNSURE and checked.because == "twin"
        assert "0.9" in checked.reason() and "0.1" in checked.reason()  # both numbers and the floor
        assert "waits for evidence" not in checked.what_would_change()
    else:  # the twin falls short by far more than the floor
        assert checked.verdict == HOLDS and checked.numbers["model minus untrained twin"].startswith("+")


def test_a_model_far_beyond_a_holding_twin_holds():
    """Both hold, but the model is beyond its twin by far more than the floor (C2's measured case: -0.30
    against -0.132, floor 0.02): it holds; a model only a little beyond a holding twin cannot tell."""
    model = _verdict(HOLDS, -0.30, -0.31, -0.29, floor=0.02)
    twin = _verdict(HOLDS, -0.132, -0.137, -0.127, floor=0.02)
    assert against_twin("2", model, twin, direction=-1).verdict == HOLDS  # row 2: smaller is toward "holds"
    near = _verdict(HOLDS, -0.145, -0.15, -0.14, floor=0.02)
    close = against_twin("2", near, twin, direction=-1)
    assert close.verdict == UNSURE and close.because == "twin"
    assert close.numbers["why"] == AS_MUCH.format(model="-0.145", twin="-0.132", difference="-0.013 [-0.0201, -0.00593]",
                                                  floor="0.02")


def test_the_twin_rule_needs_a_direction():
    model, twin = _verdict(HOLDS, 0.9, 0.85, 0.95, 0.1), _verdict(FAILS, 0.1, 0.05, 0.15, 0.1)
    with pytest.raises(TypeError, match="direction"):
        against_twin("13x", model, twin)
    with pytest.raises(ValueError, match="13x"):
        against_twin("13x", model, twin, direction=0)
    assert against_twin("13x", model, twin, direction=+1).verdict == HOLDS
    assert against_twin("13x", model, twin, direction=-1).verdict == UNSURE
    assert against_twin("13x", model, twin, direction=+1, floor=0.9).verdict == UNSURE


def test_untrained_twin_control():
    """On lesson 09's records: a fall the twin shows as well cannot tell; one beyond a flat twin holds; one that
    differs from a falling twin by less than the floor cannot tell, saying why."""
    falling = rec.diversity((3.0, 2.0, 1.0), half_width=0.01)  # falls by a third of the first layer a layer
    model = claims.conclusion_2(falling)
    assert model.verdict == HOLDS
    same = against_twin("2", model, claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0), half_width=0.01)), direction=-1)
    assert same.verdict == UNSURE and same.because == "twin"
    flat_twin = claims.conclusion_2(rec.diversity((3.0, 3.0, 3.0), half_width=0.01))
    assert flat_twin.verdict == FAILS
    learned = against_twin("2", model, flat_twin, direction=-1)
    assert learned.verdict == HOLDS and learned.numbers["untrained twin's verdict"] == FAILS
    # the twin falls too, and its last layer climbs back a little: less than the floor away from the model
    near = claims.conclusion_2(rec.diversity((3.0, 1.0, 1.24), half_width=0.1))
    assert near.verdict != HOLDS
    close = against_twin("2", model, near, direction=-1)
    assert close.verdict == UNSURE and "floor" in close.numbers["why"]


def test_the_report_rows_use_the_twin_and_six_is_judged_half_by_half():
    ev = rec.evidence()
    data = c.data_verdicts(ev)
    plain = c.all_conclusions(ev)  # no twin: a "holds" about the model waits for it, nothing else moves
    for label in ("1", "2", "3a", "3b", "4a", "4b"):
        expected = UNSURE if data[label].verdict == HOLDS else data[label].verdict
        assert plain[label].verdict == expected, label
    twin_rows = c.data_verdicts(ev)  # a twin that gives the very same numbers
    checked = c.all_conclusions(ev, twin_rows)
    for label in ("1", "2", "3a", "3b", "4a", "4b"):
        if data[label].verdict == HOLDS:
            assert checked[label].verdict == UNSURE and checked[label].because == "twin", label
        else:
            assert checked[label].verdict == data[label].verdict, label
    assert checked["5a"].verdict == data["5a"].verdict  # not about the model: lesson 10 trains its own
    assert "not about this model" in c.twin_cell(checked["5a"])
    assert list(checked) == list(c.LABELS)


def _no_twin_anywhere(tmp_path, monkeypatch):
    """``(ran, fake_run)``: an empty results folder and shipped folder, and a stand-in for the reduced run
    that records each model it was asked to measure in ``ran``."""
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(twin_evidence, "REFERENCE_DIR", tmp_path / "shipped")
    ran = []

    def fake_run(model):
        ran.append(model.name)
        return twin_evidence.TwinEvidence(c.Evidence(), "made here", "reduced")

    return ran, fake_run


def test_twin_comes_from_the_report_then_the_reference_then_a_run(tiny_en, tmp_path, monkeypatch):
    ran, fake_run = _no_twin_anywhere(tmp_path, monkeypatch)

    assert twin_evidence.twin_for(tiny_en, allow_run=False).source == "none"
    assert twin_evidence.twin_for(tiny_en, run=fake_run).source == "reduced" and ran
    flat = c.Evidence(diversity=rec.diversity((3.0, 3.0, 3.0), half_width=0.01))  # heads that do not converge
    shipped = twin_evidence.reference_file(tiny_en)
    shipped.parent.mkdir(parents=True)
    record = twin_evidence.twin_record(flat, name="shipped twin", kind="shuffled", precision="fp32")
    shipped.write_text(json.dumps({"data": record}), encoding="utf-8")
    found = twin_evidence.twin_for(tiny_en, run=fake_run)
    assert found.source == "reference" and shipped.name in found.said
    assert found.rows["2"].verdict == FAILS  # judged by today's rules from the shipped records
    steep = c.Evidence(diversity=rec.diversity((3.0, 2.0, 1.0)))
    twin_evidence.save_twin(tiny_en, steep, name="my twin", kind="shuffled", precision="fp32")
    mine = twin_evidence.twin_for(tiny_en, run=fake_run)
    assert mine.source == "report" and mine.name == "my twin" and len(ran) == 1
    assert mine.rows["2"].verdict == HOLDS and mine.rows["1"].verdict == UNSURE  # lesson 08's record is absent


def test_a_full_run_reads_the_shipped_smoke_twin_before_measuring_one(tiny_en, tmp_path, monkeypatch):
    """In full mode with no report and no full-size twin shipped, lesson 12 reads the smoke-size twin the
    course ships for this model (what a reduced run would measure, minutes of it) and says it is smaller;
    without one it measures a reduced twin; in smoke mode the smoke twin is simply this mode's."""
    ran, fake_run = _no_twin_anywhere(tmp_path, monkeypatch)

    monkeypatch.setenv("ATTNLAB_SMOKE", "0")
    assert twin_evidence.twin_for(tiny_en, run=fake_run).source == "reduced" and len(ran) == 1
    smoke_file = twin_evidence.reference_file(tiny_en, smoke=True)
    smoke_file.parent.mkdir(parents=True)
    flat = c.Evidence(diversity=rec.diversity((3.0, 3.0, 3.0), half_width=0.01))
    record = twin_evidence.twin_record(flat, name="shipped smoke twin", kind="shuffled", precision="fp32")
    smoke_file.write_text(json.dumps({"data": record}), encoding="utf-8")
    found = twin_evidence.twin_for(tiny_en, run=fake_run)
    assert found.source == "reference-smaller" and len(ran) == 1  # nothing measured
    assert smoke_file.name in found.said and "smoke sizes" in found.said
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    assert twin_evidence.twin_for(tiny_en, run=fake_run).source == "reference"


# --------------------------------------------------------------------------- floors


def test_floor_blocks_tiny_effects_2():
    big = claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0), half_width=0.001))
    tiny_record = rec.diversity((3.0, 2.99, 2.98), half_width=0.0001)  # a hundredth of the fall
    tiny = claims.conclusion_2(tiny_record)
    assert big.verdict == HOLDS and tiny.verdict != HOLDS
    assert tiny_record.shape.upper_share.high < 1  # the upper layers clearly less diverse: only the floor stops it


def test_floor_blocks_tiny_effects_3():
    strong = [rec.group(rec.H, 0.2, 0.3, 0.6, spread=0.001), rec.group(2, 0.7, 0.1, 0.3, spread=0.001)]
    tiny = [rec.group(rec.H, 0.2, 0.3, 0.6, spread=0.0001), rec.group(2, 0.205, 0.3, 0.6, spread=0.0001)]
    assert claims.conclusion_3_self(rec.head_count(regroup=strong)).verdict == HOLDS
    small = claims.conclusion_3_self(rec.head_count(regroup=tiny))
    assert small.verdict != HOLDS and small.numbers["change low"] > 0  # a clear rise, a hundredth of the size
    onto_cls = [rec.group(rec.H, 0.2, 0.3, 0.6, spread=0.001), rec.group(2, 0.1, 0.8, 0.3, spread=0.001)]
    tiny_cls = [rec.group(rec.H, 0.2, 0.3, 0.6, spread=0.0001), rec.group(2, 0.2, 0.305, 0.6, spread=0.0001)]
    assert claims.conclusion_3(rec.head_count(regroup=onto_cls)).verdict == HOLDS
    small = claims.conclusion_3(rec.head_count(regroup=tiny_cls))
    assert small.numbers["focus token, merged"] == "first special token"
    assert small.verdict != HOLDS and small.numbers["mass change low"] > 0
    assert str(hc.COLLAPSE_MARGIN) in hc.SELF_CLAIM and str(hc.COLLAPSE_MARGIN) in hc.COLLAPSE_CLAIM


def test_floor_blocks_tiny_effects_5():
    big = {1: [5.3, 5.31, 5.29, 5.3], 8: [4.9, 4.91, 4.89, 4.9], 16: [5.0, 5.01, 4.99, 5.0]}
    assert hc.verdict_more_heads_not_always_better(big).verdict == HOLDS
    small = {1: [5.3, 5.3001, 5.2999, 5.3], 8: [4.9, 4.9001, 4.8999, 4.9],
             16: [4.901, 4.9011, 4.9009, 4.901]}  # the largest count worse by a hundredth of the gap above
    v = hc.verdict_more_heads_not_always_better(small)
    assert v.verdict != HOLDS and v.numbers["low"] > 0  # clearly worse, but by less than 1% of perplexity
    assert "1%" in hc.MORE_HEADS_CLAIM and hc.MORE_HEADS_FLOOR == 0.01


@pytest.mark.slow
def test_reduced_twin_measures_every_part_a_claim_reads(tiny_factory):
    """Lesson 12's last resort: the report's parts at smoke sizes on a shuffled copy, the model left as it was."""
    tiny = tiny_factory("bert", "en", n_layers=3, n_heads=4, hidden=32)  # a trend with depth needs 3 layers
    before = {n: p.detach().clone() for n, p in tiny.model.named_parameters()}
    found = twin_evidence.reduced_twin(tiny, progress=False)
    assert found.source == "reduced" and "untrained twin" in found.name
    ev = found.evidence
    for field in ("patterns", "perturbation", "averaging", "diversity", "head_count", "pruning"):
        assert getattr(ev, field) is not None, field
    assert set(found.rows) == set(c.JUDGES)
    assert all(torch.equal(p, before[n]) for n, p in tiny.model.named_parameters())



def test_claim_words_state_their_floors():
    """The printed words of conclusions 1 and 2 say the lines their rules draw, floors included."""
    most, few, floor = claims.MOST_FIXED, claims.FEW_CONTENT, claims.FLOOR_1
    assert f"{most + floor:.0%}" in claims.CLAIMS[1] and f"{few - floor:.0%}" in claims.CLAIMS[1]
    assert f"{claims.FLOOR_2:.0%}" in claims.CLAIMS[2]


# --------------------------------------------------------------------------- the twin's own noise


def test_twin_seed_noise_counted():
    """C2's measured case: three shuffle seeds give twin values -0.131, -0.141 and -0.129, each with a
    half-width of 0.0005. Pooled, the twin's interval holds the spread between seeds (not only one seed's
    half-width), so a model 0.03 beyond one seed's twin but inside the seeds' spread plus the floor cannot
    hold; a model clearly beyond every seed still holds."""
    seeds = [_verdict(HOLDS, e, e - 0.0005, e + 0.0005, floor=0.02) for e in (-0.131, -0.141, -0.129)]
    pooled = pooled_twin(seeds)
    assert pooled.numbers["estimate"] == pytest.approx(np.mean([-0.131, -0.141, -0.129]))
    assert pooled.numbers["low"] == pytest.approx(-0.1415) and pooled.numbers["high"] == pytest.approx(-0.1285)
    assert pooled.numbers["high"] - pooled.numbers["low"] > 10 * 0.001  # the seeds' spread, not one half-width
    model = _verdict(HOLDS, -0.158, -0.1585, -0.1575, floor=0.02)
    assert against_twin("2", model, seeds[2], direction=-1).verdict == HOLDS  # one seed alone: 0.029 beyond, clears 0.02
    assert against_twin("2", model, pooled, direction=-1).verdict == UNSURE  # the seeds' spread counted: it does not
    far = _verdict(HOLDS, -0.30, -0.31, -0.29, floor=0.02)
    assert against_twin("2", far, pooled, direction=-1).verdict == HOLDS
    mixed = pooled_twin([seeds[0], _verdict(FAILS, -0.01, -0.02, 0.0)])
    assert mixed.verdict == UNSURE and mixed.numbers["shuffle seeds"] == 2
    assert pooled_twin([seeds[0]]) is seeds[0]
    with pytest.raises(ValueError):
        pooled_twin([])


def _texts_verdict(per_text: np.ndarray, floor: float = 0.05) -> ClaimVerdict:
    """A verdict decided, like 3a's, on the mean over texts of ``per_text`` against ``floor``."""
    d = bootstrap_mean(per_text)
    return ClaimVerdict.decide("rises by more than the floor", holds=d.above(floor), fails=d.below(floor),
                               resampled=d, estimate=d.estimate, low=d.low, high=d.high, floor=floor)


def test_model_and_twin_paired_on_the_same_texts():
    """The model and its twins measured on the same 128 texts, whose own spread (sd 1) dwarfs the model's
    lead (0.2, four times the floor of 0.05): differenced resample by resample on the same resampled texts,
    the interval is exactly the bootstrap of the per-text differences and clears the floor (holds); with
    the two runs' noise added as independent it cannot (cannot tell). Resamples of other texts are never
    paired."""
    rng = np.random.default_rng(0)
    texts = rng.normal(0.0, 1.0, 128)  # (N,): what every model does on each text
    twins = [texts + 0.4 + rng.normal(0.0, 0.02, 128) for _seed in range(3)]  # the twin shows the rise too
    model = texts + 0.6 + rng.normal(0.0, 0.02, 128)
    mine, seeds = _texts_verdict(model), [_texts_verdict(t) for t in twins]
    assert mine.verdict == HOLDS and all(s.verdict == HOLDS for s in seeds)

    by_hand = bootstrap_mean(model - twins[0])  # the same resample weights: the mean is linear
    paired = paired_difference(mine.resampled[0], seeds[0].resampled[0])
    assert paired.estimate == pytest.approx(by_hand.estimate)
    assert (paired.low, paired.high) == pytest.approx((by_hand.low, by_hand.high), abs=1e-12)
    independent = difference(Interval(mine.numbers["estimate"], mine.numbers["low"], mine.numbers["high"]),
                             Interval(seeds[0].numbers["estimate"], seeds[0].numbers["low"], seeds[0].numbers["high"]))
    assert paired.high - paired.low < (independent.high - independent.low) / 20

    checked = against_twin("3a", mine, pooled_twin(seeds), direction=+1)
    assert checked.verdict == HOLDS and checked.numbers[HOW_DIFFERENCED] == PAIRED
    unmatched = [ClaimVerdict(s.claim, s.verdict, s.numbers) for s in seeds]  # read back from a record: no resamples
    checked = against_twin("3a", mine, pooled_twin(unmatched), direction=+1)
    assert checked.verdict == UNSURE and checked.numbers[HOW_DIFFERENCED] == UNPAIRED

    other = _texts_verdict(twins[0][:100])  # a twin run that stopped at 100 texts
    assert paired_difference(mine.resampled[0], other.resampled[0]) is None
    gappy = twins[0].copy()
    gappy[5] = np.nan  # a text the twin could not measure: its resamples drew other rows
    assert paired_difference(mine.resampled[0], _texts_verdict(gappy).resampled[0]) is None


def _shape(per_text: np.ndarray):
    """Lesson 09's curve shape of texts' within-layer dispersion ``(N, L)``, resampled over the texts."""
    from types import SimpleNamespace

    from attnlab.analysis.diversity import depth_shape

    return depth_shape(SimpleNamespace(per_text=torch.tensor(per_text), layers=list(range(per_text.shape[1]))))


def test_conclusion_2_pairs_the_model_and_its_twin_on_the_same_texts():
    """Lesson 09's curves of a model and its twin over the same 64 texts, whose own spread in the upper
    layers (sd 0.5) both share: the model's upper third keeps 0.15 less of the lower third's spread than
    the twin's (1.5x the floor of 0.1). Differenced resample by resample, the interval is the percentile
    interval of the per-resample differences, computed here by hand, and the training reading holds; with
    the runs' noise added as independent it cannot tell. Conclusion 2's deciding gap pairs the same way
    against the twin's seeds."""
    from attnlab.analysis.diversity import shape_numbers
    from attnlab.analysis.stats import resample_counts
    from attnlab.course.claims.diversity import verdict_training_converges, verdict_upper_layers_converge

    rng = np.random.default_rng(2)
    n = 64
    upper = np.array([0, 0, 0, 0, 1.0, 1.0])  # (L,): where the texts move the curve
    shared = rng.normal(0.0, 0.5, (n, 1)) * upper  # (N, L): each text's own pull on the upper layers
    model = np.array([1, 1, 0.7, 0.6, 0.5, 0.5]) + shared + rng.normal(0.0, 0.02, (n, 6))
    twins = [np.array([1, 1, 0.7, 0.6, 0.65, 0.65]) + shared + rng.normal(0.0, 0.02, (n, 6)) for _seed in range(3)]
    mine, theirs = _shape(model), _shape(twins[0])

    counts = resample_counts(n, 1000, 0)  # (B, N): the resamples depth_shape draws
    by_hand = shape_numbers(counts @ model / n)[0] - shape_numbers(counts @ twins[0] / n)[0]  # (B,)
    read = verdict_training_converges(mine, theirs)
    assert read.numbers[HOW_DIFFERENCED] == PAIRED
    assert (read.numbers["low"], read.numbers["high"]) == pytest.approx(tuple(np.percentile(by_hand, [2.5, 97.5])), abs=1e-9)
    assert read.verdict == HOLDS
    stored = [type(mine)(layers=x.layers, upper_share=Interval(x.upper_share.estimate, x.upper_share.low,
                                                                    x.upper_share.high, 0.95, n),
                         rebound=x.rebound, least_layer=x.least_layer, n_boot=x.n_boot) for x in (mine, theirs)]
    unpaired = verdict_training_converges(*stored)  # read back from records: no resamples
    assert unpaired.numbers[HOW_DIFFERENCED] == UNPAIRED and unpaired.verdict == UNSURE

    seeds = [verdict_upper_layers_converge(_shape(t)) for t in twins]
    model_row = verdict_upper_layers_converge(mine)
    assert model_row.resampled and all(s.resampled for s in seeds)
    checked = against_twin("2", model_row, pooled_twin(seeds), direction=-1)
    assert checked.numbers[HOW_DIFFERENCED] == PAIRED
    other = verdict_upper_layers_converge(_shape(twins[0][:50]))  # a twin run on 50 texts: other resamples
    assert paired_difference(model_row.resampled[0], other.resampled[0]) is None


def test_pairs_of_heads_are_paired_only_when_they_kept_the_same_pairs():
    """Conclusion 4's interval over texts and pairs keeps its resamples: two runs with the same pairs and
    texts pair up; a run that left a pair out (its summed move too small) does not."""
    rng = np.random.default_rng(1)
    added = rng.uniform(1.0, 2.0, (24, 32))  # (P, N)
    a = cv.pair_interval(added * 1.1, added, signed=True)
    b = cv.pair_interval(added * (1.0 + rng.normal(0, 0.01, added.shape)), added, signed=True)
    assert paired_difference(a, b) is not None and paired_difference(a, b).estimate == pytest.approx(a.estimate - b.estimate)
    dropped = added.copy()
    dropped[3] = 1e-9  # below the tiny-pair line: left out
    assert paired_difference(a, cv.pair_interval(dropped * 1.1, dropped, signed=True)) is None


def test_twin_records_keep_every_seed(tiny_en, tmp_path, monkeypatch):
    """A twin saved with three seeds reads back with three, and lesson 12's rows pool them."""
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(twin_evidence, "REFERENCE_DIR", tmp_path / "shipped")
    slopes = [(3.0, 2.0, 1.0), (3.0, 2.2, 1.4), (3.0, 1.9, 0.8)]
    evs = [c.Evidence(diversity=rec.diversity(s, half_width=0.01)) for s in slopes]
    twin_evidence.save_twin(tiny_en, evs, name="three seeds", kind="shuffled", precision="fp32")
    found = twin_evidence.twin_for(tiny_en, allow_run=False)
    assert found.source == "report" and len(found.seeds) == 3
    one_each = [claims.conclusion_2(ev.diversity) for ev in evs]
    row = found.rows["2"]
    assert row.numbers["shuffle seeds"] == 3
    assert row.numbers["low"] == pytest.approx(min(v.numbers["low"] for v in one_each))
    assert row.numbers["high"] == pytest.approx(max(v.numbers["high"] for v in one_each))
