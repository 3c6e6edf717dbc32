"""Model resolution, the offline fallback, and loud failures."""

from __future__ import annotations

import time

import pytest
import torch

import attnlab as al
from attnlab.core import models
from attnlab.tools.testing import save_tiny_model


@pytest.fixture
def offline(monkeypatch):
    """No hub, no cached bert-base-chinese, no ATTNLAB_MODEL."""
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=2.0: False)
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_auto_offline_falls_back_to_bundled_quickly(offline, capsys):
    start = time.time()
    m = al.load_model("auto")
    assert time.time() - start < 10
    assert m.source == "bundled"
    assert (m.n_layers, m.n_heads, m.hidden_size, m.head_dim) == (6, 12, 384, 32)
    assert m.language == "en"
    line = capsys.readouterr().out.strip()
    assert line.count("\n") == 0 and "bundled" in line and "because" in line


def test_environment_variable_overrides_auto(offline, tmp_path, monkeypatch, capsys):
    folder = save_tiny_model(tmp_path / "classroom", language="zh")
    monkeypatch.setenv("ATTNLAB_MODEL", str(folder))
    m = al.load_model()
    assert m.source == "local folder" and m.language == "zh"
    assert "ATTNLAB_MODEL" in capsys.readouterr().out


def test_unknown_name_offline_lists_what_was_tried(offline):
    with pytest.raises(al.ModelLoadError) as err:
        al.load_model("no-such-org/no-such-model", verbose=False)
    msg = str(err.value)
    assert "local folder" in msg and "cache" in msg and "hub" in msg
    assert "load_model('bundled')" in msg


def test_missing_local_path_is_clear(offline, tmp_path):
    with pytest.raises(al.ModelLoadError, match="not found"):
        al.load_model(str(tmp_path / "nope" / "deeper"), verbose=False)


def test_folder_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(al.ModelLoadError, match="config.json"):
        al.load_model(str(tmp_path / "empty"), verbose=False)


def test_unsupported_architecture_names_the_supported_ones(tmp_path):
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    with pytest.raises(al.ModelLoadError, match="bert, roberta"):
        al.wrap_model(model, tokenizer=None)


def test_model_without_attentions_fails_loudly(tiny_en, monkeypatch):
    m = tiny_en
    original = m.model.forward

    def no_attentions(*args, **kwargs):
        out = original(*args, **kwargs)
        out.attentions = ()
        return out

    monkeypatch.setattr(m.model, "forward", no_attentions)
    with pytest.raises(al.NoAttentionError, match="eager"):
        models.check_attentions(m)
    with pytest.raises(al.NoAttentionError, match="eager"):
        al.attention(m, ["chess"])


def test_sdpa_model_is_switched_to_eager(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    folder = save_tiny_model(tmp_path / "m")
    model = AutoModel.from_pretrained(folder, attn_implementation="sdpa")
    m = al.wrap_model(model, AutoTokenizer.from_pretrained(folder))
    att = al.attention(m, ["chess"])
    assert att.tensor.shape[1] == 2


def test_language_detection(tiny_en, tiny_zh, bundled):
    assert tiny_en.language == "en"
    assert tiny_zh.language == "zh"
    assert bundled.language == "en"


def test_roberta_limit_accounts_for_position_offset(tiny_factory):
    m = tiny_factory("roberta", "en")
    assert m.max_tokens == 64  # 66 position rows, two reserved for the padding offset
    long_ok = " ".join(["chess"] * 62)  # 62 words + 2 specials = 64 tokens
    assert al.attention(m, [long_ok]).lengths == [64]


def test_bad_model_name_types():
    with pytest.raises(TypeError):
        al.load_model(3)
    with pytest.raises(ValueError, match="empty"):
        al.load_model("  ")


def test_describe_and_parts(tiny_zh):
    assert "2 layers x 12 heads" in tiny_zh.describe()
    parts = tiny_zh.layer_parts()
    assert all(isinstance(p.output, torch.nn.Linear) for p in parts)
    assert parts[0].query.out_features == tiny_zh.hidden_size
