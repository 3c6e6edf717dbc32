"""The attnlab command: one clear line for every bad input, a traceback only with --debug."""

from __future__ import annotations

import pytest

from attnlab.tools.cli import main


def test_figures_refuses_a_file_as_output_before_loading_a_model(tmp_path, capsys, monkeypatch):
    from attnlab.tools import cli

    loaded = []
    monkeypatch.setattr(cli, "load_model", lambda *a, **k: loaded.append(a))
    target = tmp_path / "figures.png"
    target.write_text("x")
    assert main(["figures", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and "Traceback" not in err and loaded == []


def test_a_missing_model_folder_is_one_line(tmp_path, capsys):
    assert main(["info", "--model", str(tmp_path / "no" / "such")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("attnlab info: There is no folder") and "Traceback" not in "\n".join(err)


def test_debug_shows_the_traceback(tmp_path, capsys):
    assert main(["--debug", "info", "--model", str(tmp_path / "nope" / "x")]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_an_unknown_command_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
