"""The offline model kit: download to a folder, verify it, load it, and fail clearly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

import attnlab as al
from attnlab.tools import kit
from attnlab.tools.cli import main
from attnlab.tools.testing import save_tiny_model


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A tiny model folder standing in for a hub download (no network)."""
    return save_tiny_model(tmp_path_factory.mktemp("source"), language="zh", seed=3)


@pytest.fixture
def kit_folder(source, tmp_path) -> Path:
    return kit.download_model(str(source), tmp_path / "kit", verbose=False)


def _maps(model: torch.nn.Module, tokenizer, text: str) -> tuple[torch.Tensor, ...]:
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return model(**enc, output_attentions=True).attentions


def test_download_then_load_gives_the_same_model(source, kit_folder):
    from transformers import AutoModel, AutoTokenizer

    assert (kit_folder / "model.safetensors").exists()
    assert not list(kit_folder.glob("*.bin")), "weights must be saved as safetensors"
    m = al.load_model(str(kit_folder), verbose=False)
    # the reference: the source folder loaded straight with transformers, eager attention
    ref = AutoModel.from_pretrained(source, attn_implementation="eager").eval()
    ref_tok = AutoTokenizer.from_pretrained(source)
    text = "王者荣耀怎么玩"
    assert m.tokenizer(text)["input_ids"] == ref_tok(text)["input_ids"]
    got, want = _maps(m.model, m.tokenizer, text), _maps(ref, ref_tok, text)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert m.language == "zh" and (m.n_layers, m.n_heads) == (2, 12)


def test_manifest_records_checksums_versions_and_date(kit_folder, source):
    record = json.loads((kit_folder / kit.MANIFEST).read_text())
    on_disk = sorted(p.name for p in kit_folder.iterdir() if p.name != kit.MANIFEST)
    assert sorted(record["files"]) == on_disk
    for rel, digest in record["files"].items():
        assert digest == hashlib.sha256((kit_folder / rel).read_bytes()).hexdigest()
    assert record["model"] == str(source)
    assert set(record["versions"]) == {"attnlab", "transformers", "torch"}
    import transformers

    assert record["versions"]["transformers"] == transformers.__version__
    assert record["created"][:2] == "20" and "UTC" in record["created"]
    assert kit.verify_folder(kit_folder) is True


def test_auto_uses_attnlab_model_folder(kit_folder, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODEL", str(kit_folder))
    m = al.load_model(verbose=False)
    assert m.path == str(kit_folder) and m.reason == "ATTNLAB_MODEL is set"


def _flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_file_is_named_through_load_model(kit_folder, monkeypatch):
    weights = kit_folder / "model.safetensors"
    _flip_byte(weights, weights.stat().st_size // 2)  # a weight value, the header still parses
    with pytest.raises(al.ModelLoadError) as err:
        al.load_model(str(kit_folder), verbose=False)
    msg = str(err.value)
    assert "model.safetensors" in msg and "corrupt" in msg and str(kit_folder) in msg
    assert "Copy the folder again" in msg and "attnlab download" in msg
    # the same error when the folder comes from ATTNLAB_MODEL: never a silent fallback
    monkeypatch.setenv("ATTNLAB_MODEL", str(kit_folder))
    with pytest.raises(al.ModelLoadError, match="model.safetensors"):
        al.load_model("auto", verbose=False)


def test_missing_file_is_named_through_load_model(kit_folder):
    (kit_folder / "tokenizer.json").unlink()
    with pytest.raises(al.ModelLoadError) as err:
        al.load_model(str(kit_folder), verbose=False)
    msg = str(err.value)
    assert "tokenizer.json is missing" in msg and "Copy the whole folder again" in msg


def test_damaged_manifest_is_a_clear_error(kit_folder):
    (kit_folder / kit.MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(kit.KitError, match="damaged attnlab-manifest.json"):
        kit.verify_folder(kit_folder)


def test_plain_folder_has_no_manifest_but_loads(source):
    assert kit.verify_folder(source) is False
    with pytest.raises(kit.KitError, match="cannot be verified"):
        kit.check_kit(source)


def test_download_refuses_a_non_empty_folder_unless_forced(source, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(kit.KitError, match="not empty"):
        kit.download_model(str(source), out, verbose=False)
    # --force replaces kits only: a folder of other files is never overwritten
    with pytest.raises(kit.KitError, match="not a kit"):
        kit.download_model(str(source), out, force=True, verbose=False)
    assert (out / "notes.txt").read_text() == "keep me"


def test_force_replaces_only_the_kits_own_files(source, kit_folder, capsys):
    secret = kit_folder / "private.key"
    secret.write_text("do not share")
    secret.chmod(0o600)
    kit.download_model(str(source), kit_folder, force=True, verbose=True)
    assert kit.verify_folder(kit_folder)
    assert secret.read_text() == "do not share" and (secret.stat().st_mode & 0o777) == 0o600
    assert "private.key" not in kit.read_manifest(kit_folder)["files"]
    assert "private.key" in capsys.readouterr().out  # reported, not carried along
    assert kit.check_kit(kit_folder).unlisted == ["private.key"]


def test_a_symlinked_licence_is_not_copied_into_the_kit(source, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for f in source.iterdir():
        (src / f.name).write_bytes(f.read_bytes())
    private = tmp_path / "private.txt"
    private.write_text("secret contents")
    (src / "LICENSE").symlink_to(private)
    out = kit.download_model(str(src), tmp_path / "kit2", verbose=False)
    assert not (out / "LICENSE").exists()
    assert all("secret" not in p.read_text(errors="ignore") for p in out.iterdir() if p.suffix in (".txt", ".md", ""))


@pytest.mark.parametrize("key", ["../../etc/passwd", "/etc/passwd", "", "/dev/zero", "a/../../x", "C:\\x"])
def test_manifest_keys_must_stay_inside_the_folder(kit_folder, key):
    record = json.loads((kit_folder / kit.MANIFEST).read_text())
    record["files"][key] = "0" * 64
    (kit_folder / kit.MANIFEST).write_text(json.dumps(record))
    with pytest.raises(kit.KitError, match="not a file inside the folder|empty file name"):
        kit.verify_folder(kit_folder)
    with pytest.raises(al.ModelLoadError):
        al.load_model(str(kit_folder), verbose=False)


def test_a_manifest_member_that_is_a_link_or_device_is_refused(kit_folder, tmp_path):
    weights = kit_folder / "model.safetensors"
    real = tmp_path / "elsewhere.safetensors"
    weights.rename(real)
    weights.symlink_to(real)
    with pytest.raises(kit.KitError, match="symbolic link"):
        kit.verify_folder(kit_folder)
    weights.unlink()
    weights.symlink_to("/dev/zero")
    with pytest.raises(kit.KitError, match="symbolic link"):
        kit.verify_folder(kit_folder)


def test_a_kit_without_its_manifest_is_an_error_for_verify(kit_folder):
    (kit_folder / kit.MANIFEST).unlink()
    with pytest.raises(kit.KitError, match="no attnlab-manifest.json"):
        kit.verify_folder(kit_folder, require=True)
    assert main(["verify", str(kit_folder)]) == 1


def test_a_half_copied_folder_without_manifest_is_a_model_load_error(kit_folder):
    (kit_folder / kit.MANIFEST).unlink()
    weights = kit_folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 3])
    with pytest.raises(al.ModelLoadError, match="half-copied|damaged"):
        al.load_model(str(kit_folder), verbose=False)


def test_cli_download_verify_and_exit_codes(source, tmp_path, capsys):
    out = tmp_path / "cli-kit"
    assert main(["download", str(source), "--to", str(out)]) == 0
    assert "ATTNLAB_MODEL=" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0
    assert "all checksums match" in capsys.readouterr().out
    assert main(["download", "--check", str(out)]) == 0
    capsys.readouterr()

    _flip_byte(out / "config.json", 5)
    assert main(["verify", str(out)]) == 1
    assert "config.json does not match its checksum" in capsys.readouterr().out
    assert main(["verify", str(source)]) == 1  # no manifest: cannot be verified
    assert main(["download", str(source), "--to", str(out)]) == 1  # not empty
    assert "not empty" in capsys.readouterr().out
    assert main(["download", str(source)]) == 2  # no --to


def test_cli_download_of_an_unreachable_hub_model_fails_with_advice(tmp_path, monkeypatch, capsys):
    from attnlab.core import models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=2.0: False)
    rc = main(["download", "hub:someone/not-a-cached-model", "--to", str(tmp_path / "x")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "Could not load model" in out and "not reachable" in out
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_download_bundled_then_load(tmp_path, bundled, monkeypatch):
    out = kit.download_model("bundled", tmp_path / "minilm", verbose=False)
    record = kit.read_manifest(out)
    assert record["model"] == "all-MiniLM-L6-v2" and record["source"] == "bundled"
    assert (out / "README.md").exists()  # the model card travels with the weights
    monkeypatch.setenv("ATTNLAB_MODEL", str(out))
    m = al.load_model(verbose=False)
    text = "how do you play chess"
    got, want = _maps(m.model, m.tokenizer, text), _maps(bundled.model, bundled.tokenizer, text)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_a_trained_mlm_head_travels_with_the_kit(tmp_path):
    from transformers import AutoModelForMaskedLM

    src = save_tiny_model(tmp_path / "mlm-src", mlm_head=True, seed=4)
    out = kit.download_model(str(src), tmp_path / "mlm-kit", verbose=False)
    ref = AutoModelForMaskedLM.from_pretrained(src).eval()
    got, info = AutoModelForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"]
    ids = torch.tensor([[2, 10, 11, 12, 3]])
    with torch.no_grad():
        torch.testing.assert_close(got.eval()(input_ids=ids).logits, ref(input_ids=ids).logits)
    from attnlab.analysis.importance import mlm_model

    m = al.load_model(str(out), verbose=False)  # the encoder still loads as the course's model
    assert mlm_model(m) is not None  # and lesson 11 finds the trained head
