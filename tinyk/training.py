"""A small, deterministic training loop for the course's CPU experiment (section 05.7).

Section 05.7 trains the tiny model on the synthetic commutativity text (:data:`COURSE_RUN`);
later sections reuse that trained model. Rather than train it again in every notebook, the
package ships its weights (``tinyk/weights/tiny_commutativity.pt``, written by
``python -m tinyk.training``): :func:`trained_course_model` loads them. Training again on the
same machine repeats every loss; on another CPU, sums rounded differently drift over 600 steps
to nearby weights, so a test checks that training again gives the same answers and a held-out
loss in the same range, not the same bits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import Tensor

from tinyk.data import CharTokenizer, synthetic_text
from tinyk.environment import book_run
from tinyk.model import ModelConfig, Transformer
from tinyk.translations.package_catalogue import say

__all__ = ["COURSE_RUN", "CHECKPOINT", "CHECKPOINT_EVERY", "random_batches", "train", "train_course_model",
           "trained_course_model"]

COURSE_RUN = {"steps": 600, "batch_size": 32, "block_size": 32, "lr": 5e-3, "seed": 0}  # 05.7
CHECKPOINT = Path(__file__).parent / "weights" / "tiny_commutativity.pt"
CHECKPOINT_EVERY = 100  # train(progress=True) prints the loss of every 100th step


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
    seeded generator. ``progress`` prints the loss every :data:`CHECKPOINT_EVERY` steps and, in
    Jupyter or Colab, shows a bar with the running loss (``tqdm``); the book's executions
    (:func:`tinyk.environment.book_run`) show no bar, whose redrawn lines a page would print one
    under another.
    """
    if block_size > model.config.max_seq_len:
        raise ValueError(f"block_size={block_size} exceeds the model's "
                         f"max_seq_len={model.config.max_seq_len}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    bar = _progress(steps) if progress and not book_run() else None
    for step in range(1, steps + 1):
        batch = random_batches(data, batch_size, block_size, generator)
        loss = model(batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if bar is not None:
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
            bar.update(1)
        if progress and step % CHECKPOINT_EVERY == 0:
            _checkpoint(bar, say("step {step} of {steps}: loss {loss}", step=step, steps=steps,
                                 loss=f"{losses[-1]:.3f}"))
    if bar is not None:
        bar.close()
    model.eval()
    return losses


def train_course_model(progress: bool = False) -> tuple[Transformer, list[float]]:
    """The 05.7 run: the tiny config initialised after ``torch.manual_seed(0)``, trained on
    :func:`tinyk.data.synthetic_text` with :data:`COURSE_RUN`. Returns the model and its losses."""
    data = CharTokenizer().encode(synthetic_text())
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny(vocab_size=CharTokenizer().vocab_size))
    return model, train(model, data, progress=progress, **COURSE_RUN)


def trained_course_model() -> Transformer:
    """The model of 05.7, with the weights of the run the package ships (nothing is trained)."""
    if not CHECKPOINT.exists():
        raise FileNotFoundError(f"{CHECKPOINT} is missing: write it with `python -m tinyk.training`")
    model = Transformer(ModelConfig.tiny(vocab_size=CharTokenizer().vocab_size))
    model.load_state_dict(torch.load(CHECKPOINT, map_location="cpu", weights_only=True))
    return model.eval()


def _checkpoint(bar, line: str) -> None:  # a line printed above the bar, if any
    if bar is None:
        print(line)
    else:
        bar.write(line, file=sys.stdout)


def _progress(total: int):  # a tqdm bar
    from tqdm import tqdm

    # The bar's label in the learner's language (a Chinese notebook's kernel reads Chinese), as the
    # Chinese pages show the book's run of it (locale/zh_CN/outputs.po).
    # An English label is followed by a space and the percentage padded to 3 places, tqdm's own
    # layout; a Chinese one ends in a full-width colon, which carries its own space.
    desc = say("training:")
    percent = " {percentage:3.0f}%" if desc.isascii() else "{percentage:.0f}%"
    layout = desc + percent + "|{bar}{r_bar}"
    return tqdm(total=total, file=sys.stdout, mininterval=2.0, ncols=80, bar_format=layout)


if __name__ == "__main__":
    trained, losses = train_course_model(progress=True)
    CHECKPOINT.parent.mkdir(exist_ok=True)
    torch.save(trained.state_dict(), CHECKPOINT)
    print(f"wrote {CHECKPOINT} (final loss {losses[-1]:.4f})")
