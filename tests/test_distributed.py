"""The mean-attention command alone and under torchrun with 2 processes give the same result."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import attnlab as al
from attnlab.core.streaming import MeanAttention
from attnlab.tools.distributed import distributed_mean_attention, parse_layers, read_queries

from same_length import same_length_texts


def test_parse_layers():
    assert parse_layers("0-3") == [0, 1, 2, 3]
    assert parse_layers("0,2,5") == [0, 2, 5]
    assert parse_layers("0-1,4") == [0, 1, 4]
    assert parse_layers(None) is None and parse_layers("all") is None


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
