"""tinyk vs Hugging Face Llama, same weights, forward + backward on this CPU.

    python benchmarks/bench_forward.py [--dim 256 --layers 4 --heads 8 --kv-heads 2 --seq 256 --batch 8]

The two models run alternately, round after round, so a slow moment of a noisy machine
hits both; the ratio of medians is printed (goal: tinyk / HF <= 1.0).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from tinyk import ModelConfig, Transformer
from tinyk.interop.hf import to_hf


def step_time(model: torch.nn.Module, ids: torch.Tensor) -> float:
    start = time.perf_counter()
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    elapsed = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    torch.manual_seed(0)
    config = ModelConfig(dim=args.dim, n_layers=args.layers, n_heads=args.heads,
                         n_kv_heads=args.kv_heads, vocab_size=args.vocab, max_seq_len=args.seq)
    ours = Transformer(config).train()
    theirs = to_hf(ours).train()
    ids = torch.randint(0, args.vocab, (args.batch, args.seq))
    with torch.no_grad():
        diff = (ours(ids).logits - theirs(input_ids=ids).logits).abs().max().item()
    print(f"config: d={args.dim} L={args.layers} H_q={args.heads} H_kv={args.kv_heads} "
          f"T={args.seq} B={args.batch} V={args.vocab}; threads={torch.get_num_threads()}")
    print(f"max |logits difference| = {diff:.2e}")
    for model in (ours, theirs):  # warm-up
        step_time(model, ids)
    times: dict[str, list[float]] = {"tinyk": [], "hf": []}
    for _ in range(args.rounds):
        times["tinyk"].append(step_time(ours, ids))
        times["hf"].append(step_time(theirs, ids))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"forward+backward median: tinyk {med['tinyk'] * 1e3:.1f} ms, "
          f"HF {med['hf'] * 1e3:.1f} ms over {args.rounds} alternating rounds")
    print(f"ratio tinyk/HF = {med['tinyk'] / med['hf']:.3f} (goal <= 1.0)")


if __name__ == "__main__":
    main()
