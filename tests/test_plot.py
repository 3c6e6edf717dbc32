"""The lesson plots draw what they are given, label it, and reject bad shapes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnlab.analysis.compare import ExampleMaps, PerturbationStudy  # noqa: E402
from attnlab.analysis.stats import Interval  # noqa: E402
from attnlab.analysis.taxonomy import HeadLabels  # noqa: E402
from attnlab.viz import pattern_plots, perturbation_plots, position_plots  # noqa: E402
from attnlab.viz import plot as P  # noqa: E402

TOKENS = ["[CLS]", "how", "do", "chess", "[SEP]"]


def _maps(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g), dim=-1)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _ticks(labels):
    return [t.get_text() for t in labels]


def test_plot_matrices_data_and_labels():
    a = torch.arange(10, dtype=torch.float32).reshape(5, 2)
    w = _maps(5, 5)
    fig = P.plot_matrices([("Q", a), ("weights", w)], TOKENS)
    ax_q, ax_w = fig.axes
    assert np.allclose(ax_q.images[0].get_array(), a.numpy())
    assert np.allclose(ax_w.images[0].get_array(), w.numpy())
    assert _ticks(ax_q.get_yticklabels()) == TOKENS
    assert _ticks(ax_w.get_xticklabels()) == TOKENS  # square: the tokens label the columns
    assert _ticks(ax_q.get_xticklabels()) == ["0", "1"]
    assert "9.00" in [t.get_text() for t in ax_q.texts]
    with pytest.raises(ValueError, match="one row per label"):
        P.plot_matrices([("Q", a[:3])], TOKENS)
    with pytest.raises(ValueError):
        P.plot_matrices([], TOKENS)


def test_plot_pair_shared_scale():
    a, b = _maps(5, 5, seed=1), _maps(5, 5, seed=2) * 0.5
    fig = P.plot_pair(a, b, TOKENS, titles=("A", "B"))
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert np.allclose(images[0].get_array(), a.numpy()) and np.allclose(images[1].get_array(), b.numpy())
    top = float(max(a.max(), b.max()))
    assert images[0].get_clim() == pytest.approx((0.0, top)) and images[1].get_clim() == pytest.approx((0.0, top))
    fig2 = P.plot_pair(a, b, TOKENS, shared_scale=False)
    im2 = [ax.images[0] for ax in fig2.axes if ax.images]
    assert im2[1].get_clim()[1] == pytest.approx(float(b.max()))
    with pytest.raises(ValueError):
        P.plot_pair(a, b[:4, :4], TOKENS)


def test_heads_grid_draws_each_chosen_map_in_its_square_with_its_labels():
    maps = _maps(3, 4, 5, 5, seed=3)  # (L, H, n, n)
    fig = P.plot_heads_grid(maps, TOKENS, layers=[0, 2], heads=[1, 3], suptitle="grid")
    (ax,) = fig.axes
    images = ax.images
    assert len(images) == 4
    for k, (row, column, layer, head) in enumerate([(0, 0, 0, 1), (0, 1, 0, 3), (1, 0, 2, 1), (1, 1, 2, 3)]):
        assert np.allclose(images[k].get_array(), maps[layer, head].numpy())
        x = column * (1 + P.GRID_GAP)
        y = row * (1 + P.GRID_GAP)
        assert images[k].get_extent() == pytest.approx([x, x + 1, y + 1, y])  # first query row on top
        assert images[k].get_clim() == pytest.approx((0.0, float(maps[layer, head].max())))  # its own scale
    squares = [(x, y) for x, y in (P.grid_cell_origin(r, c) for r in range(2) for c in range(2))]
    assert all(a != b for i, a in enumerate(squares) for b in squares[i + 1:])  # no two maps overlap
    left, right = ax.get_xlim()
    bottom, top = ax.get_ylim()
    assert left < 0 < 2 + P.GRID_GAP < right and top < 0 < 2 + P.GRID_GAP < bottom  # every map in view
    words = [t.get_text() for t in ax.texts]
    assert words == ["head 2", "head 4", "layer 1", "layer 3"]
    assert _ticks(ax.get_xticklabels()) == TOKENS * 2 and _ticks(ax.get_yticklabels()) == TOKENS * 2
    shared = P.plot_heads_grid(maps, TOKENS, vmax=1.0, show_labels=False)
    assert len(shared.axes[0].images) == 12 and not shared.axes[0].get_xticklabels()
    assert {im.get_clim() for im in shared.axes[0].images} == {(0.0, 1.0)}
    with pytest.raises(ValueError, match="layer 3 out of range"):
        P.plot_heads_grid(maps, TOKENS, layers=[3])


def test_plot_layer_heads_panels():
    maps = _maps(6, 5, 5)
    fig = P.plot_layer_heads(maps, TOKENS, layer=1, ncols=4)
    axes = [ax for ax in fig.axes if ax.images]
    assert len(axes) == 6
    for h, ax in enumerate(axes):
        assert np.allclose(ax.images[0].get_array(), maps[h].numpy())
        assert ax.get_title() == f"L2 H{h + 1}"
    assert _ticks(axes[0].get_yticklabels()) == TOKENS
    assert _ticks(axes[0].get_xticklabels()) == TOKENS
    with pytest.raises(ValueError, match="heads, n, n"):
        P.plot_layer_heads(maps[0], TOKENS)
    with pytest.raises(ValueError):
        P.plot_layer_heads(maps, TOKENS[:4])


def test_plot_layers_side_by_side():
    maps = _maps(3, 4, 5, 5)
    fig = P.plot_layers_side_by_side(maps, TOKENS, (0, 2), ncols=2)
    left, right = fig.subfigs
    for sub, l in ((left, 0), (right, 2)):
        axes = [ax for ax in sub.axes if ax.images]
        assert len(axes) == 4
        for h, ax in enumerate(axes):
            assert np.allclose(ax.images[0].get_array(), maps[l, h].numpy())
            assert ax.images[0].get_clim() == (0.0, 1.0)
    with pytest.raises(ValueError, match="out of range"):
        P.plot_layers_side_by_side(maps, TOKENS, (0, 3))
    with pytest.raises(ValueError):
        P.plot_layers_side_by_side(maps[0], TOKENS, (0, 1))


def test_plot_curves():
    ax = P.plot_curves([1, 2, 4], {"a": [1.0, 2.0, 3.0], "b": [3.0, 2.0, 1.0]}, xlabel="d_k", logx=True)
    assert [l.get_label() for l in ax.lines] == ["a", "b"]
    assert list(ax.lines[1].get_ydata()) == [3.0, 2.0, 1.0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "d_k"
    with pytest.raises(ValueError, match="has 2 values"):
        P.plot_curves([1, 2, 4], {"a": [1.0, 2.0]})


def test_plot_elmo_vs_attention():
    row = _maps(5)
    fig = P.plot_elmo_vs_attention(TOKENS, row, 3)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for tok in TOKENS:
        assert tok in texts
    assert f"{float(row[1]):.2f}" in texts
    with pytest.raises(ValueError):
        P.plot_elmo_vs_attention(TOKENS, row[:4], 1)
    with pytest.raises(ValueError):
        P.plot_elmo_vs_attention(TOKENS, row, 5)


def test_plot_layer_head_map_draws_values_and_marks():
    values = np.arange(6, dtype=float).reshape(2, 3)
    marks = [["P", "", "C"], ["", "", ""]]
    ax = P.plot_layer_head_map(values, title="t", vmin=0, vmax=5, marks=marks, label="change")
    assert np.allclose(ax.images[0].get_array(), values)
    assert ax.images[0].get_clim() == (0.0, 5.0)
    assert _ticks(ax.get_xticklabels()) == ["1", "2", "3"] and _ticks(ax.get_yticklabels()) == ["1", "2"]
    assert sorted((t.get_text(), t.get_position()) for t in ax.texts) == [("C", (2, 0)), ("P", (0, 0))]
    assert ax.get_title() == "t" and ax.figure.axes[-1].get_ylabel() == "change"
    _, own = plt.subplots()
    assert P.plot_layer_head_map(values, ax=own) is own
    with pytest.raises(ValueError, match="layers, heads"):
        P.plot_layer_head_map(values[0])
    with pytest.raises(ValueError, match="marks"):
        P.plot_layer_head_map(values, marks=[["P"]])


def _study(n=20, layers=2, heads=3, seed=0):
    rng = np.random.default_rng(seed)
    pos = {k: rng.uniform(0.6, 1.0, size=(n, layers, heads)) for k in ("lexical", "both")}
    tok = {k: rng.uniform(0.6, 1.0, size=(n, layers, heads)) for k in ("lexical", "both")}
    return PerturbationStudy(pos, tok, ["q"] * n, {k: ["q"] * n for k in pos})


def test_sensitivity_maps_show_one_minus_similarity():
    study = _study()
    fig = perturbation_plots.plot_sensitivity_maps(study, n_boot=20)
    maps = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in maps] == ["lexical, position space", "both, position space",
                                              "lexical, token space", "both, token space"]
    np.testing.assert_allclose(maps[3].images[0].get_array(), 1 - study.token["both"].mean(axis=0))
    # one colour scale for every panel, and one labelled colour bar
    top = max(float((1 - v).mean(axis=0).max()) for table in (study.position, study.token) for v in table.values())
    for ax in maps:
        assert ax.images[0].get_clim() == (0.0, pytest.approx(top))
    bars = [ax for ax in fig.axes if not ax.images]
    assert len(bars) == 1 and "1 - similarity" in bars[0].get_ylabel()


def test_follower_map_marks_clear_followers():
    n = 30
    pos = np.full((n, 1, 3), 0.9)
    tok = np.full((n, 1, 3), 0.9)
    tok[:, 0, 0] = 0.5  # head 1 follows positions
    pos[:, 0, 1] = 0.5  # head 2 follows the content
    study = PerturbationStudy({"both": pos}, {"both": tok}, ["q"] * n, {})
    fig = perturbation_plots.plot_followers(study, n_boot=20)
    ax = next(a for a in fig.axes if a.images)
    np.testing.assert_allclose(ax.images[0].get_array(), [[0.4, -0.4, 0.0]])
    assert sorted(t.get_text() for t in ax.texts) == ["C", "P"]
    bar = next(a for a in fig.axes if not a.images)
    assert "minus token-space similarity" in bar.get_ylabel()
    assert sorted(round(line.get_ydata()[0], 3) for line in bar.lines) == [-0.05, 0.05]  # the band, drawn
    assert "band" in bar.get_ylabel()


def test_example_rows_grid():
    maps = {k: _maps(2, 3, 4, 4, seed=i) for i, k in enumerate(("original", "lexical"))}
    sims = {k: np.full((2, 3), 0.5) for k in maps}
    ex = ExampleMaps(maps, {k: TOKENS[:4] for k in maps}, {k: k for k in maps}, {}, sims, sims)
    fig = perturbation_plots.plot_example_rows(ex, np.int64(1), heads=[0, 2])
    assert len(fig.axes) == 5  # four maps and one colour bar
    np.testing.assert_allclose(fig.axes[3].images[0].get_array(), maps["lexical"][1, 2].numpy())
    assert fig.axes[3].get_title() == "p0.50 t0.50" and fig.axes[0].get_title() == "H1"
    # the first map of each row is labelled with its tokens
    for ax in (fig.axes[0], fig.axes[2]):
        assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS[:4]
        assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS[:4]
    assert fig.axes[1].get_xticklabels() == [] or not fig.axes[1].get_xticks().size
    assert fig.axes[4].get_ylabel() == "attention weight"
    with pytest.raises(ValueError, match="out of range"):
        perturbation_plots.plot_example_rows(ex, 2)


def test_with_without_and_correlation_plots():
    a, b = _maps(2, 3, 5, 5, seed=1), _maps(2, 3, 5, 5, seed=2)
    tokens = ["[CLS]", "王", "者", "荣", "[SEP]"]
    fig = position_plots.plot_with_without(a, b, 1, text="王者荣", tokens=tokens)
    assert len(fig.axes) == 7  # six maps and one colour bar
    np.testing.assert_allclose(fig.axes[4].images[0].get_array(), b[1, 1].numpy())
    assert fig.axes[0].get_title().startswith("H1\nsim ")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == tokens
    assert [t.get_text() for t in fig.axes[3].get_xticklabels()] == tokens
    assert fig.axes[3].get_ylabel() == "positions zeroed" and fig.axes[6].get_ylabel() == "attention weight"
    with pytest.raises(ValueError, match="one shape"):
        position_plots.plot_with_without(a, b[:, :, :4, :4], 0)
    with pytest.raises(ValueError, match="labels"):
        position_plots.plot_with_without(a, b, 0, tokens=tokens[:3])
    x = np.arange(6.0).reshape(2, 3)
    per_layer = Interval(np.array([1.0, 0.5]), np.array([0.9, -0.2]), np.array([1.0, 0.8]), 0.95, 20)  # 20 queries
    fig = position_plots.plot_correlation(x, 2 * x, per_layer, Interval(1.0, 0.9, 1.0, 0.95, 20), strong=0.3)
    left, right = fig.axes[0], fig.axes[1]
    np.testing.assert_allclose(left.collections[0].get_offsets(), np.stack([x.ravel(), 2 * x.ravel()], axis=1))
    np.testing.assert_allclose(right.lines[0].get_ydata(), [1.0, 0.5])  # one point per layer
    labels = right.get_legend_handles_labels()[1]
    assert any(l.startswith("pooled over all 6 heads: 1.00") for l in labels) and "strong = 0.3" in labels
    assert "within each layer (95% interval over 20 queries)" in labels


def test_controls_plot_shares_one_scale():
    from attnlab.analysis.position import PositionStudy

    n = 10
    sims = {how: np.full((n, 2, 3), s) for how, s in (("zero", 0.8), ("mean", 0.6), ("shuffle", 0.9))}
    special = {"normal": np.zeros((n, 2, 3)), "zero": np.full((n, 2, 3), 0.1), "mean": np.zeros((n, 2, 3)),
               "shuffle": np.zeros((n, 2, 3))}
    moved = {how: np.full((n, 2, 3), 0.2) for how in sims}
    fig = position_plots.plot_controls(PositionStudy(sims, special, moved, ["q"] * n), n_boot=20)
    maps = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in maps[:3]] == ["positions zeroed", "mean position vector", "positions shuffled"]
    for ax in maps[:3]:
        assert ax.images[0].get_clim() == (0.0, pytest.approx(0.4))
    np.testing.assert_allclose(maps[3].images[0].get_array(), 0.5)  # 0.1 of the 0.2 moved lands on [CLS]/[SEP]


def test_displacement_plot_marks_clear_gaps():
    from attnlab.analysis.compare import DisplacementControl

    est = np.array([[0.2, -0.2, 0.0]])
    iv = Interval(est, est - 0.05, est + 0.05, 0.95, 30)
    control = DisplacementControl(iv, iv, iv, {"lexical": 1.0, "syntactic": 3.0}, ("lexical", "syntactic"),
                                  "position", 30)
    fig = perturbation_plots.plot_displacement_control(control)
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 2 and sorted(t.get_text() for t in maps[1].texts) == ["+", "-"]
    assert any("lexical minus syntactic" in ax.get_ylabel() for ax in fig.axes if not ax.images)


def test_taxonomy_plots_colour_each_label():
    labels = np.array([["self", "broad", "vertical"], ["broad", "broad", "heterogeneous"]])
    lab = HeadLabels(labels=labels, reasons=np.full(labels.shape, ""), stats=None)  # type: ignore[arg-type]
    fig = pattern_plots.plot_taxonomy(lab)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["se", "br", "ve", "br", "br", "he"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "broad (3)", "heterogeneous (1)", "self (1)", "vertical (1)"]
    fig = pattern_plots.plot_counts_by_layer(lab)
    heights = {b.get_label(): [p.get_height() for p in b] for b in fig.axes[0].containers}
    assert heights["broad"] == [1, 2] and heights["self"] == [1, 0]


def test_chinese_labels_use_a_cjk_font():
    from attnlab.viz.fonts import find_cjk_font

    found = find_cjk_font()
    if found is None:
        pytest.skip("no CJK font installed")
    tokens = ["[CLS]", "王", "者", "[SEP]"]
    fig = P.plot_layer_heads(_maps(2, 4, 4), tokens)
    assert matplotlib.rcParams["font.sans-serif"][0] == found[1]
    assert _ticks(fig.axes[0].get_xticklabels()) == tokens


def test_has_cjk_tells_chinese_from_latin():
    from attnlab.viz.fonts import has_cjk

    assert has_cjk(["[CLS]", "王"]) and has_cjk(["\u3042"]) and has_cjk([("tuple", "荣耀")])
    assert not has_cjk(["[CLS]", "how", "café", "\u2581play", ""]) and not has_cjk([])


@pytest.mark.parametrize("draw", ["regrouped", "with_without"])
def test_plotters_with_chinese_titles_switch_font_by_themselves(draw):
    """A fresh kernel whose first figure has Chinese text must not fall back to boxes."""
    import warnings

    from attnlab.core.extract import Attention
    from attnlab.viz import head_count_plots
    from attnlab.viz.fonts import find_cjk_font

    if find_cjk_font() is None:
        pytest.skip("no CJK font installed")
    text, tokens = "王者荣耀", ["<s>", "\u2581王", "者", "荣耀", "</s>"]
    with matplotlib.rc_context({"font.family": ["sans-serif"], "font.sans-serif": ["DejaVu Sans"]}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if draw == "regrouped":
                maps = _maps(5, 5)
                att = Attention(tensor=maps.expand(1, 1, 2, 5, 5).clone(), tokens=[tokens], texts=[text], lengths=[5])
                fig = head_count_plots.plot_regrouped({2: att}, 0, 0)
            else:
                maps = _maps(5, 5).expand(1, 2, 5, 5).clone()   # (L, H, n, n)
                fig = position_plots.plot_with_without(maps, maps, 0, text=text, tokens=tokens)
            fig.canvas.draw()
        plt.close(fig)
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_save_figure_png_and_svg(tmp_path):
    fig = P.plot_pair(_maps(5, 5), _maps(5, 5, seed=3), TOKENS)
    paths = P.save_figure(fig, tmp_path / "sub" / "pair", formats=("png", "svg"))
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in paths[1].read_text()[:500]


def test_switching_the_course_to_chinese_switches_the_figures_font(monkeypatch):
    """A Chinese lesson's first cell (al.set_language("zh")) makes every later figure use a CJK font,
    also plotters that never look at their labels; English leaves the font alone."""
    import matplotlib as mpl

    import attnlab as al
    from attnlab.core import language
    from attnlab.viz import fonts

    found = fonts.find_cjk_font()
    if found is None:
        pytest.skip("no CJK font on this machine")
    monkeypatch.setitem(mpl.rcParams, "font.sans-serif", ["DejaVu Sans"])
    try:
        assert al.set_language("en") == "en"
        assert mpl.rcParams["font.sans-serif"] == ["DejaVu Sans"]
        assert al.set_language("zh") == "zh" and language.current_language() == "zh"
        assert mpl.rcParams["font.sans-serif"][0] == found[1]
        import warnings

        fig, ax = plt.subplots()
        ax.set_title("剪枝曲线")  # a plain matplotlib title: no attnlab plotter chose the font
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.canvas.draw()
        plt.close(fig)
        assert not [w for w in caught if "missing from font" in str(w.message)]
    finally:
        language.set_language("en")
