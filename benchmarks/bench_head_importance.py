"""Head importance: one backward pass per batch against masking every head in turn.

Side by side, in one run, on the same texts and the same objective
(:func:`attnlab.analysis.importance.make_objective`: by default the masked-LM loss when
the model has an MLM head, else the contrastive loss of the bundled sentence encoder;
``--kind`` picks another, but the representation objectives "sentence" and "token" are
at their minimum for the full model, so their gradient is 0 and only (b) is meaningful):

(a) gradient importance ``|dL/dxi|`` (Michel et al. 2019): one forward and one
    backward pass per batch, all heads at once;
(b) single-head ablation: ``layers x heads`` forward passes over all texts,
    each with one head masked.

Prints both times, the speed ratio and the Spearman rank correlation between
the two importance orders (how far the local gradient agrees with really
removing a head). Both run on the same number of CPU threads.

    python benchmarks/bench_head_importance.py                 # bundled model, 128 texts
    python benchmarks/bench_head_importance.py --texts 32      # quicker
    python benchmarks/bench_head_importance.py --model DIR --threads 2
    python benchmarks/bench_head_importance.py --kind contrastive
"""

from __future__ import annotations

import argparse
import time

import attnlab as al
from attnlab.data import corpus
from attnlab.analysis.importance import KINDS, ablation_effects, head_importance, make_objective
from attnlab.analysis.stats import correlation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled", help="model name or folder (default: bundled)")
    parser.add_argument("--texts", type=int, default=128, help="built-in queries to average over")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--kind", default="auto", choices=KINDS, help="the objective (default: auto)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for both methods")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats of the gradient method (best is kept)")
    args = parser.parse_args(argv)

    m = al.load_model(args.model)
    texts = corpus.texts(m.language, args.texts, seed=1)
    objective = make_objective(m, texts, kind=args.kind, batch_size=args.batch_size)
    print(f"model: {m.describe()}")
    print(f"objective: {objective.description}")
    print(f"threads: {args.threads}; {m.n_layers * m.n_heads} heads; {len(objective.batches)} batches")

    head_importance(m, objective, threads=args.threads)  # warm-up
    grad_times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        scores = head_importance(m, objective, normalize=False, threads=args.threads)
        grad_times.append(time.perf_counter() - start)
    t_grad = min(grad_times)

    start = time.perf_counter()
    effects, base = ablation_effects(m, objective, threads=args.threads, progress=True)
    t_ablate = time.perf_counter() - start

    rho = correlation(scores, effects, "spearman")
    rho_norm = correlation(head_importance(m, objective, threads=args.threads), effects, "spearman")
    print()
    print(f"(a) gradient importance, one backward per batch : {t_grad:8.2f} s (best of {args.repeats})")
    print(f"(b) ablation, {m.n_layers * m.n_heads} masked forward passes       : {t_ablate:8.2f} s")
    print(f"speed ratio (b)/(a)                              : {t_ablate / t_grad:8.1f} x")
    print(f"Spearman rank correlation, raw gradient vs ablation     : {rho:+.3f}")
    print(f"Spearman rank correlation, layer-normalised vs ablation : {rho_norm:+.3f}")
    print(f"unpruned loss {base:.4f}; largest single-head loss increase {effects.max():+.4f}, "
          f"heads whose removal lowers the loss: {int((effects < 0).sum())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
