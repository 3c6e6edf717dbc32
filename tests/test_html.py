"""Offline HTML views: self-contained, tokens present, renders in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.viz.offline_views import HEAD_COLORS, HeadView, ModelView, plot_line_view

ZH_TOKENS = ["[CLS]", "王", "者", "荣", "耀", "怎", "么", "玩", "[SEP]"]
EN_TOKENS = ["[CLS]", "how", "do", "you", "play", "chess", "</script>", "[SEP]"]


def maps_for(n: int, layers: int = 2, heads: int = 3, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(layers, heads, n, n, generator=g).mul(3).softmax(-1)  # rows sum to 1


class TagChecker(HTMLParser):
    """Collects tags and checks that non-void elements are closed in order."""

    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack}")
        else:
            self.stack.pop()
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def parse(text: str) -> TagChecker:
    p = TagChecker()
    p.feed(text)
    p.close()
    return p


@pytest.mark.parametrize("cls", [HeadView, ModelView])
def test_self_contained_and_well_formed(cls):
    view = cls(maps_for(len(ZH_TOKENS)), ZH_TOKENS, title="王者荣耀怎么玩")
    page = view.html()
    assert "http://" not in page and "https://" not in page
    assert "src=" not in page and "<link" not in page  # nothing loaded from anywhere
    assert '<meta charset="utf-8">' in page
    for tok in ZH_TOKENS:
        assert json.dumps(tok, ensure_ascii=False) in page  # Chinese written as-is, not escaped
    p = parse(page)
    assert p.errors == [] and p.stack == []
    assert len(p.scripts) == 1 and "window.attnlabViews" in p.scripts[0]


def test_data_round_trips_and_script_cannot_be_broken_out_of():
    maps = maps_for(len(EN_TOKENS))
    frag = HeadView(maps, EN_TOKENS, layer=1, heads=[0, 2]).fragment()
    p = parse(frag)
    assert p.errors == [] and len(p.scripts) == 1  # the "</script>" token did not end the script
    call = p.scripts[0].rsplit("window.attnlabViews.headView(", 1)[1]
    payload = json.loads(call.split(", ", 1)[1].rsplit(");", 1)[0].replace("<\\/", "</"))
    assert payload["tokens"] == EN_TOKENS and payload["layer"] == 1 and payload["heads"] == [0, 2]
    np.testing.assert_allclose(np.array(payload["attn"]), maps.numpy(), atol=5e-4)


def test_views_get_unique_ids():
    maps = maps_for(4)
    toks = ["a", "b", "c", "d"]
    ids = parse(HeadView(maps, toks).fragment() + HeadView(maps, toks).fragment()).ids
    assert len(ids) == 2 and ids[0] != ids[1]
    assert HeadView(maps, toks)._repr_html_().count("<script>") == 1


def test_bad_input():
    with pytest.raises(ValueError, match="layers, heads, n, n"):
        HeadView(torch.rand(3, 3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="3 tokens"):
        HeadView(maps_for(4), ["a", "b", "c"])
    with pytest.raises(ValueError, match="layer index 5"):
        HeadView(maps_for(3), ["a", "b", "c"], layer=5)
    with pytest.raises(ValueError, match="head index"):
        HeadView(maps_for(3), ["a", "b", "c"], heads=[0, 7])


def test_save(tmp_path):
    path = HeadView(maps_for(3), ["a", "b", "c"]).save(tmp_path / "sub" / "v.html")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_static_line_view_draws_weights_as_opacity():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgba

    maps = maps_for(5, layers=1, heads=2)
    toks = ["[CLS]", "王", "者", "玩", "[SEP]"]
    fig = plot_line_view(maps, toks, layer=0, heads=[1])
    coll = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    assert len(coll) == 1
    colors = coll[0].get_colors()  # (lines, 4)
    segs = coll[0].get_segments()
    w = maps[0, 1].numpy()
    kept = np.argwhere(w >= 0.01)
    assert len(segs) == len(kept)
    np.testing.assert_allclose(colors[:, :3], np.tile(to_rgba(HEAD_COLORS[1])[:3], (len(kept), 1)))
    np.testing.assert_allclose(colors[:, 3], w[kept[:, 0], kept[:, 1]], rtol=1e-6)
    # a line from query i (height -i) to key j (height -j)
    i, j = kept[0]
    np.testing.assert_allclose(segs[0], [[0, -i], [1, -j]])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("王") == 2
    with pytest.raises(ValueError):
        plot_line_view(maps, toks, layer=3)


# --------------------------------------------------------------------------- browser


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(html_path: Path, png: Path, profile: Path, size: str = "700,500") -> np.ndarray:
    cmd = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--no-first-run", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={size}",
        html_path.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    import matplotlib.image as mpimg

    return mpimg.imread(str(png))[..., :3]  # (H, W, 3) floats in [0, 1]


def count_colour(img: np.ndarray, hex_colour: str, min_alpha: float = 0.3, tol: float = 0.06) -> int:
    """Pixels that look like ``hex_colour`` drawn over white with opacity >= ``min_alpha``.

    Over white a colour c at opacity a gives ``1 - a * (1 - c)`` per channel, so
    every channel must give (nearly) the same estimate of a.
    """
    from matplotlib.colors import to_rgb

    c = np.array(to_rgb(hex_colour))
    use = (1.0 - c) > 0.2  # channels where the colour differs clearly from white
    alpha = (1.0 - img[..., use]) / (1.0 - c[use])  # (H, W, k): per-channel opacity estimate
    spread = alpha.max(axis=-1) - alpha.min(axis=-1)
    white_elsewhere = (np.abs(img[..., ~use] - 1.0) < 0.1).all(axis=-1) if (~use).any() else True
    return int(((alpha.min(axis=-1) >= min_alpha) & (spread < tol * 3) & white_elsewhere).sum())


@pytest.mark.browser
@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium fonts-wqy-microhei)")
def test_head_view_renders_in_headless_chromium(tmp_path):
    n = len(ZH_TOKENS)
    maps = torch.zeros(1, 2, n, n)
    maps[0, 0] = torch.eye(n).flip(0)  # head 1: query i -> key n-1-i, weight 1 (crossing lines)
    maps[0, 1] = torch.eye(n)  # head 2: horizontal lines
    page = HeadView(maps, ZH_TOKENS, heads=[0], title="王者荣耀怎么玩").save(tmp_path / "view.html")
    img = screenshot(page, tmp_path / "view.png", tmp_path / "profile")
    assert img.std() > 0.02  # not blank
    blue = count_colour(img, HEAD_COLORS[0])
    orange = count_colour(img, HEAD_COLORS[1])
    # head 1's lines are drawn in its colour (plus its toggle, 18x18 = 324 pixels)
    assert blue > 324 + 500, blue
    # head 2 is toggled off: only its faded toggle, no orange lines
    assert orange < 50, orange
    dark = (img.max(axis=-1) < 0.35).sum()
    assert dark > 300  # token text was drawn


@pytest.mark.browser
@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium fonts-wqy-microhei)")
def test_model_view_renders_in_headless_chromium(tmp_path):
    n = 6
    maps = torch.zeros(2, 3, n, n)
    maps[:, :] = torch.eye(n)
    page = ModelView(maps, ["[CLS]", "a", "b", "c", "d", "[SEP]"]).save(tmp_path / "model.html")
    img = screenshot(page, tmp_path / "model.png", tmp_path / "profile")
    for h in range(3):
        assert count_colour(img, HEAD_COLORS[h]) > 30, h  # every head's thumbnail has its lines
