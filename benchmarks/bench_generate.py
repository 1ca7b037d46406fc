"""Generation speed on this CPU: cached vs uncached, tinyk vs Hugging Face, and cache memory.

    python benchmarks/bench_generate.py [--quick]

Everything compared is measured in this one run, alternating the contenders so a slow
moment of a noisy machine hits both. Printed:

1. cached / uncached speed-up at 64, 256 and 512 new tokens, for the tiny config (batch 1
   and 8) and a mid-size one (goal: at least 5x at 256);
2. tinyk's cached greedy generation vs ``transformers``' ``generate`` with the same weights
   (goal: time ratio tinyk/HF at most 1.0);
3. the KV cache's bytes for MHA vs GQA at the mid-size config, measured from the tensors.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from tinyk import KVCache, ModelConfig, Transformer, expand_kv_heads, generate

CONFIGS = {
    "tiny": ModelConfig.tiny(vocab_size=64, max_seq_len=640),
    "mid": ModelConfig(dim=256, n_layers=4, n_heads=8, n_kv_heads=2, vocab_size=4096, max_seq_len=640),
}


def timed(fn, rounds: int, *args, **kwargs) -> float:
    """Median wall time of ``fn(*args, **kwargs)`` over ``rounds`` calls."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cache_speedups(rounds: int, lengths: list[int]) -> None:
    print("1. cached vs uncached greedy generation (prompts of 16 tokens)")
    # The tiny model's cached step is fixed per-call overhead, whatever the batch; recomputing
    # grows with the batch. Batch 1 and batch 8 are both printed for it.
    for name, config, batch in [("tiny", CONFIGS["tiny"], 1), ("tiny", CONFIGS["tiny"], 8),
                                ("mid", CONFIGS["mid"], 1)]:
        torch.manual_seed(0)
        model = Transformer(config).eval()
        prompt = torch.randint(0, config.vocab_size, (batch, 16))
        for n in lengths:
            args = dict(max_new_tokens=n, temperature=0)
            generate(model, prompt, **args, use_cache=True)  # warm-up
            with_cache = timed(generate, rounds, model, prompt, **args, use_cache=True)
            without = timed(generate, rounds, model, prompt, **args, use_cache=False)
            print(f"   {name:4s} B={batch} {n:4d} new tokens: cached {with_cache * 1e3:8.1f} ms, "
                  f"uncached {without * 1e3:8.1f} ms, speed-up {without / with_cache:5.1f}x")


def against_hf(rounds: int, n_new: int) -> None:
    from tinyk.hf import to_hf

    print(f"2. tinyk vs transformers generate, mid config, greedy, {n_new} new tokens, batch 1")
    torch.manual_seed(0)
    config = CONFIGS["mid"]
    model = Transformer(config).eval()
    hf = to_hf(model)
    prompt = torch.randint(0, config.vocab_size, (1, 16))
    ours = lambda: generate(model, prompt, max_new_tokens=n_new, temperature=0)
    theirs = lambda: hf.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                                 max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False,
                                 pad_token_id=0, eos_token_id=None)
    same = torch.equal(ours(), theirs()[:, 16:])
    t_ours, t_hf = [], []
    for _ in range(rounds):  # alternate
        t_ours.append(timed(ours, 1))
        t_hf.append(timed(theirs, 1))
    a, b = statistics.median(t_ours), statistics.median(t_hf)
    print(f"   same tokens: {same}; tinyk {a * 1e3:.1f} ms ({n_new / a:.0f} tok/s), "
          f"HF {b * 1e3:.1f} ms ({n_new / b:.0f} tok/s); ratio tinyk/HF = {a / b:.3f} (goal <= 1.0)")


def cache_memory() -> None:
    config = CONFIGS["mid"]
    print(f"3. KV cache bytes, mid config (L={config.n_layers}, H_q={config.n_heads}, "
          f"H_kv={config.n_kv_heads}, d_h={config.head_dim}), 512 tokens, batch 8, float32")
    gqa = KVCache(config, 8, 512)
    mha = KVCache(expand_kv_heads(Transformer(config)).config, 8, 512)
    print(f"   GQA {gqa.nbytes / 2**20:.1f} MiB, MHA {mha.nbytes / 2**20:.1f} MiB, "
          f"ratio {mha.nbytes / gqa.nbytes:.1f} (H_q/H_kv = {config.n_rep})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and lengths")
    args = parser.parse_args()
    rounds = 1 if args.quick else 3
    torch.set_grad_enabled(False)
    print(f"threads={torch.get_num_threads()}, torch {torch.__version__}")
    cache_speedups(rounds, [64, 256] if args.quick else [64, 256, 512])
    against_hf(rounds, 128 if args.quick else 256)
    cache_memory()


if __name__ == "__main__":
    main()
