"""Lesson 13's claims decided on constructed evidence (each can hold and each can fail), the
sensitivity tables, the saved record and the plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnlab.analysis.faithfulness import TRUTHS, VIEWS, Scoreboard  # noqa: E402
from attnlab.analysis.mean_map_replacement import MapReplacement, TogetherCurves  # noqa: E402
from attnlab.analysis.sinks import SinkIntervention, SinkProfile  # noqa: E402
from attnlab.course import results  # noqa: E402
from attnlab.course import attention_limits_result  # noqa: E402
from attnlab.course.attention_limits_result import AttentionLimitsResult  # noqa: E402
from attnlab.course.claims import attention_limits as lim  # noqa: E402
from attnlab.course.claims import twin_checks  # noqa: E402
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE  # noqa: E402
from attnlab.viz.attention_limits_plots import (plot_raw_vs_norm, plot_replacement_cost,  # noqa: E402
                                                plot_scoreboard, plot_sink_mass, plot_together)

N_TEXTS, N_LAYERS, N_HEADS = 40, 4, 6


def noise(shape, scale, seed=0):
    return np.random.default_rng(seed).normal(0.0, scale, shape)


def profile(special=(0.3, 0.7, 0.6, 0.3), kept=0.3, spread=0.02, start=0.0) -> SinkProfile:
    """Raw share on the separator per layer, plus ``start`` on the first special token; the
    norm-based view keeps ``kept`` of both and gives the rest to words."""
    special = np.clip(np.asarray(special)[None, :] + noise((N_TEXTS, N_LAYERS), spread), 0.0, 0.95 - start)  # (N, L)
    first = np.full_like(special, start)
    punct = np.full((N_TEXTS, N_LAYERS), 0.05)
    other = np.zeros_like(special)
    raw = {"start": first, "end": special, "punct": punct, "word": 1.0 - special - first - punct, "other": other}
    norm = {"start": kept * first, "end": kept * special, "punct": punct,
            "word": 1.0 - kept * (special + first) - punct, "other": other}
    value_norm = {"start": np.full_like(special, 0.5), "end": np.full_like(special, 1.0),
                  "punct": np.full_like(special, 2.0), "word": np.full_like(special, 4.0),
                  "other": np.full_like(special, np.nan)}
    return SinkProfile(raw=raw, norm=norm, value_norm=value_norm, start_token="[CLS]", end_token="[SEP]",
                       n_texts=N_TEXTS)


def intervention(sink=0.001, control=0.01, sink_mass=0.6, control_mass=0.05) -> SinkIntervention:
    shape = (N_TEXTS, N_LAYERS)
    return SinkIntervention(
        sink_effect=np.abs(sink + noise(shape, 0.0005, 1)), control_effect=np.abs(control + noise(shape, 0.0005, 2)),
        sink_mass=np.full(shape, sink_mass), control_mass=np.full(shape, control_mass),
        sink_is_start=np.ones(shape, dtype=bool), n_texts=N_TEXTS,
    )


def board(means: dict[str, float], spread=0.1, deleted: dict[str, float] | None = None, n=N_TEXTS) -> Scoreboard:
    """Per-query rho around ``means`` (leave one out, positions kept) and ``deleted`` (default the same)."""
    deleted = means if deleted is None else deleted
    return Scoreboard(rho={truth: {v: np.clip(centre[v] + noise(n, spread, k + 10 * t), -1, 1)
                                   for k, v in enumerate(VIEWS)}
                           for t, (truth, centre) in enumerate(zip(TRUTHS, (means, deleted, deleted)))})


def replacement(slope=-1.0, control_extra=0.01, spread=0.002, depth=0.0, n=N_TEXTS) -> MapReplacement:
    """Cost = 0.02 + slope * 0.05 * (fixedness - 0.9) per head, plus noise; the control adds
    ``control_extra``. With ``depth``, deeper layers are less fixed and costlier (a between-layer
    trend only, unless ``slope`` adds one inside layers)."""
    fixed = np.linspace(0.7, 1.0, N_LAYERS * N_HEADS).reshape(N_LAYERS, N_HEADS)
    fixed = fixed.ravel()[np.random.default_rng(3).permutation(fixed.size)].reshape(N_LAYERS, N_HEADS)
    layer = np.arange(N_LAYERS)[:, None]
    fixed = fixed - depth * 0.1 * layer
    per_head = 0.02 + slope * 0.05 * (fixed - 0.9) + depth * (0.05 * layer + 0.005 * (fixed - fixed.mean()))  # (L, H)
    cost = np.abs(per_head[None] + noise((n, N_LAYERS, N_HEADS), spread, 4))
    control = np.abs(per_head[None] + control_extra + noise((n, N_LAYERS, N_HEADS), spread, 5))
    return MapReplacement(layers=list(range(N_LAYERS)), cost=cost, control=control, fixedness=fixed, mean_count=500,
                          reference=np.full(n, 0.4))


def together(cheap_until=0.75, random_cost=2.0, n=N_TEXTS, steps=8) -> TogetherCurves:
    """Curves whose fixedness-order cost stays at 0.002 (tolerance 0.05 * 0.2 = 0.01) up to
    ``cheap_until`` and then rises; the random orders cost ``random_cost`` times as much."""
    fractions = np.linspace(0, 1, steps + 1)
    shape = np.where(fractions <= cheap_until + 1e-9, 0.002 * fractions, 0.002 + 0.2 * (fractions - cheap_until))
    fixed = np.abs(shape[None] + noise((n, steps + 1), 0.0005, 7) * (fractions > 0))
    rand = np.stack([np.abs(random_cost * shape[None] + noise((n, steps + 1), 0.0005, 8 + r) * (fractions > 0))
                     for r in range(3)])
    rev = np.abs(3.0 * shape[None] + noise((n, steps + 1), 0.0005, 12) * (fractions > 0))
    return TogetherCurves(layers=list(range(N_LAYERS)), fractions=fractions,
                          counts=np.round(fractions * N_LAYERS * N_HEADS).astype(int), fixed_first=fixed,
                          reverse=rev, random=rand, reference=np.full(n, 0.2))


GOOD_BOARD = {"raw": 0.7, "norm": 0.83, "rollout": 0.82, "value_zeroing": 0.97, "knockout": 0.9}
BAD_BOARD = {"raw": 0.2, "norm": 0.05, "rollout": -0.1, "value_zeroing": 0.1, "knockout": 0.9}


# --------------------------------------------------------------------------- sinks


def test_sink_mass_can_hold():
    v = lim.verdict_sink_mass(profile())
    assert v.verdict == HOLDS
    assert v.numbers["top_layer"] == 2 and v.numbers["layers_above"] == [2, 3]
    assert v.numbers["top_share"] == pytest.approx(0.7, abs=0.01)


def test_sink_mass_can_fail():
    assert lim.verdict_sink_mass(profile(special=(0.2, 0.3, 0.35, 0.1))).verdict == FAILS


def test_sink_mass_is_about_the_separator_alone():
    """[CLS] 0.3 + [SEP] 0.35 is most of the attention, but not on the separator: Clark's claim fails
    while the combined share, reported beside it, is above one half."""
    v = lim.verdict_sink_mass(profile(special=(0.2, 0.35, 0.3, 0.1), start=0.3))
    assert v.verdict == FAILS
    assert v.numbers["special_top_share"] == pytest.approx(0.65, abs=0.02) and v.numbers["special_layers_above"] == [2, 3]


def test_sink_mass_cannot_tell():
    near = lim.verdict_sink_mass(profile(special=(0.2, 0.5, 0.3, 0.1), spread=0.2))
    assert near.verdict == UNSURE  # the interval straddles one half


def test_sink_mass_sensitivity_table():
    table = lim.sink_mass_sensitivity(profile())
    assert list(table) == list(lim.SINK_SHARE_GRID)
    assert table[0.3] == HOLDS and table[0.5] == HOLDS and table[0.7] != HOLDS
    assert lim.sink_mass_sensitivity(profile(), [0.9])[0.9] == FAILS


def test_sink_no_op_can_hold():
    v = lim.verdict_sink_no_op(intervention())
    assert v.verdict == HOLDS
    assert v.numbers["difference"] == pytest.approx(-0.009, abs=0.001) and v.numbers["high"] < 0


def test_sink_no_op_can_fail():
    assert lim.verdict_sink_no_op(intervention(sink=0.02, control=0.01)).verdict == FAILS
    no_sink = lim.verdict_sink_no_op(intervention(sink_mass=0.05, control_mass=0.2))
    assert no_sink.verdict == UNSURE and "no more attention" in no_sink.numbers["missing"]


def test_norms_discount_sinks_can_hold():
    v = lim.verdict_norms_discount_sinks(profile(kept=0.3))
    assert v.verdict == HOLDS and v.numbers["removed"] == pytest.approx(0.7, abs=0.01)


def test_norms_discount_sinks_can_fail():
    assert lim.verdict_norms_discount_sinks(profile(kept=0.8)).verdict == FAILS
    table = lim.norms_sensitivity(profile(kept=0.4))
    assert table == {0.25: HOLDS, 0.5: HOLDS, 0.75: FAILS}


# --------------------------------------------------------------------------- the scoreboard


def test_raw_tracks_effect_can_hold():
    v = lim.verdict_raw_tracks_effect(board(GOOD_BOARD))
    assert v.verdict == HOLDS and v.numbers["mean_rho"] == pytest.approx(0.7, abs=0.05)


def test_raw_tracks_effect_can_fail():
    assert lim.verdict_raw_tracks_effect(board(BAD_BOARD)).verdict == FAILS
    table = lim.tracking_sensitivity(board(GOOD_BOARD))
    assert table[0.3] == HOLDS and table[0.9] == FAILS


def test_norm_beats_raw_can_hold():
    v = lim.verdict_norm_beats_raw(board(GOOD_BOARD))
    assert v.verdict == HOLDS and v.numbers["minus_raw"][1] > 0
    assert v.numbers["ranking"][0] == "value zeroing (Mohebbi)"


def test_norm_beats_raw_can_fail():
    assert lim.verdict_norm_beats_raw(board(BAD_BOARD)).verdict == FAILS


def test_norm_beats_raw_cannot_tell():
    tied = lim.verdict_norm_beats_raw(board({**GOOD_BOARD, "norm": 0.7}, spread=0.3))
    assert tied.verdict == UNSURE


def test_rollout_beats_raw_can_hold():
    assert lim.verdict_rollout_beats_raw(board(GOOD_BOARD)).verdict == HOLDS


def test_rollout_beats_raw_can_fail():
    assert lim.verdict_rollout_beats_raw(board(BAD_BOARD)).verdict == FAILS


def test_value_zeroing_best_can_hold():
    v = lim.verdict_value_zeroing_best(board(GOOD_BOARD))
    assert v.verdict == HOLDS
    assert set(v.numbers) >= {"minus_raw", "minus_norm", "minus_rollout"}


def test_value_zeroing_best_can_fail():
    assert lim.verdict_value_zeroing_best(board({**GOOD_BOARD, "norm": 0.99}, spread=0.02)).verdict == FAILS


def test_value_zeroing_best_cannot_tell():
    close = lim.verdict_value_zeroing_best(board({**GOOD_BOARD, "norm": 0.95}, spread=0.3))
    assert close.verdict == UNSURE


def test_value_zeroing_is_not_compared_with_the_knockout():
    """The whole-model knockout is on the board but not one of the readings value zeroing must beat."""
    v = lim.verdict_value_zeroing_best(board({**GOOD_BOARD, "knockout": 0.99}, spread=0.02))
    assert v.verdict == HOLDS and "minus_knockout" not in v.numbers
    assert v.numbers["ranking"][0] == "whole-model knockout"


def test_scoreboard_verdicts_follow_the_kept_positions_ground_truth():
    """Against deletion raw attention would win; the verdict is decided on the masked ground truth,
    and the deletion numbers are shown beside it."""
    evidence = board(GOOD_BOARD, deleted={**GOOD_BOARD, "raw": 0.99}, spread=0.02)
    v = lim.verdict_norm_beats_raw(evidence)
    assert v.verdict == HOLDS and v.numbers["minus_raw_deleted"][2] < 0
    change = lim.ranking_change(evidence)
    assert change["raw"]["rank_deleted"] == 1 and change["raw"]["rank_masked"] == 5
    assert change["raw"]["difference"][2] < 0


def test_scoreboard_claims_cannot_tell_on_few_queries():
    v = lim.verdict_raw_tracks_effect(board(GOOD_BOARD, n=5))
    assert v.verdict == UNSURE and "resampled units" in v.numbers["missing"]


# --------------------------------------------------------------------------- mean maps


def test_fixed_heads_cheap_can_hold():
    v = lim.verdict_fixed_heads_cheap(replacement(slope=-1.0))
    assert v.verdict == HOLDS and v.numbers["within_layer_rho"] < -0.5 and v.numbers["permutation_p"] < 0.05
    assert v.numbers["texts"] == N_TEXTS and v.numbers["all_heads_rho"][0] < -0.5


def test_fixed_heads_cheap_can_fail():
    assert lim.verdict_fixed_heads_cheap(replacement(slope=1.0)).verdict == FAILS


def test_fixed_heads_cheap_cannot_tell():
    flat = lim.verdict_fixed_heads_cheap(replacement(slope=0.0, spread=0.005))
    assert flat.verdict == UNSURE


def test_fixed_heads_cheap_is_not_fooled_by_depth():
    """Deeper layers less fixed and costlier, more fixed *costlier* inside a layer: over all heads
    the correlation is negative, within layers it is positive, and the verdict follows the latter."""
    v = lim.verdict_fixed_heads_cheap(replacement(slope=0.0, depth=1.0, spread=0.0005))
    assert v.numbers["all_heads_rho"][2] < 0
    assert v.verdict == FAILS and v.numbers["low"] > 0


def test_mean_map_stands_in_can_hold():
    v = lim.verdict_mean_map_stands_in(replacement(control_extra=0.01))
    assert v.verdict == HOLDS and v.numbers["difference"] == pytest.approx(-0.01, abs=0.002)


def test_mean_map_stands_in_can_fail():
    assert lim.verdict_mean_map_stands_in(replacement(control_extra=-0.01)).verdict == FAILS


def test_mean_map_stands_in_cannot_tell():
    # the saving sits on the floor (1% of the 0.4 between two texts): its interval straddles -0.004;
    # no saving at all is "does not hold" since the floor (equal costs within it are no stand-in)
    assert lim.verdict_mean_map_stands_in(replacement(control_extra=0.004, spread=0.01)).verdict == UNSURE
    assert lim.verdict_mean_map_stands_in(replacement(control_extra=0.0, spread=0.01)).verdict == FAILS
    assert lim.verdict_mean_map_stands_in(replacement(n=4)).verdict == UNSURE  # too few texts


def test_head_labels_are_three_way():
    rep = replacement(slope=-1.0, spread=0.002)  # costs from 0.0 to 0.03 around a tolerance of 0.02
    counts = lim.head_label_counts(rep)
    assert sum(counts.values()) == N_LAYERS * N_HEADS and counts["cheap"] > 0 and counts["costly"] > 0
    noisy = lim.head_label_counts(replacement(slope=-1.0, spread=0.1, n=8))
    assert noisy["cannot tell"] > counts["cannot tell"]
    share = rep.cheap_share()
    assert share.low <= share.estimate <= share.high and share.n == N_TEXTS


# --------------------------------------------------------------------------- heads together


def test_heads_replaceable_together_can_hold():
    v = lim.verdict_heads_replaceable_together(together(cheap_until=0.75))
    assert v.verdict == HOLDS and v.numbers["fraction"] == pytest.approx(0.75) and v.numbers["low"] >= 0.5


def test_heads_replaceable_together_can_fail():
    v = lim.verdict_heads_replaceable_together(together(cheap_until=0.25))
    assert v.verdict == FAILS and v.numbers["high"] < 0.5


def test_heads_replaceable_together_cannot_tell():
    assert lim.verdict_heads_replaceable_together(together(cheap_until=0.75, n=4)).verdict == UNSURE
    rows = lim.together_sensitivity(together(cheap_until=0.5))
    assert rows[0][:3] == ["threshold", "tolerance", "verdict"] and len(rows) == 1 + 3 * 4
    words = {(r[0], r[1]): r[2] for r in rows[1:]}
    assert words[(0.25, 0.05)] == HOLDS and words[(0.75, 0.05)] == FAILS


def test_fixed_order_beats_random_can_hold():
    v = lim.verdict_fixed_order_beats_random(together(random_cost=2.0))
    assert v.verdict == HOLDS and v.numbers["high"] < 0


def test_fixed_order_beats_random_can_fail():
    assert lim.verdict_fixed_order_beats_random(together(random_cost=0.5)).verdict == FAILS


def test_fixed_order_beats_random_cannot_tell():
    # the advantage sits on the floor (1% of the 0.2 between two texts): "cannot tell"; no advantage at
    # all is "does not hold" since the floor (the same cost within it is no advantage)
    mean_cost = float(together(random_cost=1.0).fixed_first.mean())
    on_floor = together(random_cost=1.0 + 0.01 * 0.2 / mean_cost)
    assert lim.verdict_fixed_order_beats_random(on_floor).verdict == UNSURE
    assert lim.verdict_fixed_order_beats_random(together(random_cost=1.0)).verdict == FAILS


def test_all_verdicts_and_the_saved_record(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    evidence = (profile(), intervention(), board(GOOD_BOARD), replacement(), together())
    verdicts = lim.verdicts(*evidence)
    assert list(verdicts) == [lim.SINK_MASS, lim.SINK_NO_OP, lim.NORMS_DISCOUNT_SINKS, lim.RAW_TRACKS_EFFECT,
                              lim.NORM_BEATS_RAW, lim.ROLLOUT_BEATS_RAW, lim.VALUE_ZEROING_BEST,
                              lim.FIXED_HEADS_CHEAP, lim.MEAN_MAP_STANDS_IN, lim.HEADS_TOGETHER,
                              lim.FIXED_ORDER_BEATS_RANDOM]
    assert all(v.verdict == HOLDS for v in verdicts.values())
    record = attention_limits_result.from_run(*evidence)
    assert record.view_ranking[0] == "value_zeroing" and record.removed_share == pytest.approx(0.7, abs=0.01)
    assert record.sensitivity[lim.SINK_MASS]["0.5"] == HOLDS
    results.save(AttentionLimitsResult.file_name, record, model="tiny")
    back = results.load(AttentionLimitsResult.file_name, AttentionLimitsResult, model="tiny")
    assert back is not None
    assert np.allclose(back.papa_cost, record.papa_cost) and back.papa_cost.shape == (N_LAYERS, N_HEADS)
    assert np.allclose(back.special_share_raw.estimate, record.special_share_raw.estimate)
    assert back.papa_rho.estimate == pytest.approx(record.papa_rho.estimate)
    assert back.view_rho["norm"].low == pytest.approx(record.view_rho["norm"].low)
    assert back.verdicts[lim.FIXED_HEADS_CHEAP].verdict == HOLDS
    assert back.verdicts[lim.SINK_MASS].numbers["top_layer"] == 2
    assert back.together_replaceable.estimate == pytest.approx(0.75)
    assert np.allclose(back.together_fixed_first, record.together_fixed_first)
    assert back.view_rho_deleted["raw"].estimate == pytest.approx(record.view_rho_deleted["raw"].estimate)


# --------------------------------------------------------------------------- plots


def test_plots_draw_the_evidence():
    figs = [plot_sink_mass(profile()), plot_scoreboard(board(GOOD_BOARD)), plot_replacement_cost(replacement()),
            plot_raw_vs_norm(np.eye(3), np.ones((3, 3)), ["[CLS]", "chess", "[SEP]"], title="layer 1"),
            plot_together(together())]
    assert len(figs[0].axes) == 2 and len(figs[0].axes[0].lines) == 10  # raw and norm-based line per kind
    measured = [t for t in TRUTHS if t in board(GOOD_BOARD).rho]  # the references this board holds
    assert len(figs[1].axes[0].patches) == len(VIEWS) * len(measured) and len(measured) >= 3
    assert len(figs[4].axes[0].lines) == 3 and "tolerance" in figs[4].axes[0].get_title()
    assert "rho" in figs[2].axes[0].get_title()
    norm_panel = figs[3].axes[1].images[0].get_array()
    assert np.allclose(np.asarray(norm_panel).sum(axis=1), 1.0)  # rows rescaled to shares
    for fig in figs:
        plt.close(fig)
    with pytest.raises(ValueError, match="len\\(tokens\\)"):
        plot_raw_vs_norm(np.eye(3), np.eye(3), ["a", "b"])


def test_norms_discount_sinks_cannot_tell():
    assert lim.verdict_norms_discount_sinks(profile(kept=0.5, spread=0.2)).verdict == UNSURE


def test_rollout_beats_raw_cannot_tell():
    assert lim.verdict_rollout_beats_raw(board({**GOOD_BOARD, "rollout": 0.7}, spread=0.3)).verdict == UNSURE


def test_sink_no_op_cannot_tell():
    # the sink below the word by exactly the floor (a tenth of the word's 0.01): "cannot tell"; the sink
    # as costly as the word is "does not hold" since the floor
    assert lim.verdict_sink_no_op(intervention(sink=0.009, control=0.01)).verdict == UNSURE
    assert lim.verdict_sink_no_op(intervention(sink=0.01, control=0.01)).verdict == FAILS


# --------------------------------------------------------------------------- against the untrained twin

FLAT_BOARD = {view: 0.0 for view in VIEWS}


def trained_evidence():
    """Every claim holds, well beyond a model that learned nothing."""
    return profile(), intervention(), board(GOOD_BOARD), replacement(), together()


def flat_evidence():
    """A model that learned nothing: no sink, every token alike, no view ahead, no head cheaper for being fixed."""
    return (profile(special=(0.1, 0.1, 0.1, 0.1), kept=0.95), intervention(sink=0.01, control=0.01),
            board(FLAT_BOARD, spread=0.02), replacement(slope=0.0, control_extra=0.0), together(0.0, 1.0))


def bad_evidence():
    """Every claim does not hold (each of its tests fails on the model itself)."""
    return (profile(special=(0.1, 0.15, 0.2, 0.1), kept=0.95), intervention(sink=0.02, control=0.01),
            board(BAD_BOARD), replacement(slope=1.0, control_extra=-0.01), together(0.0, 1.0))


def test_lesson13_has_twin():
    """Lesson 13's claims through lesson 12's rule, on every case of it, against planted twins."""
    model = lim.verdicts(*trained_evidence())
    assert all(v.verdict == HOLDS for v in model.values())
    assert set(lim.TOWARD_HOLDS) == set(model) and all(d in (-1, +1) for d in lim.TOWARD_HOLDS.values())
    # the twin gives the same: every "holds" becomes "cannot tell", and says why
    same = lim.against_the_twin(model, lim.verdicts(*trained_evidence()), twin_name="twin")
    for key, v in same.items():
        assert v.verdict == UNSURE and v.numbers.get("why"), key
    # the model beyond a twin that learned nothing by the floor: "holds" stands, the twin's numbers shown
    flat = lim.verdicts(*flat_evidence())
    assert all(v.verdict != HOLDS for v in flat.values())
    beyond = lim.against_the_twin(model, flat, twin_name="twin")
    for key, v in beyond.items():
        assert v.verdict == HOLDS, (key, v.numbers)
        assert v.numbers["untrained twin's verdict"] == flat[key].verdict
    # the model does not hold: "does not hold", whatever the twin does
    bad = lim.verdicts(*bad_evidence())
    assert all(v.verdict == FAILS for v in bad.values()), {k: v.verdict for k, v in bad.items()}
    for key, v in lim.against_the_twin(bad, model, twin_name="twin").items():
        assert v.verdict == FAILS, key
    # both do not hold: still "does not hold", saying an untrained model does not show it either
    for key, v in lim.against_the_twin(bad, lim.verdicts(*bad_evidence()), twin_name="twin").items():
        assert v.verdict == FAILS and v.reason() == "", key
    # no twin measured: a "holds" waits for the twin's evidence, and says so
    for key, v in lim.against_the_twin(model, None).items():
        assert v.verdict == UNSURE and v.because == "missing", key


def test_lesson13_twin_floors_are_in_the_deciding_units():
    """A floor the model does not clear turns "holds" into "cannot tell"; the table moves every floor."""
    model, flat = lim.verdicts(*trained_evidence()), lim.verdicts(*flat_evidence())
    raw = model[lim.RAW_TRACKS_EFFECT].numbers["mean_rho"] - flat[lim.RAW_TRACKS_EFFECT].numbers["mean_rho"]
    scale = 2 * raw / lim.TWIN_FLOORS[lim.RAW_TRACKS_EFFECT]  # a floor twice the model's lead over its twin
    far = lim.against_the_twin(model, flat, scale=scale)
    assert far[lim.RAW_TRACKS_EFFECT].verdict == UNSURE
    # the own floor of a comparison, in its units: the sink's is a tenth of the word's effect (1 - cos)
    assert lim.twin_floor(lim.SINK_NO_OP, model[lim.SINK_NO_OP]) == pytest.approx(
        lim.FLOOR_SINK_SHARE * model[lim.SINK_NO_OP].numbers["control_effect"])
    table = lim.twin_floor_table(model, flat)
    assert table[0] == ["claim", "floor", 0.0, 0.5, 1.0, 2.0]
    assert "2 x floor" in twin_checks.format_floor_table(table)
    assert [row[0] for row in table[1:]] == list(model)
    assert all(row[4] == HOLDS for row in table[1:])  # scale 1: the checked words above
    same = lim.twin_floor_table(model, lim.verdicts(*trained_evidence()))
    assert all(word == UNSURE for row in same[1:] for word in row[2:])  # no floor makes a copy of the model learned


def test_what_raw_attention_says_follows_the_checked_verdict():
    good, flat = board(GOOD_BOARD), board(FLAT_BOARD, spread=0.02)
    model = lim.verdict_raw_tracks_effect(good)
    learned = lim.against_the_twin({lim.RAW_TRACKS_EFFECT: model},
                                   {lim.RAW_TRACKS_EFFECT: lim.verdict_raw_tracks_effect(flat)})
    text = lim.what_raw_attention_says(good, flat, model, learned[lim.RAW_TRACKS_EFFECT])
    assert str(good.interval("raw")) in text and str(flat.interval("raw")) in text and "training made" in text
    same = lim.against_the_twin({lim.RAW_TRACKS_EFFECT: model}, {lim.RAW_TRACKS_EFFECT: model})
    assert "architecture" in lim.what_raw_attention_says(good, good, model, same[lim.RAW_TRACKS_EFFECT])
    bad = lim.verdict_raw_tracks_effect(board(BAD_BOARD))
    fails = lim.against_the_twin({lim.RAW_TRACKS_EFFECT: bad}, {lim.RAW_TRACKS_EFFECT: model})
    assert "do not say" in lim.what_raw_attention_says(board(BAD_BOARD), good, bad, fails[lim.RAW_TRACKS_EFFECT])
    few = board(GOOD_BOARD, n=5)  # too few queries: the verdict says so, and so does the sentence
    alone = lim.verdict_raw_tracks_effect(few)
    unsure = lim.against_the_twin({lim.RAW_TRACKS_EFFECT: alone}, {lim.RAW_TRACKS_EFFECT: alone})
    text = lim.what_raw_attention_says(few, few, alone, unsure[lim.RAW_TRACKS_EFFECT])
    assert alone.numbers["missing"] in text and "no verdict rests on it" in text
    wide = board({**GOOD_BOARD, "raw": 0.5}, spread=0.3)  # an interval across the line
    across = lim.verdict_raw_tracks_effect(wide)
    assert across.verdict == UNSURE and "missing" not in across.numbers
    assert "reaches 0.5" in lim.what_raw_attention_says(wide, flat, across, across)
