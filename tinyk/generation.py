"""Generation and the KV cache (course sections 05.3, 05.4, 05.6 and 05.9).

One rule everywhere: :func:`generate` returns **only the new tokens**, ``B × n_new``, never
the prompt. A row that emits EOS keeps that EOS and is filled with the pad id afterwards;
generation stops once every row is finished.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from tinyk.model import ModelConfig, Transformer, valid_tokens

__all__ = ["KVCache", "generate", "expand_kv_heads", "kv_cache_bytes", "last_valid_index",
           "sample_next_token"]


class KVCache:
    """Keys and values of past tokens, stored **unexpanded**: ``B×T×H_kv×d_h`` per layer (05.4).

    Room for ``max_len`` tokens is allocated once; ``length`` is the one integer that
    drives where the next call writes, how much attention reads back, and which rows of
    the RoPE tables the new tokens get (``length..length+T-1``, never restarting at 0).
    Storing the ``H_kv`` heads (not the ``H_q`` expanded ones) is what makes GQA's saving
    real: see :func:`kv_cache_bytes` and :func:`expand_kv_heads`.
    """

    def __init__(self, config: ModelConfig, batch_size: int, max_len: int | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        self.max_len = config.max_seq_len if max_len is None else max_len
        if not 0 < self.max_len <= config.max_seq_len:
            raise ValueError(f"KVCache max_len={self.max_len}: must be in 1..max_seq_len="
                             f"{config.max_seq_len} (the RoPE tables end there)")
        shape = (batch_size, self.max_len, config.n_kv_heads, config.head_dim)  # B×T×H_kv×d_h
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(config.n_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(config.n_layers)]
        self.length = 0

    def update(self, layer_id: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write this call's ``B×T×H_kv×d_h`` keys/values at ``length``; return all stored."""
        end = self.length + k.shape[1]
        if end > self.max_len:
            raise ValueError(f"KVCache is full: {self.length} stored + {k.shape[1]} new > "
                             f"max_len={self.max_len}")
        self.keys[layer_id][:, self.length : end] = k
        self.values[layer_id][:, self.length : end] = v
        return self.keys[layer_id][:, :end], self.values[layer_id][:, :end]  # B×T_k×H_kv×d_h

    def advance(self, n_tokens: int) -> None:
        """Called by the model once every layer has written this call's tokens."""
        self.length += n_tokens

    def reset(self) -> None:
        """Forget every stored token (the memory stays allocated for reuse)."""
        self.length = 0

    @property
    def nbytes(self) -> int:
        """Bytes actually held by the stored tensors."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)


def kv_cache_bytes(config: ModelConfig, n_tokens: int, batch_size: int = 1,
                   bytes_per_element: int = 4, expanded: bool = False) -> int:
    """``2·L·H_kv·d_h·T·B·bytes`` (or with ``H_q`` heads if K/V is expanded before caching)."""
    heads = config.n_heads if expanded else config.n_kv_heads
    return 2 * config.n_layers * heads * config.head_dim * n_tokens * batch_size * bytes_per_element


def expand_kv_heads(model: Transformer) -> Transformer:
    """The same function with K/V expanded into weights: ``H_kv = H_q`` (05.4).

    Each K/V head's projection rows are copied to every query head of its group, so the
    new model computes exactly the same logits, but its cache stores ``H_q`` heads: this
    is what "expanding before caching" costs.
    """
    cfg = model.config
    wide = Transformer(dataclasses.replace(cfg, n_kv_heads=cfg.n_heads)).to(
        next(model.parameters()).dtype)
    state = dict(model.state_dict())
    for i in range(cfg.n_layers):
        for name in ("wk", "wv"):
            key = f"layers.{i}.attention.{name}.weight"
            w = state[key].view(cfg.n_kv_heads, cfg.head_dim, cfg.dim)  # H_kv×d_h×d
            state[key] = w.repeat_interleave(cfg.n_rep, dim=0).reshape(-1, cfg.dim)  # H_q·d_h×d
    wide.load_state_dict(state)
    return wide


def last_valid_index(valid: Tensor) -> Tensor:
    """Index of each row's last real token in a ``B×T`` mask: ``[0, 0, 1, 1] -> 3``.

    Unlike ``valid.sum(1) - 1`` (right for right padding only: it gives 1 here), this
    holds for left padding, right padding or both. A row with no real token gives 0.
    """
    positions = torch.arange(valid.shape[-1], device=valid.device)
    return (valid.long() * positions).argmax(-1)


def sample_next_token(logits: Tensor, temperature: float, top_k: int | None,
                      generator: torch.Generator | None) -> Tensor:
    """``B×V`` logits -> ``B`` token ids: greedy when ``temperature == 0``."""
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits.float() / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model: Transformer,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Continue every row of ``input_ids`` (``B×T``); return the new tokens, ``B×n_new``.

    Prompts of different lengths are padded (left padding is the usual choice) and
    described by ``attention_mask`` (``B×T``, 1 = real token): each row then gets the RoPE
    positions it would have alone, and its first new token comes from its last **real**
    position. ``temperature=0`` is greedy; ``top_k`` keeps the ``k`` likeliest tokens.
    A row that emits ``eos_token_id`` keeps it and then receives ``pad_token_id``
    (default: the config's); generation stops when all rows are finished.

    ``use_cache=True`` keeps a :class:`KVCache`, so each step runs one token; the prompt
    plus ``max_new_tokens`` must then fit in ``max_seq_len`` (checked before any work).
    ``use_cache=False`` re-runs the whole context each step, cropped to its last
    ``max_seq_len`` tokens (positions then restart inside the window).
    """
    config = model.config
    B, T = input_ids.shape
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens}: must be >= 0")
    if temperature < 0:
        raise ValueError(f"temperature={temperature}: must be >= 0 (0 means greedy)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k}: must be >= 1 or None")
    if use_cache and T + max_new_tokens > config.max_seq_len:
        raise ValueError(
            f"prompt length {T} + max_new_tokens {max_new_tokens} > max_seq_len="
            f"{config.max_seq_len}: the cache (and RoPE tables) cannot hold that many "
            f"tokens; ask for fewer tokens or use use_cache=False, which crops the context"
        )
    pad = config.pad_token_id if pad_token_id is None else pad_token_id
    valid = (torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None
             else valid_tokens(attention_mask, B, T))
    padded = not bool(valid.all())
    first_index = last_valid_index(valid)  # B: where each row's first new token comes from

    was_training = model.training
    model.eval()
    device = input_ids.device
    cache = (KVCache(config, B, T + max_new_tokens, next(model.parameters()).dtype, device)
             if use_cache else None)
    ids, new_tokens = input_ids, []
    finished = torch.zeros(B, dtype=torch.bool, device=device)
    try:
        for step in range(max_new_tokens):
            if cache is not None:  # the whole prompt at step 0, then only the token just sampled
                logits = model(ids, valid if padded else None, cache=cache,
                               logits_to_keep=0 if step == 0 else 1).logits
            else:
                window = slice(-config.max_seq_len, None)
                mask = valid[:, window] if padded else None
                logits = model(ids[:, window], mask).logits
            if step == 0:
                if cache is None:
                    first_index = (first_index - (ids.shape[1] - logits.shape[1])).clamp(min=0)  # cropped
                logits = logits[torch.arange(B, device=device), first_index]  # B×V
            else:
                logits = logits[:, -1]  # B×V
            next_token = sample_next_token(logits, temperature, top_k, generator)  # B
            next_token = torch.where(finished, torch.full_like(next_token, pad), next_token)
            new_tokens.append(next_token)
            if eos_token_id is not None:
                finished |= next_token == eos_token_id  # EOS is appended, then the row stops
                if bool(finished.all()):
                    break
            # The cache needs only the new token; the full context is kept for recomputation,
            # the mask only where there is padding to describe.
            ids = next_token[:, None] if cache is not None else torch.cat([ids, next_token[:, None]], 1)
            if padded:
                valid = torch.cat([valid, torch.ones_like(valid[:, :1])], dim=1)
    finally:
        model.train(was_training)
    if not new_tokens:
        return input_ids.new_empty(B, 0)
    return torch.stack(new_tokens, dim=1)  # B×n_new

