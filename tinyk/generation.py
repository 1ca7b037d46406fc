"""Generation and the KV cache (course sections 05.3, 05.4, 05.6 and 05.9).

One rule everywhere: :func:`generate` returns **only the new tokens**, ``B × n_new``, never
the prompt. A row that emits EOS keeps that EOS and is filled with the pad id afterwards;
generation stops once every row is finished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import Tensor

from tinyk.model import ModelConfig, Transformer, check_token_ids, valid_tokens

__all__ = ["KVCache", "generate", "prefill", "expand_kv_heads", "kv_cache_bytes",
           "last_valid_index", "sample_next_token"]


class KVCache:
    """Keys and values of past tokens, stored **unexpanded**: ``B×T×H_kv×d_h`` per layer (05.4).

    Room for ``max_len`` tokens is allocated once; ``length`` is the one integer that
    drives where the next call writes (``length..length+T-1``, never restarting at 0) and
    how much attention reads back; without an attention mask it also gives the new tokens'
    RoPE rows (with one, each row's positions count its real tokens).
    Storing the ``H_kv`` heads (not the ``H_q`` expanded ones) is what makes GQA's saving
    real: see :func:`kv_cache_bytes` and :func:`expand_kv_heads`. The model reads it through
    :class:`tinyk.model.KVCacheProtocol` (``length``, ``update``, ``advance``).
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
    first = next(model.parameters())
    wide = Transformer(dataclasses.replace(cfg, n_kv_heads=cfg.n_heads)).to(device=first.device,
                                                                            dtype=first.dtype)
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

    Two steps: :func:`prefill` runs the prompt once and gives each row's next-token
    logits; the decode loop samples a token and feeds it back. ``use_cache=True`` keeps a
    :class:`KVCache`, so each decode step runs one token; the prompt plus
    ``max_new_tokens`` must then fit in ``max_seq_len`` (checked before any work).
    ``use_cache=False`` re-runs the whole context each step, cropped to its last
    ``max_seq_len`` tokens (positions then restart inside the window). The prompt's ids
    are checked once; the sampled ones are in the vocabulary by construction.
    """
    config = model.config
    B, T = input_ids.shape
    pad = config.pad_token_id if pad_token_id is None else pad_token_id
    _check_arguments(config, T, max_new_tokens, temperature, top_k, pad, use_cache)
    check_token_ids(input_ids, config.vocab_size)
    valid = (torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None
             else valid_tokens(attention_mask, B, T))
    mask = valid if not bool(valid.all()) else None  # B×T, only where there is padding
    if max_new_tokens == 0:
        return input_ids.new_empty(B, 0)
    was_training = model.training
    model.eval()
    try:
        cache = (KVCache(config, B, T + max_new_tokens, next(model.parameters()).dtype,
                         input_ids.device) if use_cache else None)
        logits = prefill(model, input_ids, mask, cache)  # B×V
        return _decode(model, logits, input_ids, mask, cache, max_new_tokens, eos_token_id, pad,
                       lambda step_logits: sample_next_token(step_logits, temperature, top_k, generator))
    finally:
        model.train(was_training)


def _decode(model: Transformer, logits: Tensor, ids: Tensor, mask: Tensor | None, cache: KVCache | None,
            max_new_tokens: int, eos_token_id: int | None, pad: int,
            sample: Callable[[Tensor], Tensor]) -> Tensor:
    """:func:`generate`'s decode loop: sample a token per row from ``logits`` (``B×V``), feed
    it back, until ``max_new_tokens`` or every row has emitted ``eos_token_id``."""
    new_tokens: list[Tensor] = []
    finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    while True:
        token = sample(logits)  # B
        token = torch.where(finished, torch.full_like(token, pad), token)
        new_tokens.append(token)
        if eos_token_id is not None:
            finished |= token == eos_token_id  # EOS is kept, then the row stops
        if len(new_tokens) == max_new_tokens or (eos_token_id is not None and bool(finished.all())):
            return torch.stack(new_tokens, dim=1)  # B×n_new
        if mask is not None:  # the new token is real
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        if cache is not None:  # the cache holds the past: run only the new token
            logits = model(token[:, None], mask, cache=cache, check_ids=False).logits[:, -1]
        else:  # no cache: run the whole context again
            ids = torch.cat([ids, token[:, None]], dim=1)
            logits = prefill(model, ids, mask)


def prefill(model: Transformer, input_ids: Tensor, mask: Tensor | None,
            cache: KVCache | None = None) -> Tensor:
    """Run a whole context at once: ``B×V`` logits at each row's last real token (05.6).

    ``mask``: ``B×T`` valid-token flags, or ``None`` without padding. With a ``cache``
    the context is its prompt, stored for the decode steps; without one it is cropped to
    its last ``max_seq_len`` tokens. Only the ``B`` rows of logits that generation reads
    are computed, not ``B×T×V``. The ids are not checked here (``generate`` does it once).
    """
    if cache is None:
        window = slice(-model.config.max_seq_len, None)
        input_ids, mask = input_ids[:, window], None if mask is None else mask[:, window]
    if mask is None:
        return model(input_ids, cache=cache, logits_to_keep=1, check_ids=False).logits[:, -1]
    last = last_valid_index(mask)[:, None]  # B×1: each row's last real token, wherever its padding is
    return model(input_ids, mask, cache=cache, logits_to_keep=last, check_ids=False).logits[:, -1]


def _check_arguments(config: ModelConfig, prompt_len: int, max_new_tokens: int,
                     temperature: float, top_k: int | None, pad: int, use_cache: bool) -> None:
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens}: must be >= 0")
    if temperature < 0:
        raise ValueError(f"temperature={temperature}: must be >= 0 (0 means greedy)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k}: must be >= 1 or None")
    if not 0 <= pad < config.vocab_size:
        raise ValueError(f"pad_token_id={pad}: finished rows are fed this id, so it must be "
                         f"in the vocabulary, 0..{config.vocab_size - 1}")
    if use_cache and prompt_len + max_new_tokens > config.max_seq_len:
        raise ValueError(
            f"prompt length {prompt_len} + max_new_tokens {max_new_tokens} > max_seq_len="
            f"{config.max_seq_len}: the cache (and RoPE tables) cannot hold that many "
            f"tokens; ask for fewer tokens or use use_cache=False, which crops the context"
        )
