"""The mean-attention command alone and under torchrun with 2 processes give the same result."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

import attnlab as al
from attnlab.core.streaming import MeanAttention
from attnlab.tools import distributed
from attnlab.tools.cli import main as cli_main
from attnlab.tools.distributed import (
    LengthCheck,
    agreed_length,
    distributed_mean_attention,
    merge_lengths,
    parse_layers,
    read_queries,
)

from same_length import same_length_texts


def test_parse_layers():
    assert parse_layers("0-3") == [0, 1, 2, 3]
    assert parse_layers("0,2,5") == [0, 2, 5]
    assert parse_layers("0-1,4") == [0, 1, 4]
    assert parse_layers(None) is None and parse_layers("all") is None


@pytest.mark.parametrize("spec, message", [("-1", "0-based"), ("a", "0-based"), ("3-1", "runs backwards"),
                                           ("0-", "0-based"), ("1,,2", "0-based")])
def test_bad_layer_specs_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_layers(spec)


def test_shards_cover_every_query_once(tmp_path):
    path = tmp_path / "q.txt"
    lines = [f"query {i}" for i in range(11)]
    path.write_text("\n".join(lines[:5]) + "\n\n" + "\n".join(lines[5:]) + "\n", encoding="utf-8")
    shards = [list(read_queries(path, r, 3)) for r in range(3)]
    assert sorted(sum(shards, [])) == sorted(lines)
    assert [len(s) for s in shards] == [4, 4, 3]


def _cli(args: list[str], env: dict, timeout: int = 120) -> None:
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def test_two_process_torchrun_equals_single_process(tiny_en, tmp_path):
    texts = same_length_texts(21, seed=11)
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(texts) + "\n", encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    common = ["mean-attention", "--model", tiny_en.path, "--queries", str(queries), "--layers", "0-1",
              "--batch-size", "4", "--quiet"]
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    _cli([sys.executable, "-m", "attnlab", *common, "--out", str(one)], env)
    _cli([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
          "-m", "attnlab.tools.cli", *common, "--out", str(two)], env)
    a, b = MeanAttention.load(one), MeanAttention.load(two)
    assert a.count == b.count == 21
    torch.testing.assert_close(a.mean, b.mean, atol=1e-6, rtol=0)
    torch.testing.assert_close(a.var, b.var, atol=1e-6, rtol=0)
    torch.testing.assert_close(a.fixedness(), b.fixedness(), atol=1e-6, rtol=0)
    ref = al.attention(tiny_en, texts).tensor.double()
    torch.testing.assert_close(b.mean, ref.mean(dim=0), atol=1e-6, rtol=0)


def test_empty_query_file_is_a_clear_error(tiny_en, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no queries"):
        distributed_mean_attention(tiny_en.path, path, tmp_path / "o.pt", progress=False)


# --------------------------------------------------------------------------- bad inputs: one line, before any work


def _good_queries(folder) -> str:
    path = folder / "q.txt"
    path.write_text("\n".join(same_length_texts(6, seed=2)) + "\n", encoding="utf-8")
    return str(path)


def _probes(tmp_path) -> list[tuple[list[str], str]]:
    """(arguments that differ from a good run, a piece of the expected one-line message)."""
    good = _good_queries(tmp_path)
    bad_utf8 = tmp_path / "latin1.txt"
    bad_utf8.write_bytes(("\n".join(same_length_texts(30)) + "\n").encode() + "caf\xe9 au lait\n".encode("latin-1"))
    empty = tmp_path / "blank.txt"
    empty.write_text("\n  \n\n", encoding="utf-8")
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    return [
        (["--queries", str(tmp_path / "missing.txt")], "does not exist"),
        (["--queries", str(tmp_path)], "is a folder"),
        (["--queries", str(bad_utf8)], "line 31 is not valid UTF-8"),
        (["--queries", str(empty)], "holds no queries"),
        (["--queries", good, "--layers=-1"], "0-based"),
        (["--queries", good, "--batch-size", "0"], "--batch-size must be at least 1"),
        (["--queries", good, "--out", str(tmp_path)], "is a folder"),
        (["--queries", good, "--out", str(a_file / "sub" / "mean.pt")], "cannot be written"),
    ]


def test_every_bad_input_is_one_line_before_the_model_loads(tmp_path, capsys, monkeypatch):
    loaded = []
    monkeypatch.setattr(distributed, "load_model", lambda *a, **k: loaded.append(a))
    for args, message in _probes(tmp_path):
        argv = ["mean-attention", "--model", "bundled", "--out", str(tmp_path / "o.pt"), "--quiet", *args]
        assert cli_main(argv) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert message in err[0] and err[0].startswith("attnlab mean-attention: "), (args, err)
        assert len(err) == 2 and "Traceback" not in "\n".join(err)  # the line, then the --debug hint
    assert loaded == []  # no probe got as far as loading a model
    assert not (tmp_path / "o.pt").exists()


def test_layers_beyond_the_model_are_refused_before_computing(tiny_en, tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "mean_attention", lambda *a, **k: pytest.fail("computed anyway"))
    with pytest.raises(ValueError, match="out of range"):
        distributed_mean_attention(tiny_en.path, _good_queries(tmp_path), tmp_path / "o.pt", layers=[0, 5],
                                   progress=False)


def test_mixed_lengths_are_found_before_computing(tiny_en, tmp_path, monkeypatch):
    path = tmp_path / "mixed.txt"
    lines = same_length_texts(5, seed=1) + ["how do you play"] + same_length_texts(3, words=3)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(distributed, "mean_attention", lambda *a, **k: pytest.fail("computed anyway"))
    with pytest.raises(ValueError, match=r"line 6 \('how do you play'\) has 6 tokens but line 1 .* has 7 .*"
                                         r"3 lengths found: \[5, 6, 7\]"):
        distributed_mean_attention(tiny_en.path, path, tmp_path / "o.pt", progress=False)


def test_the_ranks_merge_their_lengths_into_the_single_process_answer(tiny_en, tmp_path):
    path = tmp_path / "mixed.txt"
    lines = same_length_texts(4, seed=1) + ["how do you play"] + same_length_texts(4, seed=2)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    alone = distributed.local_lengths(tiny_en, path)
    shares = [distributed.local_lengths(tiny_en, path, r, 3) for r in range(3)]
    assert merge_lengths(shares) == alone
    with pytest.raises(ValueError) as one:
        agreed_length(alone, path, tiny_en)
    with pytest.raises(ValueError) as three:
        agreed_length(merge_lengths(shares), path, tiny_en)
    assert str(one.value) == str(three.value) and "line 5" in str(one.value)
    assert agreed_length(LengthCheck({7: (1, "a b c d e")}), path, tiny_en) == 7
    with pytest.raises(ValueError, match="line 3 has 900 tokens"):
        agreed_length(LengthCheck({7: (1, "x")}, too_long=(3, 900)), path, tiny_en)


def test_two_processes_with_mixed_lengths_fail_on_every_rank_with_one_message(tiny_en, tmp_path):
    path = tmp_path / "mixed.txt"
    lines = same_length_texts(6, seed=4) + ["how do you play"] + same_length_texts(5, seed=5)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           "-m", "attnlab.tools.cli", "mean-attention", "--model", tiny_en.path, "--queries",
                           str(path), "--out", str(tmp_path / "o.pt"), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    # both ranks print the same one-line message (their writes to one stderr may interleave)
    messages = re.findall(r"attnlab mean-attention: .*?lengths found: \[[0-9, ]*\]\)", output)
    assert len(messages) == 2 and len(set(messages)) == 1, output[-3000:]
    assert "line 7 ('how do you play') has 6 tokens" in messages[0]
    assert "SIGABRT" not in output and "Signal 6" not in output
    assert not (tmp_path / "o.pt").exists()
