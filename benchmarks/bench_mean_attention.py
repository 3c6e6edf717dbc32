"""How fast does ``mean_attention`` average attention maps, next to the plain forward pass?

Everything is built in code (nothing is downloaded): a random model shaped like
bert-base-chinese (12 layers, 12 heads, hidden 768, a vocabulary of 21,128
entries) and a character-level tokenizer over CJK characters, fed random
queries of 10 characters (12 tokens with [CLS] and [SEP]). Speed does not
depend on the weights. One run prints, side by side:

* tokenisation alone (the tokenizer over every query, batched);
* the plain forward pass from text (tokenise, copy, run all layers; no maps);
* ``mean_attention`` from text at each precision (fp32, fp32 with the
  tokenizer in a background thread, tf32, bf16; int8 on a CPU);
* the device-only bound: ``mean_attention(token_ids=...)`` with the ids
  already on the device (no tokenising, no copies), at each precision;
* for each: queries/s, the ratio to the plain forward pass, the projected time
  of 1,000,000 queries, the peak memory (device memory on a GPU, resident
  memory on a CPU), and the largest deviation of its mean maps from fp32 and
  from a float64 run of the same model on the same first queries.

    python benchmarks/bench_mean_attention.py --device cpu --n 256 --batch-size 64
    python benchmarks/bench_mean_attention.py --device cuda            # 8,192 queries, batches of 512
"""

from __future__ import annotations

import argparse
import copy
import random
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from transformers import BertConfig, BertModel, BertTokenizer

import attnlab as al
from attnlab.core.run import encode, encode_ids, run

VOCAB_SIZE = 21_128  # bert-base-chinese
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# --------------------------------------------------------------------------- the set-up, in code


def character_tokenizer() -> BertTokenizer:
    """A character-level tokenizer over the first CJK characters, 21,128 entries like bert-base-chinese."""
    chars = [chr(0x4E00 + i) for i in range(VOCAB_SIZE - len(SPECIALS))]
    return BertTokenizer(vocab={t: i for i, t in enumerate(SPECIALS + chars)}, tokenize_chinese_chars=True,
                         model_max_length=512)


def bert_base_chinese_shaped(tokenizer, device: torch.device) -> al.LoadedModel:
    """A random BertModel with bert-base-chinese's geometry on ``device`` (``wrap_model`` makes its attention eager)."""
    cfg = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512)
    torch.manual_seed(0)
    model = BertModel(cfg).eval().to(device)
    return al.wrap_model(model, tokenizer, name="random bert-base-chinese-shaped")


def random_queries(n: int, length: int = 10, seed: int = 0) -> list[str]:
    """``n`` strings of ``length`` random characters of the tokenizer's vocabulary (common range)."""
    rng = random.Random(seed)
    return ["".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(length)) for _ in range(n)]


# --------------------------------------------------------------------------- measuring


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    else:
        try:  # Linux: "5" resets this process's peak resident set (VmHWM)
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass


def peak_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Row:
    label: str
    per_second: float
    peak_mb: float
    precision: str | None = None
    result: object = None  # a MeanAttention: its recorded deviation


def timed(label: str, n: int, device: torch.device, work: Callable[[], object], precision: str | None = None) -> Row:
    synchronise(device)
    reset_peak(device)
    start = time.perf_counter()
    result = work()
    synchronise(device)
    seconds = time.perf_counter() - start
    print(f"  measured {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return Row(label, n / seconds, peak_mb(device), precision, result)


def plain_forward(m: al.LoadedModel, texts: list[str], batch_size: int) -> None:
    """Tokenise, copy and run the full model in batches; keep nothing."""
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            m.model(**encode(m, texts[s:s + batch_size]).inputs)


def mean_maps64(m: al.LoadedModel, texts: list[str], batch_size: int) -> torch.Tensor:
    """float64 mean maps ``[L, H, n, n]`` of a float64 copy of the model on ``texts``."""
    m64 = al.wrap_model(copy.deepcopy(m.model).double(), m.tokenizer, name=m.name + " (float64)")
    total = None
    for s in range(0, len(texts), batch_size):
        batch = encode(m64, texts[s:s + batch_size])
        maps = torch.stack([v.double() for _, v in sorted(run(m64, batch, keep=("maps",)).maps.items())], 1)
        part = maps.sum(dim=0)  # (L, H, n, n)
        total = part if total is None else total + part
    return (total / len(texts)).cpu()


# --------------------------------------------------------------------------- the run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--n", type=int, default=None, help="queries per contender (default 8192 on cuda, 256 on cpu)")
    ap.add_argument("--batch-size", type=int, default=None, help="default 512 on cuda, 64 on cpu")
    ap.add_argument("--check", type=int, default=256, help="first queries compared with fp32 and float64")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: use --device cpu", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    n = args.n or (8192 if device.type == "cuda" else 256)
    batch = args.batch_size or (512 if device.type == "cuda" else 64)
    tok = character_tokenizer()
    m = bert_base_chinese_shaped(tok, device)
    texts = random_queries(n)
    check = texts[: min(args.check, n)]
    ids_host = torch.tensor(tok(texts)["input_ids"])  # (n, 12)
    ids_device = ids_host.to(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"{m.describe()}\n{name}; {n:,} queries of {ids_host.shape[1]} tokens, batches of {batch}; torch {torch.__version__}")

    precisions = ["fp32", "tf32", "bf16"] + (["int8"] if device.type == "cpu" else [])
    mean = lambda **kw: (lambda: al.mean_attention(m, batch_size=batch, progress=False, **kw))  # noqa: E731
    # warm-up: kernels, the int8 copy, the tokenizer
    plain_forward(m, texts[:batch], batch)
    for p in precisions:
        al.mean_attention(m, texts[:batch], batch_size=batch, progress=False, precision=p)

    rows = [timed("tokenisation alone", n, device, lambda: tok(texts)),
            timed("plain forward, from text", n, device, lambda: plain_forward(m, texts, batch))]
    for p in precisions:
        rows.append(timed(f"mean_attention {p}, from text", n, device, mean(texts=texts, precision=p), p))
    rows.append(timed("mean_attention fp32, text, background", n, device, mean(texts=texts, background=True),
                      "fp32"))
    for p in precisions:
        if p != "int8":
            rows.append(timed(f"device-only bound {p} (ids on device)", n, device,
                              mean(token_ids=ids_device, precision=p), p))

    # deviations on the same first queries: each precision against fp32 and against float64
    ref32 = al.mean_attention(m, token_ids=ids_host[: len(check)], batch_size=batch, progress=False).mean
    ref64 = mean_maps64(m, check, batch)
    deviations = {}
    for p in precisions:
        got = al.mean_attention(m, token_ids=ids_host[: len(check)], batch_size=batch, progress=False,
                                precision=p).mean
        deviations[p] = (float((got - ref32).abs().max()), float((got - ref64).abs().max()))

    plain = rows[1].per_second
    print(f"\n{'':40s} {'queries/s':>10s} {'x plain':>8s} {'1M queries':>11s} {'peak MB':>9s} "
          f"{'dev fp32':>9s} {'dev fp64':>9s}")
    for r in rows:
        dev = f"{deviations[r.precision][0]:9.1e} {deviations[r.precision][1]:9.1e}" if r.precision else ""
        print(f"{r.label:40s} {r.per_second:10,.0f} {r.per_second / plain:8.2f} {1e6 / r.per_second:10,.0f}s "
              f"{r.peak_mb:9,.0f} {dev}")
    recorded = {r.label: r.result.deviation for r in rows if getattr(r.result, "deviation", None) is not None}
    for label, dev in recorded.items():
        print(f"deviation recorded by the run, {label}: {dev:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
