"""A synthetic text made locally, and its character tokenizer (course section 05.7).

Each line states that addition commutes, ``a+b=b+a``: ``3+4=4+3``, ``8+5=5+8``, with
``a`` and ``b`` drawn from a seeded generator. Its vocabulary has exactly 13 symbols,
``0-9 + = \\n``, and its structure has three levels a model can be measured against:

- symbol frequencies only: the unigram entropy (:func:`unigram_entropy`);
- the format (``+``, ``=``, ``+`` and the newline are certain, every digit a guess):
  ``4·ln 10 / 8`` nats per symbol;
- the rule (after ``=``, both digits are copies): only ``a`` and ``b`` are unpredictable,
  ``2·ln 10 / 8`` nats per symbol (:data:`ENTROPY_FLOOR`).
"""

from __future__ import annotations

import math
import random
from collections import Counter

import torch
from torch import Tensor

__all__ = ["VOCAB", "FORMAT_ONLY_LOSS", "ENTROPY_FLOOR", "synthetic_text", "CharTokenizer",
           "unigram_entropy", "is_commuted_line"]

VOCAB = "0123456789+=\n"
FORMAT_ONLY_LOSS = 4 * math.log(10) / 8  # knows where +, = and newlines go; guesses all 4 digits
ENTROPY_FLOOR = 2 * math.log(10) / 8  # also copies b and a after "=": only a, b are guesses


def synthetic_text(n_lines: int = 3000, seed: int = 0) -> str:
    """``n_lines`` lines ``a+b=b+a`` of single digits, from a seeded generator."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        a, b = rng.randrange(10), rng.randrange(10)
        lines.append(f"{a}+{b}={b}+{a}\n")
    return "".join(lines)


def is_commuted_line(line: str) -> bool:
    """True for a line of the text's form, ``a+b=b+a`` with single digits."""
    return (len(line) == 7 and line[1] == "+" and line[3] == "=" and line[5] == "+"
            and all(line[i].isdigit() for i in (0, 2, 4, 6)) and line[4] == line[2] and line[6] == line[0])


class CharTokenizer:
    """One id per character of ``vocab`` (default: the 13 symbols of :data:`VOCAB`)."""

    def __init__(self, vocab: str = VOCAB) -> None:
        self.vocab = vocab
        self.ids = {ch: i for i, ch in enumerate(vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> Tensor:
        unknown = sorted(set(text) - set(self.ids))
        if unknown:
            raise ValueError(f"characters {unknown!r} are not in the vocabulary {self.vocab!r}")
        return torch.tensor([self.ids[ch] for ch in text], dtype=torch.long)

    def decode(self, ids: Tensor | list[int]) -> str:
        return "".join(self.vocab[i] for i in (ids.tolist() if isinstance(ids, Tensor) else ids))


def unigram_entropy(text: str) -> float:
    """Entropy of the symbol frequencies, in nats per symbol: the loss of a model that
    predicts every position with the same symbol frequencies, ignoring context."""
    counts = Counter(text)
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values())
