"""check_parts on the parts of 05.4 to 05.6 (tinyk.learner.part_checks): wrong answers that an output
alone once let through or misnamed, each named now, and right answers in another honest style accepted."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tinyk.learner.part_checks import check_parts
from tinyk.learner.part_compare import PartError


def right_attention(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)


def mask_skipped_for_one_query(q, k, v, mask=None):
    """Decoding's shortcut taken too far: one query may see every key, so any mask is dropped."""
    return right_attention(q, k, v, None if q.shape[2] == 1 else mask)


def scales_q_in_place(q, k, v, mask=None):
    """The scale written into the caller's q: the output is right, q is not."""
    q /= math.sqrt(q.shape[-1])
    return right_attention(q * math.sqrt(q.shape[-1]), k, v, mask)


def writes_into_valid(valid):
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)
    valid[:] = positions > 0
    return positions


def writes_into_labels(logits, labels, ignore_index=-100):
    keep = labels[:, 1:] != ignore_index
    labels[labels == ignore_index] = 0
    losses = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                             reduction="none") * keep.reshape(-1)
    return losses.sum() / keep.sum().clamp(min=1)


def float64_loss(logits, labels, ignore_index=-100):
    """A right answer computed in float64: the exercise asks for a 0-d float tensor."""
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).double(), targets,
                            ignore_index=ignore_index, reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)


class NamedGateUpDown(torch.nn.Module):
    """A right SwiGLU whose layers are named gate, up and down: tinyk's checkpoints load w1, w2, w3."""

    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate = torch.nn.Linear(dim, hidden_dim, bias=False)
        self.up = torch.nn.Linear(dim, hidden_dim, bias=False)
        self.down = torch.nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class BranchesMatmul(torch.nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = torch.nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) @ self.w3(x))


WRONG_LATE = [
    ("gqa_attention", mask_skipped_for_one_query,
     "the given mask was skipped for a single query: it still blocks the padding keys"),
    ("gqa_attention", scales_q_in_place, "gqa_attention changed its input q in place"),
    ("token_positions", writes_into_valid, "token_positions changed its input valid in place"),
    ("shifted_loss", writes_into_labels, "shifted_loss changed its input labels in place"),
    ("SwiGLU", NamedGateUpDown, "it has no attribute self.w1: name the three layers w1 (gate)"),
    ("SwiGLU", BranchesMatmul, "the two branches are multiplied entry by entry"),
]


@pytest.mark.parametrize("name,wrong,words", WRONG_LATE, ids=[w[1].__name__ for w in WRONG_LATE])
def test_each_wrong_part_is_named(name, wrong, words):
    with pytest.raises(PartError) as err:
        check_parts(**{name: wrong})
    assert words in str(err.value), str(err.value)
    assert err.value.part == name


def test_a_float64_loss_is_accepted():
    assert check_parts(shifted_loss=float64_loss) == ["shifted_loss"]


def test_the_right_attention_here_is_accepted():
    assert check_parts(gqa_attention=right_attention) == ["gqa_attention"]
