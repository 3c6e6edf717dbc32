"""What every lesson pays besides its own work, measured side by side: the old way and today's.

    python benchmarks/bench_lesson_overheads.py            # each pair 3 times, alternating
    python benchmarks/bench_lesson_overheads.py --rounds 5

Three costs a lesson kernel pays that have nothing to do with what the lesson teaches:

* **the heads grid** (:func:`attnlab.viz.plot.plot_heads_grid`, lessons 00, 04, 05, 08 and 10): a
  12 x 12 grid of 9-token maps built and drawn to PNG as the notebook's inline backend draws it, in
  one axes (today) against one axes per map laid out by ``tight_layout`` (the old way, rebuilt here);
* **loading the default model's tokenizer**: the converted folder whose settings name the special
  tokens (today) against the same folder without them (transformers then parses the 17 MB
  ``tokenizer.json`` in Python before the Rust tokenizer reads it again);
* **ending a lesson's kernel** after it loaded the default model: stopped at once (today, as
  :func:`attnlab.tools.lesson_runner.lesson_kernel` and the class's nbgrader settings end it) against
  asked to exit (nbclient's default).

Each pair runs alternately in this one process, ``--rounds`` times; the script prints the median of
each and their ratio. The default model is converted first if it is not yet (about 20 s, once).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from attnlab.core import multilingual  # noqa: E402
from attnlab.tools.lesson_runner import local_kernel  # noqa: E402
from attnlab.viz.plot import plot_heads_grid  # noqa: E402

TOKENS = ["[CLS]", "王", "者", "荣", "耀", "怎", "么", "玩", "[SEP]"]


def grid_of_axes(a: np.ndarray, tokens: list[str]):
    """The old heads grid: one axes per map, ``tight_layout`` (``a`` is ``(L, H, n, n)``)."""
    layers, heads = a.shape[:2]
    fig, axes = plt.subplots(layers, heads, figsize=(1.6 * heads + 0.6, 1.6 * layers + 0.6), squeeze=False)
    for r in range(layers):
        for c in range(heads):
            ax = axes[r, c]
            ax.imshow(a[r, c], vmin=0, aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"head {c + 1}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"layer {r + 1}", fontsize=9)
                ax.set_yticks(range(len(tokens)), tokens, fontsize=6)
            if r == layers - 1:
                ax.set_xticks(range(len(tokens)), tokens, fontsize=6)
    fig.suptitle("all heads")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    return fig


def drawn(make: Callable[[], object]) -> Callable[[], float]:
    """Seconds to build ``make()``'s figure and save it as PNG the way the inline backend shows it."""
    def run() -> float:
        start = time.perf_counter()
        fig = make()
        fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")
        took = time.perf_counter() - start
        plt.close(fig)
        return took
    return run


def loaded(folder: Path) -> Callable[[], float]:
    """Seconds to load the tokenizer of ``folder``."""
    def run() -> float:
        start = time.perf_counter()
        AutoTokenizer.from_pretrained(folder)
        return time.perf_counter() - start
    return run


def kernel_with_model(shutdown: str) -> Callable[[], float]:
    """Seconds to end a kernel that loaded the default model, as ``shutdown`` says ("immediate", as
    :func:`lesson_kernel` ends it, or "graceful"), from its last cell's end until it is gone."""
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import attnlab as al\nm = al.load_model('auto', verbose=False)")])

    def run() -> float:
        sockets = Path(tempfile.mkdtemp(prefix="bench-kernel-"))
        client = NotebookClient(book, km=local_kernel(sockets), kernel_name="python3", shutdown_kernel=shutdown)
        try:
            with client.setup_kernel(cleanup_kc=True):
                client.execute_cell(book.cells[0], 0)
                start = time.perf_counter()
            return time.perf_counter() - start
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
    return run


def without_special_tokens(folder: Path, into: Path) -> Path:
    """A copy of ``folder``'s tokenizer files whose settings do not name the special tokens."""
    into.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "config.json"):
        shutil.copy2(folder / name, into / name)
    settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings.pop("added_tokens_decoder", None)
    (into / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return into


def compare(what: str, old: Callable[[], float], new: Callable[[], float], rounds: int) -> None:
    """Run ``old`` and ``new`` (each returns its seconds) alternately ``rounds`` times, after one
    untimed warm-up each; print the medians and their ratio."""
    old()
    new()
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(rounds):
        times["old"].append(old())
        times["new"].append(new())
    before, after = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"{what:<44} {before:7.2f} s -> {after:6.2f} s   ({before / after:4.1f}x faster)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="timed runs of each (default 3)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    maps = rng.random((12, 12, len(TOKENS), len(TOKENS))) ** 4  # (L, H, n, n)
    maps /= maps.sum(-1, keepdims=True)
    print("median of", args.rounds, "runs each, alternating; old -> today")
    compare("heads grid 12 x 12, built and drawn",
            drawn(lambda: grid_of_axes(maps, TOKENS)),
            drawn(lambda: plot_heads_grid(maps, TOKENS, suptitle="all heads")), args.rounds)
    folder = multilingual.converted_folder(verbose=False)
    with tempfile.TemporaryDirectory() as tmp:
        plain = without_special_tokens(folder, Path(tmp) / "plain")
        compare("the default model's tokenizer, loaded", loaded(plain), loaded(folder), args.rounds)
    compare("a kernel that loaded the model, ending",
            kernel_with_model("graceful"), kernel_with_model("immediate"), args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
