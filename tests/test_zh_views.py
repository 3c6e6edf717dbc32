"""In Chinese the offline (Chinese) views are the default, even where bertviz and its CDN answer."""

from __future__ import annotations

import pytest

import attnlab as al
from attnlab.viz import views
from attnlab.viz.offline_views import HeadView, ModelView


@pytest.fixture(scope="module")
def att(tiny_en):
    return al.attention(tiny_en, ["how do you play chess"])


@pytest.fixture
def bertviz_reachable(monkeypatch):
    import bertviz

    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    monkeypatch.setattr(views, "_reachable", lambda *a, **k: True)
    monkeypatch.setattr(bertviz, "head_view", lambda *a, **k: "bertviz head view")
    monkeypatch.setattr(bertviz, "model_view", lambda *a, **k: "bertviz model view")


def test_chinese_views_are_the_default_where_bertviz_could_render(att, bertviz_reachable, chinese, capsys):
    assert views.bertviz_status()[0]
    assert isinstance(views.head_view(att, 0), HeadView) and isinstance(views.model_view(att, 0), ModelView)
    out = capsys.readouterr().out
    assert "views.head_view(att, 0, bertviz=True)" in out and "views.model_view(att, 0, bertviz=True)" in out
    assert "英文" in out and "Offline" not in out


def test_bertviz_is_one_call_away_in_chinese_and_the_default_in_english(att, bertviz_reachable, chinese):
    from attnlab.core.language import set_language

    assert views.head_view(att, 0, bertviz=True) == "bertviz head view"
    assert views.model_view(att, 0, bertviz=True) == "bertviz model view"
    set_language("en")
    assert views.head_view(att, 0) == "bertviz head view"
    assert isinstance(views.head_view(att, 0, bertviz=False, verbose=False), HeadView)
