"""Generation speed on this CPU: cached vs uncached, tinyk vs Hugging Face, and cache memory.

    python benchmarks/bench_generate.py [--quick] [--against REV]

Everything compared is measured in this one run, alternating the contenders so a slow
moment of a noisy machine hits both. Printed:

1. cached / uncached speed-up at 64, 256 and 512 new tokens, for the tiny config (batch 1
   and 8) and a mid-size one (goal: at least 5x at 256);
2. tinyk's cached greedy generation vs ``transformers``' ``generate`` with the same weights
   (goal: time ratio tinyk/HF at most 1.0);
3. the KV cache's bytes for MHA vs GQA at the mid-size config, measured from the tensors;
4. where the tiny config at batch 1 stands: the same speed-up for ``transformers``' own
   ``generate`` with the same weights, and for a lower bound of eager PyTorch (one function
   over fused weights, no modules, no checks), both giving the same tokens as tinyk;
5. with ``--against REV``: this checkout's ``generate`` against that of the git revision
   ``REV`` of this repository (checked out in a temporary worktree), each in processes of its
   own taking turns, on the same weights and prompts (padded batches included, and their
   prefill alone, which keeps each row's last real position), in CPU seconds of the process
   on one thread (a busy machine disturbs them less than the wall clock), with the ratio
   this/REV and whether the tokens agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

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
    from tinyk.interop.hf import to_hf

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


class FusedTiny:
    """The model's inference maths in one function: a lower bound on eager PyTorch's step cost.

    Weights are fused (``wq|wk|wv`` and ``w1|w3`` each one matrix), RoPE runs once on q and
    k together as a complex product, there are no module calls and no input checks (fewer
    than half of tinyk's operator calls per step), and it runs under ``inference_mode``.
    Used only to measure how small a cached step can get here; the tokens are checked
    against tinyk's.
    """

    def __init__(self, model: Transformer) -> None:
        self.config = model.config
        self.embedding, self.final_norm = model.tok_embeddings.weight, model.norm.weight
        self.rope = torch.complex(model.freqs_cos, model.freqs_sin)  # max_seq_len × d_h/2
        self.layers = [
            (layer.attention_norm.weight,
             torch.cat([layer.attention.wq.weight, layer.attention.wk.weight, layer.attention.wv.weight]),
             layer.attention.wo.weight, layer.ffn_norm.weight,
             torch.cat([layer.feed_forward.w1.weight, layer.feed_forward.w3.weight]),
             layer.feed_forward.w2.weight)
            for layer in model.layers
        ]

    def last_logits(self, ids: torch.Tensor, cache: KVCache | None) -> torch.Tensor:
        """``B×T`` ids (no padding) -> ``B×V`` logits of the last position."""
        cfg, (B, T) = self.config, ids.shape
        H, H_kv, d_h, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, (cfg.dim,)
        start = cache.length if cache is not None else 0
        rope = self.rope[start : start + T, None]  # T×1×d_h/2
        h = F.embedding(ids, self.embedding)
        for i, (attention_norm, wqkv, wo, ffn_norm, w13, w2) in enumerate(self.layers):
            qkv = F.linear(F.rms_norm(h, d, attention_norm, cfg.norm_eps), wqkv).view(B, T, H + 2 * H_kv, d_h)
            pairs = qkv[:, :, : H + H_kv].reshape(B, T, H + H_kv, d_h // 2, 2)
            qk = torch.view_as_real(torch.view_as_complex(pairs) * rope).flatten(3)
            q, k, v = qk[:, :, :H], qk[:, :, H:], qkv[:, :, H + H_kv :]
            if cache is not None:
                k, v = cache.update(i, k, v)
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                 is_causal=T > 1, enable_gqa=True)
            h = h + F.linear(out.transpose(1, 2).reshape(B, T, H * d_h), wo)
            gate, up = F.linear(F.rms_norm(h, d, ffn_norm, cfg.norm_eps), w13).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, w2)
        if cache is not None:
            cache.advance(T)
        return F.linear(F.rms_norm(h[:, -1], d, self.final_norm, cfg.norm_eps), self.embedding)

    @torch.inference_mode()  # also skips the version counters that no_grad still keeps
    def generate(self, prompt: torch.Tensor, max_new_tokens: int, use_cache: bool) -> torch.Tensor:
        """Greedy, no padding, no EOS: the new tokens, ``B×n``."""
        cache = KVCache(self.config, prompt.shape[0], prompt.shape[1] + max_new_tokens) if use_cache else None
        ids, new = prompt, []
        for _ in range(max_new_tokens):
            new.append(self.last_logits(ids, cache).argmax(-1))
            ids = new[-1][:, None] if use_cache else torch.cat([ids, new[-1][:, None]], 1)
        return torch.stack(new, 1)


def tiny_batch_one(rounds: int, n_new: int) -> None:
    from tinyk.interop.hf import to_hf

    print(f"4. tiny config, batch 1, {n_new} new tokens: tinyk, transformers, and the eager floor")
    torch.manual_seed(0)
    model = Transformer(CONFIGS["tiny"]).eval()
    hf, fused = to_hf(model), FusedTiny(model)
    prompt = torch.randint(0, model.config.vocab_size, (1, 16))
    reference = generate(model, prompt, max_new_tokens=n_new, temperature=0)

    def hf_generate(use_cache: bool) -> torch.Tensor:
        return hf.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n_new,
                           min_new_tokens=n_new, do_sample=False, pad_token_id=0, eos_token_id=None,
                           use_cache=use_cache)[:, 16:]

    contenders = {
        "tinyk": lambda use_cache: generate(model, prompt, max_new_tokens=n_new, temperature=0,
                                            use_cache=use_cache),
        "transformers": hf_generate,
        "fused, one function": lambda use_cache: fused.generate(prompt, n_new, use_cache),
    }
    for name, run in contenders.items():
        same = all(torch.equal(run(use_cache), reference) for use_cache in (True, False))
        times = {True: [], False: []}
        for _ in range(rounds):  # alternate
            for use_cache in (True, False):
                times[use_cache].append(timed(run, 1, use_cache))
        cached, uncached = statistics.median(times[True]), statistics.median(times[False])
        print(f"   {name:20s} same tokens: {same}; cached {cached / n_new * 1e6:5.0f} us/token, "
              f"uncached {uncached / n_new * 1e6:5.0f} us/token, speed-up {uncached / cached:4.1f}x")


# One side of --against: run in a process whose tinyk is one revision's (PYTHONPATH), it prints
# each case's median seconds and its tokens, as JSON; only what both revisions have is used.
_SIDE = """
import json, statistics, sys, time
import torch
import tinyk
from tinyk import ModelConfig, Transformer, generate
from tinyk.generation import prefill
torch.set_grad_enabled(False)
torch.set_num_threads(1)  # no second thread spinning on a busy machine, counted in the CPU seconds
rounds = int(sys.argv[1])
configs = {"tiny": ModelConfig.tiny(vocab_size=64, max_seq_len=640),
           "mid": ModelConfig(dim=256, n_layers=4, n_heads=8, n_kv_heads=2, vocab_size=4096, max_seq_len=640)}
found = {"tinyk": tinyk.__file__}
for name, batch, padded, n_new, use_cache in json.loads(sys.argv[2]):
    torch.manual_seed(0)
    config = configs[name]
    model = Transformer(config).eval()
    prompt = torch.randint(1, config.vocab_size, (batch, 16), generator=torch.Generator().manual_seed(1))
    mask = None
    if padded:  # rows of 16, 12, 8, ... real tokens, left-padded
        mask = (torch.arange(16)[None] >= (torch.arange(batch)[:, None] * 4) % 16).long()
    if n_new:
        run = lambda: generate(model, prompt, mask, max_new_tokens=n_new, temperature=0, use_cache=use_cache)
    else:  # the prompt's one pass alone, 50 times: the logits of each row's last real token
        run = lambda: [prefill(model, prompt, mask) for _ in range(50)][-1].argmax(-1)
    tokens = run()
    times = []
    for _ in range(rounds):
        start = time.process_time()  # this process's CPU seconds: less disturbed by a busy machine
        run()
        times.append(time.process_time() - start)
    kind = "cached" if use_cache else "uncached"
    what = f"{n_new} new, {kind}" if n_new else "50 prefills"
    case = f"{name} B={batch}{' padded' if padded else ''} {what}"
    found[case] = (statistics.median(times), tokens.tolist())
print(json.dumps(found))
"""
_CASES = [("tiny", 8, True, 0, True), ("mid", 8, True, 0, True), ("tiny", 1, False, 256, True),
          ("tiny", 8, True, 256, True), ("mid", 1, False, 256, True),
          ("mid", 8, True, 128, True), ("tiny", 8, True, 64, False), ("mid", 8, True, 32, False)]
_QUICK_CASES = [("tiny", 8, True, 0, True), ("tiny", 1, False, 64, True), ("tiny", 8, True, 64, True)]


def against_revision(rev: str, rounds: int, turns: int, cases: list[tuple]) -> None:
    """Section 5: this checkout's generation against revision ``rev``'s (see the docstring)."""
    from revisions import checked_out  # benchmarks/revisions.py, beside this script

    root = Path(__file__).resolve().parent.parent
    print(f"5. this checkout against {rev}: greedy generate, {turns} turns each of {rounds} rounds")
    with checked_out(rev) as tree:
        sides: dict[str, list[dict]] = {"this": [], rev: []}
        for turn in range(turns):  # taking turns, each first every other time
            for side in (["this", rev] if turn % 2 == 0 else [rev, "this"]):
                path = str(root if side == "this" else tree)
                done = subprocess.run([sys.executable, "-c", _SIDE, str(rounds), json.dumps(cases)],
                                      capture_output=True, text=True, cwd=path,
                                      env={**os.environ, "PYTHONPATH": path})
                if done.returncode != 0:
                    raise SystemExit(f"{side}'s generation failed:\n{done.stderr[-3000:]}")
                sides[side].append(json.loads(done.stdout))
    for side, runs in sides.items():
        print(f"   {side}: tinyk from {runs[0]['tinyk']}")
    for case in [k for k in sides["this"][0] if k != "tinyk"]:
        ours = statistics.median(r[case][0] for r in sides["this"])
        theirs = statistics.median(r[case][0] for r in sides[rev])
        same = sides["this"][0][case][1] == sides[rev][0][case][1]
        print(f"   {case:32s} this {ours * 1e3:8.1f} ms, {rev} {theirs * 1e3:8.1f} ms (CPU), "
              f"ratio this/{rev} {ours / theirs:5.3f}; same tokens: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and lengths")
    parser.add_argument("--against", metavar="REV", help="also compare with generation at git revision REV")
    parser.add_argument("--only-against", action="store_true", help="with --against: only section 5")
    args = parser.parse_args()
    rounds = 1 if args.quick else 3
    torch.set_grad_enabled(False)
    print(f"threads={torch.get_num_threads()}, torch {torch.__version__}")
    if not (args.against and args.only_against):
        cache_speedups(rounds, [64, 256] if args.quick else [64, 256, 512])
        against_hf(rounds, 128 if args.quick else 256)
        cache_memory()
        tiny_batch_one(rounds, 256)
    if args.against:
        quick = args.quick
        against_revision(args.against, 3, 4, _QUICK_CASES if quick else _CASES)


if __name__ == "__main__":
    main()
