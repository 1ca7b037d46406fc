"""check_parts on the parts of 05.4 to 05.6 (tinyk.learner.part_checks): wrong answers that an output
alone once let through or misnamed, or named only by their shape or a raw error, each named now in the words
of the exercise's own test, and right answers in another honest style accepted."""

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


def attention_by(allowed_of, fill=None, log=False):
    """right_attention with one piece swapped: the causal triangle (``allowed_of(T, T_k)``), the value the
    blocked scores are filled with, or the log-softmax for the softmax."""
    def attention(q, k, v, mask=None):
        n_rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
        if mask is None:
            mask = allowed_of(q.shape[2], k.shape[2])
        scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        scores = scores * mask if fill == 0 else scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.log_softmax(-1) if log else scores.softmax(-1)
        return (weights.masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
    return attention


def diagonal_blocked(q, k, v, mask=None):
    return attention_by(lambda T, T_k: torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T - 1))(q, k, v, mask)


CAUSAL = lambda T, T_k: torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)
scores_times_mask = attention_by(CAUSAL, fill=0)
log_softmax_weights = attention_by(CAUSAL, log=True)


def swiglu(forward=None, width=None):
    """A SwiGLU class, right but for its width (``width(dim)`` typed in) or its ``forward``."""
    class Wrong(torch.nn.Module):
        def __init__(self, dim, hidden_dim):
            super().__init__()
            m = hidden_dim if width is None else width(dim)
            self.w1 = torch.nn.Linear(dim, m, bias=False)
            self.w2 = torch.nn.Linear(m, dim, bias=False)
            self.w3 = torch.nn.Linear(dim, m, bias=False)

        def forward(self, x):
            if forward is not None:
                return forward(self, x)
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
    return Wrong


def _three_d_only(self, x):
    B, T, d = x.shape
    x = x.reshape(B * T, d)
    return self.w2(F.silu(self.w1(x)) * self.w3(x)).reshape(B, T, d)


SwiGLUFourDim = swiglu(width=lambda dim: 4 * dim)
SwiGLUDropout = swiglu(forward=lambda self, x: F.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)), 0.1,
                                                         training=True))
SwiGLUThreeDOnly = swiglu(forward=_three_d_only)
SwiGLUFlattened = swiglu(forward=lambda self, x: self.w2(F.silu(self.w1(x.reshape(-1, x.shape[-1])))
                                                          * self.w3(x.reshape(-1, x.shape[-1]))))


def residual_once_at_the_end(x, attention, feed_forward, attention_norm, ffn_norm):
    h = attention(attention_norm(x))
    return x + feed_forward(ffn_norm(h))


def no_norms(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(x)
    return h + feed_forward(h)


def norm_on_the_output(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x))
    return ffn_norm(h + feed_forward(ffn_norm(h)))


def arange_minus_pads(valid):
    return (torch.arange(valid.shape[1]) - (~valid).sum(-1, keepdim=True)).clamp(min=0)


def mask_of(causal):
    """A causal_padding_mask with its own triangle ``causal(T, T_k)``, the padding of the keys it spans."""
    def causal_padding_mask(valid, query_len):
        triangle = causal(query_len, valid.shape[1])
        return triangle[None, None] & valid[:, None, None, -triangle.shape[1]:]
    return causal_padding_mask


mask_shift_flipped = mask_of(lambda T, T_k: torch.ones(T, T_k, dtype=torch.bool).tril(T - T_k))
mask_square = mask_of(lambda T, T_k: torch.ones(T, T, dtype=torch.bool).tril())
mask_query_len_ignored = mask_of(lambda T, T_k: torch.ones(T_k, T_k, dtype=torch.bool).tril())


def loss_unflattened(logits, labels, ignore_index=-100):
    targets = labels[:, 1:]
    total = F.cross_entropy(logits[:, :-1], targets, ignore_index=ignore_index, reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)


def loss_rolled(logits, labels, ignore_index=-100):
    """The labels shifted with roll(-1): the first label wraps round to the last position."""
    targets = labels.roll(-1, dims=1)
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                            ignore_index=ignore_index, reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)


def repeat_kv_view(x, n_rep):
    return x[:, :, :, None, :].expand(*x.shape[:3], n_rep, x.shape[3])


WRONG_LATE = [
    ("gqa_attention", diagonal_blocked, "it matches the diagonal is blocked (tril(T_k - T - 1))"),
    ("gqa_attention", scores_times_mask, "it matches the blocked scores set to 0 (scores * mask)"),
    ("gqa_attention", log_softmax_weights, "it matches log_softmax instead of softmax"),
    ("repeat_kv", repeat_kv_view, "it matches the expanded B×T×H_kv×n_rep×d_h view returned as it is"),
    ("SwiGLU", SwiGLUFourDim, "SwiGLU(8, 24) has m = 32 features: w1 and w3 map d = 8 -> m = 24, use the "
                              "hidden_dim argument"),
    ("SwiGLU", SwiGLUDropout, "two calls on the same input give different outputs"),
    ("SwiGLU", SwiGLUThreeDOnly, "an input of shape (5, 8) raised ValueError"),
    ("SwiGLU", SwiGLUFlattened, "it matches the output flattened to (B·T)×d"),
    ("decoder_block", residual_once_at_the_end, "it matches ffn_norm reads attention(attention_norm(x)) "
                                                "without x"),
    ("decoder_block", no_norms, "it matches neither norm is called"),
    ("decoder_block", norm_on_the_output, "it matches a norm applied to the block's output"),
    ("token_positions", arange_minus_pads, "it matches a position counts the real tokens before it along "
                                           "the row, it is not 0..T-1 shifted"),
    ("causal_padding_mask", mask_shift_flipped, "it matches the triangle shifted the wrong way (tril(T - "
                                                "T_k))"),
    ("causal_padding_mask", mask_square, "it matches a T×T triangle"),
    ("causal_padding_mask", mask_query_len_ignored, "it matches query_len ignored"),
    ("shifted_loss", loss_unflattened, "F.cross_entropy takes the classes on dim 1, so flatten"),
    ("shifted_loss", loss_rolled, "it matches labels.roll(-1) wraps labels[:, 0] round to the last position"),
    ("gqa_attention", mask_skipped_for_one_query,
     "the given mask was skipped for a single query: it still blocks the padding keys"),
    ("gqa_attention", scales_q_in_place, "gqa_attention changed its input q in place"),
    ("token_positions", writes_into_valid, "token_positions changed its input valid in place"),
    ("shifted_loss", writes_into_labels, "shifted_loss changed its input labels in place"),
    ("SwiGLU", NamedGateUpDown, "it has no attribute self.w1: name the three layers w1 (gate)"),
    ("SwiGLU", BranchesMatmul, "the two branches are multiplied entry by entry"),
]


for _name in ("scores_times_mask", "log_softmax_weights", "SwiGLUFourDim", "SwiGLUDropout",
              "SwiGLUThreeDOnly", "SwiGLUFlattened", "mask_shift_flipped", "mask_square",
              "mask_query_len_ignored"):
    globals()[_name].__name__ = _name  # the test's id


def test_a_float64_loss_is_accepted():
    assert check_parts(shifted_loss=float64_loss) == ["shifted_loss"]


def test_the_right_attention_here_is_accepted():
    assert check_parts(gqa_attention=right_attention) == ["gqa_attention"]


# Wrong parts of 05.4.4 and 05.6.2-05.6.4 (the weights returned, a T×T mask with cached keys, ...):
# check_parts names each in its visible test's words, never as generic, a raw error or another mistake.
def weights_returned(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(n_rep, 1)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores.softmax(-1).masked_fill(~mask, 0.0).to(q.dtype)


def softmax_over_heads(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)


square_mask = attention_by(lambda T, T_k: torch.ones(T, T, dtype=torch.bool).tril())
triangle_shift_flipped = attention_by(lambda T, T_k: torch.ones(T, T_k, dtype=torch.bool).tril(T - T_k))
one_key_too_many = attention_by(lambda T, T_k: torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T + 1))


def positions_per_row(valid):
    return valid.long().sum(-1)


def positions_slot_index(valid):
    return torch.where(valid, torch.arange(valid.shape[1]), 0)


def mask_triangle_alone(valid, query_len):  # the triangle, without the padding
    T_k = valid.shape[1]
    return torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)[None, None]


def mask_valid_inverted(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None] & ~valid[:, None, None, :]


def loss_logits_not_cut(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                           ignore_index=ignore_index)


def loss_both_cut_at_start(logits, labels, ignore_index=-100):
    targets = labels[:, 1:]
    total = F.cross_entropy(logits[:, 1:].reshape(-1, logits.shape[-1]), targets.reshape(-1),
                            ignore_index=ignore_index, reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)


for _name in ("square_mask", "triangle_shift_flipped", "one_key_too_many"):
    globals()[_name].__name__ = _name  # the test's id

TRIED = [
    ("gqa_attention", weights_returned,
     "it matches the attention weights returned (B×H_q×T×T_k): return them multiplied by v"),
    ("gqa_attention", square_mask, "the causal mask has one column per key, cached keys included, T×T_k"),
    ("gqa_attention", triangle_shift_flipped,
     "it matches the triangle shifted the wrong way (tril(T - T_k))"),
    ("gqa_attention", one_key_too_many, "it matches query t also sees key t + 1"),
    ("gqa_attention", softmax_over_heads, "it matches the softmax over the heads (dim=1)"),
    ("token_positions", positions_per_row, "it matches one number per row, as valid.sum(-1) gives"),
    ("token_positions", positions_slot_index,
     "it matches the slot's index (arange) kept for the real tokens"),
    ("causal_padding_mask", mask_triangle_alone,
     "it matches the causal triangle alone, the padding is forgotten"),
    ("causal_padding_mask", mask_valid_inverted, "it matches valid inverted (~valid)"),
    ("shifted_loss", loss_logits_not_cut,
     "raised ValueError: Expected input batch_size (10) to match target batch_size (8).; the logits and the "
     "targets do not pair up"),
    ("shifted_loss", loss_both_cut_at_start,
     "it matches logits[:, 1:] against labels[:, 1:]: each position is scored on its own token"),
]


# Wrong parts of 05.4-05.6, each named in the words of the exercise's visible test: never generic, a raw
# error or taken for a stub.
def repeat_kv_axis_after_d_h(x, n_rep):
    B, T, H, D = x.shape
    return x[..., None].expand(B, T, H, D, n_rep).reshape(B, T, H * n_rep, D)


class SwiGLUNoReturn(torch.nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = torch.nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        self.w2(F.silu(self.w1(x)) * self.w3(x))


def block_second_half_normalised(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x))
    h = ffn_norm(h)
    return h + feed_forward(h)


def block_in_float32(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x.float() + attention(attention_norm(x)).float()
    return h + feed_forward(ffn_norm(h.to(x.dtype))).float()


def block_attention_with_cos_sin(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x), None, None)
    return h + feed_forward(ffn_norm(h))


def positions_counting_padding(valid):
    return ((~valid).long().cumsum(-1) - 1).clamp(min=0)


def positions_abs(valid):
    return (valid.long().cumsum(-1) - 1).abs()


def positions_minus_valid(valid):
    return valid.long().cumsum(-1) - valid.long()


def positions_across_rows(valid):
    return (valid.long().flatten().cumsum(0) - 1).clamp(min=0).view(valid.shape)


def positions_bool_minus_one(valid):
    return (valid - 1).cumsum(-1).clamp(min=0)


def mask_batch_on_head_axis(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril(valid.shape[1] - query_len)
    return (causal[None] & valid[:, None, :])[None]


def mask_float_triangle(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1]).tril(valid.shape[1] - query_len)
    return causal[None, None] & valid[:, None, None, :]


def mask_float_inverted(valid, query_len):
    blocked = torch.ones(query_len, valid.shape[1]).triu(valid.shape[1] - query_len + 1)
    return ~blocked[None, None] & valid[:, None, None, :]


def _summed_loss(pairs, count_ignored=None):
    def shifted_loss(logits, labels, ignore_index=-100):
        lg, tg = pairs(logits, labels)
        total = F.cross_entropy(lg.reshape(-1, logits.shape[-1]), tg.reshape(-1), ignore_index=ignore_index,
                                reduction="sum")
        counted = tg != (ignore_index if count_ignored is None else count_ignored)
        return total / counted.sum().clamp(min=1)
    return shifted_loss


loss_count_with_minus_100 = _summed_loss(lambda logits, labels: (logits[:, :-1], labels[:, 1:]), -100)


def loss_nll_on_logits(logits, labels, ignore_index=-100):
    return F.nll_loss(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                      ignore_index=ignore_index)


WRONG_PASS = [
    ("repeat_kv", repeat_kv_axis_after_d_h, "it matches the new axis after d_h (x[..., None])"),
    ("SwiGLU", SwiGLUNoReturn, "got None: the part returned nothing"),
    ("decoder_block", block_second_half_normalised, "it matches y adds feed_forward's output to ffn_norm(h)"),
    ("decoder_block", block_in_float32, "tensor to one of that shape and dtype, not torch.float32"),
    ("decoder_block", block_attention_with_cos_sin, "the block's attention takes x alone"),
    ("token_positions", positions_counting_padding, "it matches the padding counted (the running count of "
                                                    "~valid)"),
    ("token_positions", positions_abs, "it matches abs() turns the padding's -1 into 1"),
    ("token_positions", positions_minus_valid, "it matches cumsum - valid moves the padding"),
    ("token_positions", positions_across_rows, "it matches the running count ran on from row to row"),
    ("token_positions", positions_bool_minus_one, "arithmetic on a bool tensor"),
    ("causal_padding_mask", mask_batch_on_head_axis, "it matches valid is B×T_k: put its batch axis first"),
    ("causal_padding_mask", mask_float_triangle, "& needs bool tensors"),
    ("causal_padding_mask", mask_float_inverted, "~ needs a bool tensor"),
    ("shifted_loss", loss_count_with_minus_100, "it matches the denominator counts the targets that are not "
                                                "-100"),
    ("shifted_loss", loss_nll_on_logits, "it matches F.nll_loss was given the raw logits"),
]
loss_count_with_minus_100.__name__ = "loss_count_with_minus_100"  # the test's id


WRONG = WRONG_LATE + TRIED + WRONG_PASS


@pytest.mark.parametrize("name,wrong,words", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_each_wrong_part_is_named(name, wrong, words):
    """Wrong parts of 05.4-05.6: each named in the words of its exercise's visible test, none taken
    for a stub."""
    with pytest.raises(PartError) as err:
        check_parts(**{name: wrong})
    assert words in str(err.value), str(err.value)
    assert "still a stub" not in str(err.value)
    assert err.value.part == name


def test_a_stub_is_still_a_stub_and_torchs_not_implemented_error_is_not():
    """The release's stub raises NotImplementedError from the answer's own frame, with no message: still a
    stub; torch's NotImplementedError for a dtype ("bitwise_and_cpu" not implemented for 'Float') is a
    written body with a slip."""
    from tinyk.learner.own_code import DtypeSlip, is_stub, watched

    def stub(valid, query_len):
        raise NotImplementedError()

    with pytest.raises(PartError, match="still a stub"):
        check_parts(causal_padding_mask=stub)
    with pytest.raises(NotImplementedError) as raised:
        watched("causal_padding_mask", stub)(torch.ones(1, 2, dtype=torch.bool), 2)
    assert is_stub(raised.value)
    with pytest.raises(NotImplementedError) as raised:
        torch.ones(2) & torch.ones(2, dtype=torch.bool)
    assert not is_stub(raised.value)
    with pytest.raises(DtypeSlip, match="& needs bool tensors"):
        watched("causal_padding_mask", mask_float_triangle)(torch.ones(1, 2, dtype=torch.bool), 2)
