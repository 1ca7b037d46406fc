"""Shared by the tests: a random model whose continuations depend on the whole prompt."""

from __future__ import annotations

import math

import torch

from tinyk import Transformer


def varied_weights(model: Transformer) -> Transformer:
    """Give the layers unit-variance weights (std 1/sqrt(fan_in)), in eval mode.

    With the default 0.02 init the embedding's identity path decides the next token and
    greedy text just repeats the prompt's last token; with these, attention and the MLP
    decide, so continuations differ by prompt. Seed before calling for reproducible weights.
    """
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2 and not name.startswith("tok_embeddings"):
                p.normal_(0, 1 / math.sqrt(p.shape[1]))
    return model.eval()
