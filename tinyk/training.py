"""A small, deterministic training loop for the course's CPU experiment (section 05.7)."""

from __future__ import annotations

import sys

import torch
from torch import Tensor

from tinyk.model import Transformer

__all__ = ["random_batches", "train"]


def random_batches(data: Tensor, batch_size: int, block_size: int, generator: torch.Generator) -> Tensor:
    """``batch_size`` windows of ``block_size`` tokens from a 1-D token tensor: ``B×T``."""
    if data.ndim != 1 or data.numel() <= block_size:
        raise ValueError(f"data must be a 1-D tensor longer than block_size={block_size}, "
                         f"got shape {tuple(data.shape)}")
    starts = torch.randint(0, data.numel() - block_size, (batch_size,), generator=generator)
    return torch.stack([data[s : s + block_size] for s in starts.tolist()])  # B×T


def train(model: Transformer, data: Tensor, *, steps: int, batch_size: int = 32, block_size: int = 32,
          lr: float = 3e-3, seed: int = 0, progress: bool = True) -> list[float]:
    """Train with AdamW on random windows of ``data``; return the loss of every step.

    Deterministic for a given seed and thread count: the batches come from their own
    seeded generator. ``progress`` shows a bar with the running loss (``tqdm`` if present).
    """
    if block_size > model.config.max_seq_len:
        raise ValueError(f"block_size={block_size} exceeds the model's "
                         f"max_seq_len={model.config.max_seq_len}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    bar = _progress(steps) if progress else None
    for _ in range(steps):
        batch = random_batches(data, batch_size, block_size, generator)
        loss = model(batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if bar is not None:
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
            bar.update(1)
    if bar is not None:
        bar.close()
    model.eval()
    return losses


def _progress(total: int):  # a tqdm bar
    from tqdm import tqdm

    return tqdm(total=total, desc="training", file=sys.stdout, mininterval=2.0, ncols=80)
