"""The rules a :class:`~tinyk.model.ModelConfig` must satisfy (course section 05.1), and those
of the model's ``logits_to_keep`` (05.6).

:func:`check_config` checks every size once, when a config is made; a rule that fails raises
``ValueError`` (``TypeError`` for a size that is not an int) naming the field, its value, the
rule and what to change. :func:`refuse_changes` makes assigning or deleting a field of the
frozen config say how to build a changed one instead. The model file keeps only the config
itself, so the learner meets RMSNorm right after it. :func:`check_logits_to_keep` refuses a
``logits_to_keep`` of none of its forms (:meth:`tinyk.model.Transformer.kept_positions`), and
:func:`keeps_every_position` says whether labels can be scored with it.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

import torch
from torch import Tensor

from tinyk.translations.package_catalogue import say

__all__ = ["check_config", "check_logits_to_keep", "keeps_every_position", "refuse_changes"]


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(say("ModelConfig.{name}={value!r}: must be an int", name=name, value=value))
    if value <= 0:
        raise ValueError(say("ModelConfig.{name}={value}: must be a positive integer", name=name,
                             value=value))


def _refuse_assignment(config: object, name: str, value: object) -> None:
    raise FrozenInstanceError(say(
        "ModelConfig.{name} cannot be assigned ({name}={value!r}): a config is frozen so that head_dim, "
        "n_rep and mlp_hidden_dim always match the fields they are derived from; build a new one with "
        "dataclasses.replace(config, {name}={value!r})", name=name, value=value))


def _refuse_deletion(config: object, name: str) -> None:
    raise FrozenInstanceError(say("ModelConfig.{name} cannot be deleted: a config is frozen", name=name))


def refuse_changes(cls: type) -> type:
    """A frozen dataclass's own ``__setattr__`` says only "cannot assign to field"; these say
    what to do instead. (A class body may not define ``__setattr__`` on a frozen dataclass,
    so they are put on the class as it is made.)"""
    cls.__setattr__ = _refuse_assignment  # type: ignore[method-assign,assignment]
    cls.__delattr__ = _refuse_deletion  # type: ignore[method-assign,assignment]
    return cls


def check_config(config: Any) -> None:
    """Check a config's fields against the decoder's rules (05.1), ``n_kv_heads`` already
    filled in; raise on the first that fails."""
    for name in ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                 "multiple_of", "max_seq_len"):
        _check_positive_int(name, getattr(config, name))
    if config.hidden_dim is not None:
        _check_positive_int("hidden_dim", config.hidden_dim)
    if config.dim % config.n_heads:
        raise ValueError(say(
            "ModelConfig.dim={dim} is not divisible by n_heads={n_heads}: every query head gets d_h = "
            "dim / n_heads features, so dim % n_heads must be 0 (it is {rest}); change dim or n_heads",
            dim=config.dim, n_heads=config.n_heads, rest=config.dim % config.n_heads))
    head_dim = config.dim // config.n_heads
    if head_dim % 2:
        raise ValueError(say(
            "ModelConfig.dim={dim} with n_heads={n_heads} gives head_dim={head_dim}, which is odd: RoPE "
            "rotates coordinates in pairs, so head_dim = dim / n_heads must be even; change dim or "
            "n_heads", dim=config.dim, n_heads=config.n_heads, head_dim=head_dim))
    if config.n_heads % config.n_kv_heads:
        raise ValueError(say(
            "ModelConfig.n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}: grouped-query "
            "attention gives each K/V head an equal group of query heads, so n_heads % n_kv_heads must "
            "be 0; choose n_kv_heads among the divisors of {n_heads}", n_kv_heads=config.n_kv_heads,
            n_heads=config.n_heads))
    if not isinstance(config.norm_eps, (int, float)) or not config.norm_eps > 0:
        raise ValueError(say("ModelConfig.norm_eps={value!r}: must be > 0 (it keeps RMSNorm from "
                             "dividing by zero on an all-zero vector)", value=config.norm_eps))
    if not isinstance(config.dropout, (int, float)) or not 0 <= config.dropout < 1:
        raise ValueError(say("ModelConfig.dropout={value!r}: must satisfy 0 <= dropout < 1 (a "
                             "probability of zeroing an activation)", value=config.dropout))
    if isinstance(config.pad_token_id, bool) or not isinstance(config.pad_token_id, int) \
            or not 0 <= config.pad_token_id < config.vocab_size:
        raise ValueError(say("ModelConfig.pad_token_id={value!r}: must be an id inside the vocabulary, "
                             "0 <= pad_token_id < vocab_size={vocab_size}", value=config.pad_token_id,
                             vocab_size=config.vocab_size))
    if not isinstance(config.rope_theta, (int, float)) or not config.rope_theta > 1:
        raise ValueError(say("ModelConfig.rope_theta={value!r}: must be > 1", value=config.rope_theta))


def check_logits_to_keep(logits_to_keep: int | Tensor, B: int, T: int, check_range: bool = True) -> None:
    """Refuse a ``logits_to_keep`` of none of its forms
    (:meth:`tinyk.model.Transformer.kept_positions`) for ``B`` rows of ``T`` positions, naming
    the value and the rule. ``check_range``: read the positions back to check that each is
    in ``-T..T-1`` (a host sync, skipped with ``check_ids=False``)."""
    keep = logits_to_keep
    if not isinstance(keep, Tensor):
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(say("logits_to_keep={value!r}: must be an int >= 0 (the last k positions, 0 "
                                 "for all) or a tensor of positions", value=keep))
        return
    if keep.dtype not in (torch.int64, torch.int32):
        raise ValueError(say("logits_to_keep holds {dtype} values: positions must be integers",
                             dtype=keep.dtype))
    if keep.ndim not in (1, 2) or (keep.ndim == 2 and keep.shape[0] != B):
        raise ValueError(say("logits_to_keep has shape {shape}; expected (k,), the same positions for "
                             "every row, or ({B}, k), positions row by row", shape=tuple(keep.shape), B=B))
    if check_range and keep.numel():
        lo, hi = (int(v) for v in torch.aminmax(keep))
        if lo < -T or hi >= T:
            raise ValueError(say("logits_to_keep holds positions in [{lo}, {hi}]; the input has {T} "
                                 "positions, so each must be in -{T}..{last}", lo=lo, hi=hi, T=T,
                                 last=T - 1))


def keeps_every_position(logits_to_keep: int | Tensor, T: int) -> bool:
    """Whether ``logits_to_keep`` keeps all ``T`` positions, in order (what labels need)."""
    if not isinstance(logits_to_keep, Tensor):
        return logits_to_keep == 0 or logits_to_keep >= T
    every = torch.arange(T, device=logits_to_keep.device)
    return logits_to_keep.shape[-1] == T and bool(((logits_to_keep % T) == every).all())
