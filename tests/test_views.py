"""bertviz-or-offline dispatch, and the ipywidgets explorer."""

from __future__ import annotations

import socket

import pytest
import torch

import attnlab as al
from attnlab.viz import views
from attnlab.viz.offline_views import HeadView, ModelView


@pytest.fixture(scope="module")
def att(tiny_en):
    return al.attention(tiny_en, ["how do you play chess", "the game is good"])


def test_forced_offline_returns_offline_view(att, monkeypatch, capsys):
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    monkeypatch.setattr(views, "_reachable", lambda *a, **k: pytest.fail("must not touch the network"))
    view = views.head_view(att, 1, layer=1, heads=[2, 3])
    assert isinstance(view, HeadView)
    assert view.tokens == att.tokens[1] and view.layer == 1 and view.heads == [2, 3]
    torch.testing.assert_close(torch.as_tensor(view.maps, dtype=torch.float32), att[1])
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["Offline head view (ATTNLAB_OFFLINE is set)."]
    mv = views.model_view(att, 0)
    assert isinstance(mv, ModelView) and "Offline model view" in capsys.readouterr().out
    html = view.html()
    assert "http://" not in html and "https://" not in html


def test_unreachable_cdn_means_offline(att, monkeypatch, capsys):
    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    monkeypatch.setattr(views, "_reachable", lambda *a, **k: False)
    ok, reason = views.bertviz_status()
    assert not ok and "not reachable" in reason
    assert isinstance(views.head_view(att), HeadView)
    assert "not reachable" in capsys.readouterr().out


def test_online_hands_the_example_to_bertviz(att, monkeypatch):
    import bertviz

    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    monkeypatch.setattr(views, "_reachable", lambda *a, **k: True)
    seen = {}

    def fake_head_view(attention, tokens, **kw):
        seen.update(attention=attention, tokens=tokens, **kw)
        return "bertviz"

    monkeypatch.setattr(bertviz, "head_view", fake_head_view)
    assert views.head_view(att, 1, layer=0, heads=[1]) == "bertviz"
    assert seen["tokens"] == att.tokens[1] and seen["layer"] == 0 and seen["heads"] == [1]
    assert len(seen["attention"]) == att.n_layers
    torch.testing.assert_close(seen["attention"][1][0], att[1][1])  # (1, H, n, n) per layer


def test_reachability_probe_uses_a_real_socket(monkeypatch):
    monkeypatch.setattr(views, "_probes", {})
    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        assert views._reachable("127.0.0.1", port, timeout=1.0)
    finally:
        server.close()
    assert views._reachable("127.0.0.1", port, timeout=1.0)  # the answer is remembered for a while
    monkeypatch.setattr(views, "_probes", {})
    assert not views._reachable("127.0.0.1", port, timeout=1.0)  # closed now: refused


def test_bad_input(att, monkeypatch):
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    with pytest.raises(ValueError, match="2 texts"):
        views.head_view(att, 5)
    with pytest.raises(ValueError, match="layer index"):
        views.head_view(att, 0, layer=9)
    with pytest.raises(TypeError, match="Attention"):
        views.head_view(torch.zeros(1, 2, 3, 3, 3))


def test_explorer_computes_once_per_text(tiny_en, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz import widgets

    calls = []
    real = widgets.attention

    def counting(m, texts, **kw):
        calls.append(list(texts))
        return real(m, texts, **kw)

    monkeypatch.setattr(widgets, "attention", counting)
    box = widgets.explorer(tiny_en, "how do you play chess")
    text_box, row = box.children[0], box.children[1]
    layer_dd, head_dd, kind = row.children
    layer_dd.value = 1
    head_dd.value = 5
    kind.value = "lines"
    assert calls == [["how do you play chess"]]  # redraws reuse the cached maps
    text_box.value = "the game is good"
    text_box.value = "how do you play chess"
    assert calls == [["how do you play chess"], ["the game is good"]]
    assert box.attention_cache.texts() == ["the game is good", "how do you play chess"]
    with pytest.raises(ValueError):
        widgets.explorer(tiny_en, layer=7)


def test_explorer_keeps_only_the_last_few_texts(tiny_en, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz import widgets

    calls = []
    real = widgets.attention

    def counting(m, texts, **kw):
        calls.append(texts[0])
        return real(m, texts, **kw)

    monkeypatch.setattr(widgets, "attention", counting)
    box = widgets.explorer(tiny_en, "a", cache_texts=2)
    text_box = box.children[0]
    for t in ("b", "a", "c"):  # "a" was used again after "b", so "b" is the one dropped
        text_box.value = t
    cache = box.attention_cache
    assert len(cache) == 2 and cache.texts() == ["a", "c"] and "b" not in cache
    text_box.value = "b"  # dropped before, so computed again
    assert calls == ["a", "b", "c", "b"]
    assert widgets.explorer(tiny_en, "a").attention_cache.size == widgets.CACHE_TEXTS


def test_attention_cache_is_least_recently_used():
    from attnlab.viz.widgets import AttentionCache

    computed = []
    cache = AttentionCache(lambda t: computed.append(t) or t.upper(), size=3)
    for t in ["x", "y", "z", "x", "w", "y"]:
        assert cache.get(t) == t.upper()
    # x reused before w arrived, so y was the oldest; then y again pushes out z
    assert computed == ["x", "y", "z", "w", "y"]
    assert cache.texts() == ["x", "w", "y"] and len(cache) == 3
    with pytest.raises(ValueError):
        AttentionCache(str.upper, size=0)


def test_explorer_figure_views(att):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz.widgets import explorer_figure

    heat = explorer_figure(att, 0, 3, "heatmap")
    image = heat.axes[0].images[0].get_array()
    torch.testing.assert_close(torch.as_tensor(image, dtype=torch.float32), att.head(0, 0, 3))
    assert explorer_figure(att, 1, 0, "lines").axes[0].collections
    with pytest.raises(ValueError, match="heatmap"):
        explorer_figure(att, 0, 0, "bars")


def test_the_cdn_is_probed_once_for_many_views(monkeypatch):
    from attnlab.core import models

    calls = []
    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    monkeypatch.setattr(views, "_probes", {})
    monkeypatch.setattr(views, "tcp_reachable", lambda *a, **k: calls.append(a) or False)
    for _ in range(5):
        assert views._reachable(*views.BERTVIZ_CDN) is False
    assert len(calls) == 1
    assert models.tcp_reachable.__module__ == "attnlab.core.models"


def test_the_offline_views_speak_the_readers_language():
    """Every text the views' script shows comes from VIEW_TEXTS through the catalogue; the script's own
    English is only a fallback for data without texts, and holds exactly the same keys."""
    import json
    import re

    from attnlab.core import language
    from attnlab.viz.offline_views import VIEW_TEXTS, _asset

    maps = torch.full((2, 3, 4, 4), 0.25)
    script = _asset("views.js")
    defaults = re.search(r"var DEFAULT_TEXT = \{(.*?)\};", script, re.S).group(1)
    assert set(re.findall(r"(\w+): \"", defaults)) == set(VIEW_TEXTS)
    assert not re.search(r'el\("(?:span|div)", "[\w-]*", "[A-Za-z]{2,}', script)  # no literal label left
    before = language.current_language()
    try:
        language.set_language("zh")
        html = ModelView(maps, ["a", "b", "c", "d"]).fragment()
        data = json.loads(re.search(r"modelView\(document\.getElementById\([^)]*\), (\{.*\})\);", html, re.S).group(1))
        assert data["text"]["model_hint"].startswith("每层（行）每个头（列）")
        assert data["text"]["detail"] == "第 {layer} 层第 {head} 个头" and data["text"]["heads"] == "头"
        assert all(re.search(r"[\u4e00-\u9fff]", t) for t in data["text"].values())
        language.set_language("en")
        data = json.loads(re.search(r"headView\(document\.getElementById\([^)]*\), (\{.*\})\);",
                                    HeadView(maps, ["a", "b", "c", "d"]).fragment(), re.S).group(1))
        assert data["text"] == {key: text for key, text in VIEW_TEXTS.items()}
    finally:
        language.set_language(before)
