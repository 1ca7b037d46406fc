"""Cached decoding of SmolLM2-135M on this CPU: tinyk vs transformers, and the bandwidth bound.

    python benchmarks/bench_real_weights.py [--new-tokens 64] [--rounds 3]

Both models hold the same float32 weights, dequantised from the same GGUF file, and decode
greedily with a KV cache, the same number of tokens (no early stop). Rounds alternate
between the two. Decoding one token reads every weight once (the tied V×d matrix in full,
for the head), so tokens/s cannot exceed copy bandwidth ÷ weight bytes; the script
measures the bandwidth with a large tensor copy and prints how close each gets.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from tinyk import count_parameters, generate
from tinyk.interop.gguf import load_gguf, load_tokenizer, smollm2_path


def copy_bandwidth(megabytes: int = 512, rounds: int = 5) -> float:
    """Bytes per second moved by a large tensor copy (read + write), best of ``rounds``."""
    src = torch.ones(megabytes * 2**20 // 4)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.numel() * 4 / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from transformers import LlamaForCausalLM

    torch.set_grad_enabled(False)
    path = smollm2_path()
    model, info = load_gguf(path)
    hf = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    tok = load_tokenizer(path)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Tell me about the city of Paris."}],
                                     add_generation_prompt=True, return_tensors="pt")["input_ids"]
    n = args.new_tokens

    def ours() -> torch.Tensor:
        return generate(model, prompt, max_new_tokens=n, temperature=0)

    def theirs() -> torch.Tensor:
        return hf.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n,
                           min_new_tokens=n, do_sample=False, eos_token_id=None,
                           pad_token_id=info.pad_token_id)[:, prompt.shape[1]:]

    same = torch.equal(ours(), theirs())  # also a warm-up
    times: dict[str, list[float]] = {"tinyk": [], "transformers": []}
    for _ in range(args.rounds):
        for name, fn in (("tinyk", ours), ("transformers", theirs)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rate = {name: n / statistics.median(t) for name, t in times.items()}

    weight_bytes = count_parameters(model) * 4
    bandwidth = copy_bandwidth()
    bound = bandwidth / weight_bytes
    print(f"threads={torch.get_num_threads()}, prompt {prompt.shape[1]} tokens, {n} new tokens, "
          f"{args.rounds} alternating rounds; same tokens: {same}")
    for name, r in rate.items():
        print(f"{name:13s} {r:6.1f} tokens/s  ({r / bound:.0%} of the bandwidth bound)")
    print(f"ratio tinyk/transformers (tokens/s) = {rate['tinyk'] / rate['transformers']:.3f} (goal >= 1.0)")
    print(f"bound: {bandwidth / 1e9:.1f} GB/s copy bandwidth / {weight_bytes / 1e6:.0f} MB of float32 "
          f"weights per token = {bound:.1f} tokens/s")


if __name__ == "__main__":
    main()
