"""The build track's part checks (:func:`tinyk.learner.part_checks.check_parts`, sections 05.2 to 05.6) name
the classic mistakes the notebooks' visible tests name: the wrong answers of
tests/exercise_cases, written as the parts, each fail the check with the hint for their
mistake, in English and in Chinese."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyk.learner.part_checks import check_parts
from tinyk.learner.part_compare import PartError
from tinyk.translations.package_catalogue import say

from .exercise_cases import ex_05_2, ex_05_3, ex_05_4, ex_05_5, ex_05_6, ex_05_10

# 05.5.3's residual sums halved (averaged), in both halves, the first or the second
HALVED = ("a residual sum halved, an average such as (x + attention(attention_norm(x))) / 2: a residual "
          "adds, with no division, h = x + attention(attention_norm(x)), then h + feed_forward(ffn_norm(h))")

# 05.6.2's positions that count the padding (the running count of ~valid): one of its wrong answers
_NOT_VALID = [case for case in ex_05_6.MISTAKES["ex_05_6_2_solution"]
              if case[1].endswith("(~valid).long().cumsum(-1)\n")]
assert len(_NOT_VALID) == 1

# (the exercise's wrong answers, mistake id (its first answer is the part), part, the hint)
CASES = [
    # 05.2.2, RMSNorm
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:variance", "RMSNorm",
     "x over its standard deviation (x.var or x.std): the variance takes the mean out first; "
     "r = sqrt(x.pow(2).mean(-1, keepdim=True) + eps) squares x itself"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:times-r", "RMSNorm",
     "x times r: divide by r, x / r, or multiply by torch.rsqrt(...)"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:weight-before-normalising", "RMSNorm",
     "the gains applied to x before normalising; normalise first, then multiply by the weight"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:weight-before-cast", "RMSNorm",
     "the weight multiplied before casting back; cast back to the input dtype, then multiply by the weight"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:no-keepdim", "RMSNorm",
     "the mean over the last axis keeps that axis (keepdim=True): …×1 broadcasts against …×d"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:not-mean-of-squares", "RMSNorm",
     "r is the root of the mean of the squares, sqrt(mean(x²) + eps), not of the mean of x or of |x|, the "
     "sum of the squares (over d or d - 1) or the variance"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:fixed-cast-dtype", "RMSNorm",
     "the normalised vector cast to float16 (.half()), a fixed dtype: cast it back to x.dtype, the input's"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:weight-no-grad", "RMSNorm",
     "the weight gets no gradient: multiply by self.weight itself, kept in the graph (no .detach(), .data or "
     "torch.no_grad() around it)"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:eps-ignored", "RMSNorm",
     "the eps argument ignored (eps = 1e-5 and 0.5 give the same output): add self.eps, the eps given to the "
     "constructor"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:downcasts-float64", "RMSNorm",
     "the norm computed in float32; compute in promote_types(x.dtype, float32), float64 here, never "
     "downcast"),
    (ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:detached", "RMSNorm",
     "1/r left out of the graph (.detach(), .item() or torch.no_grad() in forward); keep every step in the "
     "graph"),
    # 05.3.1, rope_tables
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:double-angle", "rope_tables",
     "twice the angle (2·t·ω_i); the angle at position t is t·ω_i, once"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:positive-exponent", "rope_tables",
     "a positive exponent, theta^(2i/d_h); ω_i = theta^(-2i/d_h) falls with i"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:unbracketed-exponent", "rope_tables",
     "ω_i = theta^(-2i) / d_h: the division by head_dim came after the power; bracket the exponent, "
     "theta ** (-(2i) / head_dim)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:exponent-over-d-h-minus-2", "rope_tables",
     "the exponent over d_h - 2; ω_i = theta^(-2i/d_h)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:degrees", "rope_tables",
     "the angles turned into degrees (times 180 / π); torch.cos and torch.sin take radians"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:integer-exponent", "rope_tables",
     "every pair turning by 1 radian per position: the exponent -2i/d_h came out 0; integer division (//) "
     "rounds it down, use / (a float)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:theta-ignored", "rope_tables",
     "the tables of theta = 10000 whatever theta is; use the theta argument"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:exponent-i-over-d-h", "rope_tables",
     "the exponent -i/d_h; ω_i = theta^(-2i/d_h)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:positions-from-1", "rope_tables",
     "the positions 1..end; row t is position t, counted from 0: torch.arange(end)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:cos-sin-swapped", "rope_tables",
     "cos and sin swapped; return (cos, sin) in that order"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:deg2rad", "rope_tables",
     "the angles are in radians already, as torch.cos takes them; no deg2rad (nor π / 180)"),
    (ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:columns-reversed", "rope_tables",
     "column i holds pair i's angle, in order (the columns came reversed)"),
    # 05.3.2, apply_rope
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:minus-forgotten", "apply_rope",
     "the minus of a cos - b sin left out: (a, b) -> (a cos - b sin, a sin + b cos)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:cos-in-both-terms", "apply_rope",
     "cos where sin belongs in a term: (a, b) -> (a cos - b sin, a sin + b cos)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:columns-reversed", "apply_rope",
     "the tables' columns reversed: pair i takes column i, in order"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:bfloat16-tables", "apply_rope",
     "the rotation rounded to bfloat16 along the way (the tables cast to x.dtype before it); rotate with the "
     "float32 tables and cast once at the end, .to(x.dtype)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:float64-in-float32", "apply_rope",
     "a rotation computed in float32: keep x's dtype (x.float() turns float64 into float32)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:one-input-unrotated", "apply_rope",
     "an input returned unrotated; rotate both q and k"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:double-angle", "apply_rope",
     "a turn by twice the angle; cos and sin already hold the angle t·ω_i, use them as they are"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:cat-write-back", "apply_rope",
     "the rotated pairs written back as halves with cat; interleave them again, "
     "torch.stack([a, b], -1).flatten(-2)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:halves-read-pairs-written", "apply_rope",
     "the pairs read as halves (x[..., :d_h/2] with x[..., d_h/2:], the half-split layout) and written back "
     "interleaved; read adjacent coordinates as the pairs too, x[..., 0::2] with x[..., 1::2]"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:sin-sign-swapped", "apply_rope",
     "a rotation the wrong way (the sign of sin swapped): (a, b) -> (a cos - b sin, a sin + b cos)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:per-sequence-tables-fail", "apply_rope",
     "a B×T×d_h/2 table has a batch axis first: line it up as B×T×1×d_h/2 (batch, position, head, pair)"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:cos-sin-swapped", "apply_rope",
     "cos and sin were swapped (s, c = cos, sin, or sin where cos goes): (a, b) -> (a cos - b sin, a sin + b "
     "cos), the tables in the order cos, sin"),
    (ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:first-sequence-rows", "apply_rope",
     "B×T×d_h/2 tables: sequence b takes its own rows cos[b], sin[b], not sequence 0's (cos[0]) for every "
     "sequence"),
    # 05.4.3, repeat_kv
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:copies-on-time-axis", "repeat_kv",
     "copies made along the time axis (dim=1): the heads are dim=2 of B×T×H_kv×d_h"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:copies-on-last-axis", "repeat_kv",
     "copies made along d_h (the last axis): the heads are dim=2 of B×T×H_kv×d_h"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:n-rep-as-heads", "repeat_kv",
     "n_rep is the number of copies of each K/V head, not the number of query heads"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:view-of-expanded", "repeat_kv",
     "an expanded tensor is not contiguous: use .reshape, not .view"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:expand-non-singleton", "repeat_kv",
     "expand grows only axes of size 1: add one for the copies, x[:, :, :, None, :], expand it, then "
     "reshape"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:reshape-heads-squared", "repeat_kv",
     "the reshape asked for another number of heads than the copies hold (H_kv², or a fixed number): the new "
     "head count is H_kv·n_rep, B×T×(H_kv·n_rep)×d_h"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:flattened", "repeat_kv",
     "repeat_interleave without dim= flattens x first: copy along the head axis, x.repeat_interleave(n_rep, "
     "dim=2)"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:heads-before-positions", "repeat_kv",
     "the heads before the positions (B×H×T×d_h): repeat_kv keeps x's order, B×T×H×d_h, with the heads on "
     "dim=2 (transpose back)"),
    # 05.4.4, gqa_attention
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:mask-head-axis-dropped", "gqa_attention",
     "use the given mask as it is; its head axis (dim=1, size 1) broadcasts over the H_q heads, and "
     "mask[:, 0] or mask.squeeze(1) drops it, so the batch axis meets the heads"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:q-k-swapped", "gqa_attention",
     "q and k swapped; the scores have one row per query, T×T_k, q times the transposed k; "
     "k @ q.transpose(-2, -1) is their transpose"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:v-not-copied", "gqa_attention",
     "k was copied for the groups and v was not: copy v the same way, v.repeat_interleave(n_rep, dim=1)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:k-not-copied", "gqa_attention",
     "v was copied for the groups and k was not, so k still has H_kv heads: copy k the same way, "
     "k.repeat_interleave(n_rep, dim=1)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:kv-not-copied", "gqa_attention",
     "neither k nor v was copied for the groups, so both still have H_kv heads: copy each n_rep = "
     "H_q // H_kv times, k.repeat_interleave(n_rep, dim=1) and v.repeat_interleave(n_rep, dim=1)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:mask-inverted", "gqa_attention",
     "an inverted mask: True = may attend, so fill the scores where the mask is False (~mask)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:kv-on-time-axis", "gqa_attention",
     "copy each K/V head n_rep = H_q // H_kv times along the head axis, dim=1 of B×H_kv×T_k×d_h (not the "
     "time axis, dim=2)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:causal-from-first-key", "gqa_attention",
     "a causal triangle aligned to the FIRST T keys; the queries are the LAST T keys: tril(T_k - T)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:average-on-masked-row", "gqa_attention",
     "a softmax over a row whose scores are all masked averages every value: give that row's weights 0"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:upper-triangle", "gqa_attention",
     "the upper triangle (triu): query t sees keys t..T_k - 1 instead of 0..t, tril(T_k - T)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:k-not-transposed", "gqa_attention",
     "the scores are q @ k.transpose(-2, -1), T×d_h times d_h×T_k"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:n-rep-inverted", "gqa_attention",
     "n_rep came out 0, so K and V were copied 0 times: copy each K/V head n_rep = H_q // H_kv times, "
     "q.shape[1] // k.shape[1] (n_rep = H_kv // H_q rounds to 0, and so does H_q // T_k, k.shape[2], when "
     "T_k > H_q)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:bool-mask-added", "gqa_attention",
     "the boolean mask added to the scores (True counts 1, False 0), as if it were an additive float mask: "
     "fill the scores where it is False, scores.masked_fill(~mask, ...)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:given-mask-ignored", "gqa_attention",
     "the given mask is ignored: when a mask is given, use it as it is (it already holds causality and "
     "padding)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:scale-from-t", "gqa_attention",
     "the scores scaled by 1/sqrt(T_k), the number of keys, or by 1/sqrt(T), q.shape[2], the number of "
     "queries T (the same number here): scale them by 1/sqrt(d_h), the head width, q.shape[-1]"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:dropout", "gqa_attention",
     "two calls on the same input gave different outputs: something random ran, such as dropout on the "
     "weights; attention here draws nothing at random"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:keys-tiled-values-grouped", "gqa_attention",
     "the keys tiled [0, 1, 0, 1] (repeat) and the values grouped: query head h reads K/V head h // n_rep "
     "for its keys too: copy k as you copied v, repeat_interleave(n_rep, dim=1)"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:heads-after-positions", "gqa_attention",
     "the output returned as B×T×H_q×d_h, the positions before the heads: return the heads first, "
     "B×H_q×T×d_h, as q has them"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:float-mask-inverted", "gqa_attention",
     "~ needs a bool tensor, and a float tensor came in: make the mask with dtype=torch.bool (or from a "
     "comparison), or convert it with .bool()"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:mask-truth-value", "gqa_attention",
     "a tensor was used as a truth value (if mask:, not mask, and, or); to ask whether an argument was "
     "given, write if mask is None:, and combine masks with & and |"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:scale-by-heads", "gqa_attention",
     "the scores scaled by 1/sqrt(H_q), the square root of the number of heads, q.shape[1] (or k.shape[1], "
     "H_kv, the same number here): scale them by 1/sqrt(d_h), the head width, q.shape[-1]"),
    # 05.5.2, SwiGLU
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:silu-after-product", "SwiGLU",
     "F.silu applied after the product"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:silu-both-branches", "SwiGLU",
     "F.silu on both branches; only the gate w1(x) goes through F.silu"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:weight-not-transposed", "SwiGLU",
     "an nn.Linear weight is out×in, x @ weight needs its transpose; call the layer, self.w1(x)"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:no-down-projection", "SwiGLU",
     "w2 (down) is never applied: the output has m features, w2 maps them back to d"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:silu-on-input", "SwiGLU",
     "F.silu on the input x: the gate is silu(w1(x)), not w1(silu(x))"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:silu-on-output", "SwiGLU",
     "F.silu on the output: w2(...) is returned as it is, the SiLU goes on the gate w1(x)"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:down-on-gate-only", "SwiGLU",
     "w2 maps the product back to d, w2(silu(w1(x)) * w3(x)); w2 applied to the gate alone gives d "
     "features, which do not multiply w3(x)'s m"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:mish", "SwiGLU",
     "F.mish instead of F.silu (Mish is x·tanh(softplus(x)); the gate is SiLU, x·sigmoid(x))"),
    # 05.5.3, decoder_block
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:norms-swapped", "decoder_block",
     "the norms are swapped: attention_norm goes with attention, ffn_norm with feed_forward"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:mlp-first", "decoder_block",
     "the MLP half before the attention half: the attention half comes first, then the MLP half from h"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:mlp-half-missing", "decoder_block",
     "the MLP half is missing: after h = x + attention(attention_norm(x)), return "
     "h + feed_forward(ffn_norm(h))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:attention-norm-missing", "decoder_block",
     "attention_norm is never called: the attention half is pre-norm, h = x + attention(attention_norm(x))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:norm-after-mlp", "decoder_block",
     "feed_forward reads h itself, the norm after it: the MLP half is pre-norm too, "
     "h + feed_forward(ffn_norm(h))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:x-in-place", "decoder_block",
     "decoder_block changed x in place: write h = x + ..., not x += ..."),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:no-residual", "decoder_block",
     "both residuals are missing: h = x + attention(attention_norm(x)), then y = h + "
     "feed_forward(ffn_norm(h))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:mlp-norm-missing", "decoder_block",
     "ffn_norm is never called: the MLP half is pre-norm too, y = h + feed_forward(ffn_norm(h))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:first-residual-missing", "decoder_block",
     "ffn_norm reads attention(attention_norm(x)) without x: the first half's residual is missing "
     "(x = attention(...) overwrote x, or h = attention(...) left x out), h = x + "
     "attention(attention_norm(x))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:normalised-copy-added", "decoder_block",
     "each sum adds a normalised copy (x = attention_norm(x), then x = x + attention(x), and the same with "
     "ffn_norm): the residuals carry x and h themselves, h = x + attention(attention_norm(x)), then "
     "h + feed_forward(ffn_norm(h))"),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:residual-averaged", "decoder_block",
     HALVED),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:scaled-after-softmax", "gqa_attention",
     "the weights (or the output, weights @ v) were divided by sqrt(d_h) once the softmax had run, so a "
     "query's weights sum to less than 1: the scale goes on the scores, before the softmax, softmax(q @ kᵀ"
     " / sqrt(d_h))"),
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:triangle-added-to-given-mask", "gqa_attention",
     "a triangle of your own added to the given mask (mask & tril()): use a given mask as it is, with no "
     "triangle of your own added to it (it already holds causality and padding)"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:extra-silu-on-output", "SwiGLU",
     "a second SiLU after w2: the gate silu(w1(x)) is right, but w2(...) is returned as it is, with no "
     "activation on the output"),
    # 05.6.2, token_positions
    (ex_05_6.MISTAKES["ex_05_6_2_solution"], "05.6.2:padding-at-minus-1", "token_positions",
     "the padding is at -1, and a negative position reads the tables from their end: raise it to 0"),
    (ex_05_6.MISTAKES["ex_05_6_2_solution"], "05.6.2:right-padding-at-0", "token_positions",
     "the padding set to 0: padding after the real tokens keeps the last real position, the running count "
     "minus 1 raised to 0"),
    (ex_05_6.MISTAKES["ex_05_6_2_solution"], "05.6.2:cumsum-over-batch", "token_positions",
     "the running count taken over the batch axis (cumsum(0)); count along each row, cumsum(-1)"),
    (_NOT_VALID, "05.6.2:padding-counted", "token_positions",
     "the padding counted (the running count of ~valid): count the real tokens, valid.long().cumsum(-1)"),
    (ex_05_6.MISTAKES["ex_05_6_2_solution"], "05.6.2:clamp-max", "token_positions",
     "clamp(max=0) caps every position at 0 and keeps the padding's -1: raise the -1 to 0, clamp(min=0)"),
    # 05.6.3, causal_padding_mask
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:padding-forgotten", "causal_padding_mask",
     "the padding is forgotten: a padding key is blocked for every query"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:padding-on-rows-too", "causal_padding_mask",
     "the padding applied to the queries (the rows) as well as the keys (the columns); block the padding "
     "keys only, valid[:, None, None, :]"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:or-not-and", "causal_padding_mask",
     "every key allowed: a key must be both causal AND real, causal & valid (not |)"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:valid-not-lined-up", "causal_padding_mask",
     "valid is B×T_k, line it up as B×1×1×T_k, valid[:, None, None, :], to combine it with the T×T_k "
     "triangle"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:no-head-axis", "causal_padding_mask",
     "no head axis: the mask is B×1×T×T_k, causal[None, None] & valid[:, None, None, :]"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:writes-into-valid", "causal_padding_mask",
     "build new tensors, valid[:, None, None, :], never valid.unsqueeze_(...), valid.fill_(...) or "
     "valid[...] = ...: the caller still needs valid"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:cached-padding-ignored", "causal_padding_mask",
     "the padding among the cached keys ignored (valid applied to the last T keys only): a padding key is "
     "blocked wherever it is, cached or new; combine the whole valid, valid[:, None, None, :]"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:float-0-1-mask", "causal_padding_mask",
     "a 0/1 float mask (a float triangle times valid): keep the triangle boolean (dtype=torch.bool) and "
     "combine with &, causal & valid"),
    (ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:causality-forgotten", "causal_padding_mask",
     "causality is forgotten: valid alone lets query i see the later keys too; combine it with the causal "
     "triangle, causal[None, None] & valid[:, None, None, :]"),
    # 05.6.4, shifted_loss
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:nll-on-probabilities", "shifted_loss",
     "probabilities given to F.nll_loss (softmax), which takes log-probabilities: log_softmax(-1) before "
     "F.nll_loss, or F.cross_entropy on the raw logits"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:shift-reversed", "shifted_loss",
     "the shift reversed: logits[:, 1:] against labels[:, :-1]; position t predicts the NEXT label, "
     "logits[:, :-1] against labels[:, 1:]"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:shifted-too-far", "shifted_loss",
     "the targets shifted by two: position t predicts labels[:, t + 1], logits[:, :-1] against "
     "labels[:, 1:]"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:mean-of-row-means", "shifted_loss",
     "the mean of each row's mean; the loss is one mean over the batch's counted targets"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:ignore-index-unused", "shifted_loss",
     "the targets equal to ignore_index are not counted: use the argument, not -100"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:ignored-as-class-0", "shifted_loss",
     "the ignored targets counted as class 0 (averaged over every position): a target equal to "
     "ignore_index adds no loss and is not counted; pass ignore_index to F.cross_entropy"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:view-of-slice", "shifted_loss",
     "a slice such as logits[:, :-1] is not contiguous, so .view fails on it: use .reshape, or "
     ".contiguous().view(...)"),
    (ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:targets-padded-with-0", "shifted_loss",
     "the targets labels[:, 1:] padded with 0, a real class, so the last position, which predicts nothing, "
     "is scored against class 0: cut the logits too, logits[:, :-1] against labels[:, 1:] (or pad with "
     "ignore_index)"),
]

# A mistake's later wrong answer, which check_parts names too: (answers, mistake id, which of its
# answers (0 = the first), part, the hint).
LATER_CASES = [
    # the scale put on the output instead of on the weights (the same numbers)
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:scaled-after-softmax", 1, "gqa_attention",
     "the weights (or the output, weights @ v) were divided by sqrt(d_h) once the softmax had run, so a "
     "query's weights sum to less than 1: the scale goes on the scores, before the softmax, softmax(q @ kᵀ"
     " / sqrt(d_h))"),
    # H_kv copies of each head reshaped to H_kv² heads: not a hard-coded size
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:copies-count-h-kv", 2, "repeat_kv",
     "the copies counted H_kv (x.shape[2]), not n_rep: 4 heads for n_rep = 1 and for n_rep = 3 from x's H_kv "
     "= 2, 9 from 3 heads; copy each head n_rep times, x[:, :, :, None, :].expand(B, T, H_kv, n_rep, d_h)"),
    # the causal triangle built as booleans and added to the scores when no mask is given
    (ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:bool-mask-added", 1, "gqa_attention",
     "the boolean mask added to the scores (True counts 1, False 0), as if it were an additive float mask: "
     "fill the scores where it is False, scores.masked_fill(~mask, ...)"),
    # the residual averaged in the first half only, then in the second only
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:residual-averaged", 1, "decoder_block",
     HALVED),
    (ex_05_5.MISTAKES["ex_05_5_3_solution"], "05.5.3:residual-averaged", 2, "decoder_block",
     HALVED),
]


# k.T on a 4-D tensor: named from the sizes that do not line up, which the message gives.
KT_HINT = ("k's axes came out of order: the batch axes of q @ k do not line up (H_q = {a} against T_k = "
           "{b}); swap its last two axes only, k.transpose(-2, -1) or k.mT (k.T on a 4-D tensor reverses all "
           "four, B×H×T_k×d_h -> d_h×T_k×H×B)")


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_k_dot_t_on_a_4d_tensor_is_named_not_a_hard_coded_size(monkeypatch, language):
    part = _part(ex_05_4.MISTAKES["ex_05_4_4_solution"], "05.4.4:k-dot-t", "gqa_attention")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(gqa_attention=part)
    assert caught.value.part == "gqa_attention"
    assert say(KT_HINT, a=4, b=6) in str(caught.value)
    assert say("the K/V heads were copied although H_q = H_kv here, so n_rep = H_q // H_kv = 1: a size is "
               "hard-coded; read n_rep from the shapes, q.shape[1] // k.shape[1]") not in str(caught.value)
    assert (say(KT_HINT, a=4, b=6) == KT_HINT.format(a=4, b=6)) == (language == "en")


# K/V copies that work only when the head axis has size 1, named as such, never as K or V left uncopied
ONE_HEAD_COPIES = [
    ("05.4.4:expand-non-singleton",
     "expand grows only axes of size 1, and the K/V head axis has H_kv: add one for the copies, "
     "k[:, :, None], expand it to B×H_kv×n_rep×T_k×d_h, then reshape it to B×H_q×T_k×d_h (or "
     "k.repeat_interleave(n_rep, dim=1))"),
    ("05.4.4:view-of-expanded", "an expanded tensor is not contiguous: use .reshape, not .view"),
]


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("mistake_id,hint", ONE_HEAD_COPIES, ids=[c[0] for c in ONE_HEAD_COPIES])
def test_copies_that_need_one_kv_head_are_not_told_k_or_v_was_left_uncopied(monkeypatch, language,
                                                                             mistake_id, hint):
    part = _part(ex_05_4.MISTAKES["ex_05_4_4_solution"], mistake_id, "gqa_attention")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(gqa_attention=part)
    assert caught.value.part == "gqa_attention" and say(hint) in str(caught.value)
    uncopied = [say("v was copied for the groups and k was not, so k still has H_kv heads: copy k the same "
                    "way, k.repeat_interleave(n_rep, dim=1)"),
                say("k was copied for the groups and v was not: copy v the same way, "
                    "v.repeat_interleave(n_rep, dim=1)"),
                say("neither k nor v was copied for the groups, so both still have H_kv heads: copy each "
                    "n_rep = H_q // H_kv times, k.repeat_interleave(n_rep, dim=1) and "
                    "v.repeat_interleave(n_rep, dim=1)")]
    assert len(uncopied) == 3 and not any(words in str(caught.value) for words in uncopied)
    assert (say(hint) == hint) == (language == "en")


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_h_kv_copies_with_a_right_reshape_are_named_by_the_heads_they_hold(monkeypatch, language):
    # H_kv copies of each head written with expand, then a right reshape to H_kv·n_rep heads: at n_rep = 1
    # the copies hold H_kv² = 4 heads where the reshape asks H_kv·n_rep = 2, never "another number of heads"
    part = _part(ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:copies-count-h-kv", "repeat_kv", 1)
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(repeat_kv=part)
    hint = say("the copies hold {held} heads, not H_kv·n_rep = {want}: make n_rep copies of each head, "
               "x[:, :, :, None, :].expand(B, T, H_kv, n_rep, d_h), then reshape to B×T×(H_kv·n_rep)×d_h",
               held=4, want=2)
    assert caught.value.part == "repeat_kv" and hint in str(caught.value)
    assert say("the reshape asked for another number of heads than the copies hold (H_kv², or a fixed "
               "number): the new head count is H_kv·n_rep, B×T×(H_kv·n_rep)×d_h") not in str(caught.value)
    assert hint.startswith("the copies hold 4 heads, not H_kv·n_rep = 2") == (language == "en")


def _part(cases: list[tuple[str, str]], mistake_id: str, name: str, nth: int = 0) -> object:
    source = [src for found, src in cases if found == mistake_id][nth]
    namespace: dict = {}
    exec(compile(source, "<wrong answer>", "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("cases,mistake_id,name,hint", CASES, ids=[c[1] for c in CASES])
def test_a_wrong_part_fails_the_check_with_its_mistakes_hint(monkeypatch, language, cases, mistake_id, name,
                                                             hint):
    part = _part(cases, mistake_id, name)
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts({name: part})
    assert caught.value.part == name
    assert say(hint) in str(caught.value)
    assert (say(hint) == hint) == (language == "en")  # the Chinese hint is another text


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("cases,mistake_id,nth,name,hint", LATER_CASES, ids=[c[1] for c in LATER_CASES])
def test_a_later_wrong_part_fails_the_check_with_its_mistakes_hint(monkeypatch, language, cases, mistake_id,
                                                                   nth, name, hint):
    part = _part(cases, mistake_id, name, nth)
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts({name: part})
    assert caught.value.part == name
    assert say(hint) in str(caught.value)
    assert (say(hint) == hint) == (language == "en")


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_a_partial_rotation_is_named_with_the_number_of_pairs_it_rotated(monkeypatch, language):
    part = _part(ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:partial-rotation", "apply_rope")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    hint = say("only the first {k} of the {pairs} pairs rotated, the others passed through as they were; "
               "rotate every pair, i = 0..d_h/2 - 1", k=2, pairs=4)
    with pytest.raises(PartError) as caught:
        check_parts(apply_rope=part)
    assert caught.value.part == "apply_rope" and hint in str(caught.value)
    assert hint.startswith("only the first 2 of the 4 pairs") == (language == "en")


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("mistake_id,head_dim", [("05.3.1:accepts-odd-head-dim", 7),
                                                 ("05.3.1:accepts-non-positive-head-dim", 0)])
def test_rope_tables_without_its_value_error_fails_the_check(monkeypatch, language, mistake_id, head_dim):
    # 05.3.1 asks for a ValueError when head_dim is odd or not positive, and so does the check
    part = _part(ex_05_3.MISTAKES["ex_05_3_1_solution"], mistake_id, "rope_tables")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(rope_tables=part)
    assert caught.value.part == "rope_tables"
    hint = say("head_dim={head_dim} {raised}: check head_dim first and raise ValueError when it is odd (no "
               "whole pairs) or not positive", head_dim=head_dim, raised=say("raised nothing"))
    assert hint in str(caught.value) and ("raise ValueError" in hint) == (language == "en")


def test_rope_tables_that_refuse_an_even_head_dim_fail_the_check(monkeypatch):
    # even and positive is the rule: a head_dim of 6, no multiple of 4, has three whole pairs
    part = _part(ex_05_3.MISTAKES["ex_05_3_1_solution"], "05.3.1:rejects-even-head-dim", "rope_tables")
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError, match="head_dim=6 raised ValueError: 6 is even and positive") as caught:
        check_parts(rope_tables=part)
    assert caught.value.part == "rope_tables"


_NORM_WITH = ex_05_2._NORM.replace("NORMALISED", "xf * torch.rsqrt(MEAN_SQUARE + self.eps)")
_MEAN_LAST = "xf.pow(2).mean(-1, keepdim=True)"
RMSNORM_CHECK_CASES = [
    # gains that start at zero: said as such, never blamed on eps (a zero output ignores every eps)
    (_NORM_WITH.replace("torch.ones(dim)", "torch.zeros(dim)").replace("MEAN_SQUARE", _MEAN_LAST),
     ["self.weight starts as zeros, not ones: nn.Parameter(torch.ones(dim))"]),
    (_NORM_WITH.replace("MEAN_SQUARE", "xf.pow(2).mean((-2, -1), keepdim=True)"),
     ["it matches the mean of the squares taken over the last two axes"]),
    (_NORM_WITH.replace("MEAN_SQUARE", "x.pow(2).mean(-1, keepdim=True).to(xf.dtype)"),
     ["it matches the squares taken in the input dtype, then cast up"]),
    # the diagnosis speaks of the input whose output the message shows
    (_NORM_WITH.replace("MEAN_SQUARE", "xf.pow(2).mean(1, keepdim=True)"),
     ["output on x of shape (2, 3, 16), torch.float32", "axis 1 of a (2, 3, 16) input"]),
]


@pytest.mark.parametrize("source,words", RMSNORM_CHECK_CASES)
def test_rmsnorm_check_names_the_mistake(monkeypatch, source, words):
    namespace: dict = {}
    exec(source, namespace)
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts(RMSNorm=namespace["RMSNorm"])
    assert caught.value.part == "RMSNorm"
    assert all(piece in str(caught.value) for piece in words), str(caught.value)
    assert "likely cause: the eps argument" not in str(caught.value)


ROPE_CHECK_CASES = [
    ("05.3.2:tables-as-angles", "it matches the tables taken as angles (torch.cos(cos))"),
    ("05.3.2:tiled-tables", "it matches the tables tiled (cos.repeat(..., 2)"),
    ("05.3.2:tables-ignored", "it matches angles of its own, positions 0..T-1 and theta = 10000"),
]


@pytest.mark.parametrize("mistake_id,words", ROPE_CHECK_CASES, ids=[c[0] for c in ROPE_CHECK_CASES])
def test_apply_rope_check_names_the_mistake(monkeypatch, mistake_id, words):
    part = _part(ex_05_3.MISTAKES["ex_05_3_2_solution"], mistake_id, "apply_rope")
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts(apply_rope=part)
    assert caught.value.part == "apply_rope" and words in str(caught.value), str(caught.value)


def test_apply_rope_that_reads_each_pair_swapped_is_named(monkeypatch):
    # b, a = x[..., 0::2], x[..., 1::2]: each pair read as (x1, x0), then rotated and written in order
    namespace: dict = {}
    exec(ex_05_3._ROTATE_ADJACENT.replace("a, b = x.reshape", "b, a = x.reshape")
         .replace("CROP(cos), CROP(sin)", "cos, sin"), namespace)
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError, match=r"it matches each pair read swapped, \(x1, x0\)"):
        check_parts(apply_rope=namespace["apply_rope"])


def test_a_table_cropped_to_fit_the_heads_fails_the_check(monkeypatch):
    # the check passes tables built from d = 32 to heads of width 8: an error, never a crop
    part = _part(ex_05_3.MISTAKES["ex_05_3_2_solution"], "05.3.2:crops-table", "apply_rope")
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError, match="a 5×16 table \\(built from d = 32\\) was used on heads of width 8 "
                                        "without an error: raise one, never crop the table to fit"):
        check_parts(apply_rope=part)


# Parts that keep float32 where the model runs in bfloat16: check_parts gives them bfloat16.
DTYPE_CASES = [
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:dtype-lost", "repeat_kv",
     "dtype torch.float32, expected torch.bfloat16"),
    (ex_05_4.MISTAKES["ex_05_4_3_solution"], "05.4.3:n-rep-one-dtype", "repeat_kv",
     "n_rep=1: dtype torch.float32, expected torch.bfloat16"),
    (ex_05_5.MISTAKES["ex_05_5_2_solution"], "05.5.2:casts-input-to-float32", "SwiGLU", "no .float()"),
]


@pytest.mark.parametrize("cases,mistake_id,name,words", DTYPE_CASES, ids=[c[1] for c in DTYPE_CASES])
def test_a_part_that_computes_in_float32_fails_the_check(monkeypatch, cases, mistake_id, name, words):
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts({name: _part(cases, mistake_id, name)})
    assert caught.value.part == name and words in str(caught.value)


def test_the_parts_check_gives_token_positions_a_right_padded_row():
    # the check's batch holds a right-padded row (where a padding at 0 is told apart): the right
    # answer, which keeps the last real position there, passes
    def token_positions(valid):
        return (valid.long().cumsum(-1) - 1).clamp(min=0)

    assert check_parts(token_positions=token_positions) == ["token_positions"]


def test_rmsnorm_writing_into_its_input_is_named_without_a_wrong_cause(monkeypatch):
    """x.to(float32) is x itself for a float32 input: ``*=`` on it writes into the caller's tensor.
    The check says so, and the diagnosis, run on a copy, adds no cause the part does not have."""
    part = _part(ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:in-place", "RMSNorm")
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts(RMSNorm=part)
    assert "RMSNorm changed its input x in place" in str(caught.value)
    assert "likely cause" not in str(caught.value)


def test_shifted_loss_writing_into_its_labels_is_named_without_a_wrong_cause(monkeypatch):
    """labels[:, 0] = ignore_index in the caller's labels: the check says so, and the diagnosis, run on
    copies, adds no cause (such as "the denominator counts labels[:, 0]", read from the labels the part
    had changed)."""
    def shifted_loss(logits, labels, ignore_index=-100):
        labels[:, 0] = ignore_index
        targets = labels[:, 1:].reshape(-1)
        total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets,
                                ignore_index=ignore_index, reduction="sum")
        return total / (targets != ignore_index).sum().clamp(min=1)

    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts(shifted_loss=shifted_loss)
    assert "shifted_loss changed its input labels in place" in str(caught.value)
    assert "likely cause" not in str(caught.value)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_a_python_float_zero_loss_is_named(monkeypatch, language):
    part = _part(ex_05_6.MISTAKES["ex_05_6_4_solution"], "05.6.4:float-zero", "shifted_loss")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(shifted_loss=part)
    template = ("nothing counted: the loss is still a 0-d tensor, torch.tensor(0.0) (training calls "
                ".backward() on it), not the Python {kind} {got!r}: divide the sum by the count raised to 1, "
                "count.clamp(min=1)")
    assert say(template, kind="float", got=0.0) in str(caught.value), str(caught.value)
    assert ("Python float 0.0" in str(caught.value)) == (language == "en")


def test_the_mask_check_accepts_the_learners_right_masks():
    """A single query answered with valid alone, and valid lined up before the triangle."""
    def one_query_alone(valid, query_len):
        T_k = valid.shape[1]
        if query_len == 1:
            return valid[:, None, None, :].clone()
        causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
        return causal[None, None] & valid[:, None, None, :]

    def keys_first(valid, query_len):
        T_k = valid.size(1)
        keys = valid.unsqueeze(1).unsqueeze(1)
        return keys & torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)

    assert check_parts(causal_padding_mask=one_query_alone) == ["causal_padding_mask"]
    assert check_parts(causal_padding_mask=keys_first) == ["causal_padding_mask"]


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_a_triangle_with_another_offset_is_named_by_the_offset_it_used(monkeypatch, language):
    """tril(1) with a cache, right without one: the check (seed 0: T_k = 7 keys, query_len = 3) names the
    offset 1 it used and the 4 it needs, not a triangle from the first key."""
    part = _part(ex_05_6.MISTAKES["ex_05_6_3_solution"], "05.6.3:shift-off", "causal_padding_mask")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts(causal_padding_mask=part)
    hint = say("a triangle shifted by {shift}, tril({shift}): the queries are the last T keys, so the "
               "diagonal offset must be T_k - T = {offset}, tril(T_k - T)", shift=1, offset=4)
    assert hint in str(caught.value)
    assert say("a causal triangle aligned to the FIRST query_len keys; the queries are the LAST query_len "
               "keys: tril(T_k - T)") not in str(caught.value)
    assert ("tril(1)" in hint) and (hint.startswith("a triangle") == (language == "en"))


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_an_in_place_step_that_breaks_backward_is_named_not_raised(monkeypatch, language):
    """05.2.2's own words in check_parts: xf.mul_ after pow saved xf is no raw autograd error."""
    part = _part(ex_05_2.MISTAKES["ex_05_2_2_solution"], "05.2.2:in-place-breaks-backward", "RMSNorm")
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts({"RMSNorm": part})
    assert caught.value.part == "RMSNorm"
    said = say("backward raised RuntimeError ({err}): an in-place write in forward (mul_, *=, xf[...] = ...) "
               "changed a tensor autograd saved for the gradient; autograd needs the values it saved: write "
               "xf * r instead of xf.mul_(r)", err="ERR").split("ERR")[1]
    assert said in str(caught.value)
    assert ("autograd needs the values it saved" in said) == (language == "en")


def test_the_branches_multiplied_with_at_and_a_transpose_are_named(monkeypatch):
    # w3(x) transposed to fit @: a B×T×T product reaches w2, which the check told from a Linear
    # weight left untransposed
    part = [src for found, src in ex_05_5.MISTAKES["ex_05_5_2_solution"] if found == "05.5.2:branches-matmul"]
    assert len(part) == 2 and ".transpose(-1, -2)" in part[1]
    namespace: dict = {}
    exec(compile(part[1], "<wrong answer>", "exec"), namespace)
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError, match="not with @ \\(a matrix product\\)"):
        check_parts(SwiGLU=namespace["SwiGLU"])


# --- the capstone: four RMSNorm and RoPE-table mistakes named as 05.2.2's and
# 05.3.1's tests name them (each wrong part of tests/exercise_cases/ex_05_10.py, every way of writing it), and
# never as the mistake it can be taken for: the hint of the other way, or the exponent -i/d_h
WEIGHT_CAST = ("the weight cast to the input dtype (self.weight.to(x.dtype) or type_as(x)), so the product "
               "stays in it: multiply by self.weight as it is, out of place, normalised.to(x.dtype) * "
               "self.weight, and torch promotes the product to float32")
ROUNDED = ("the product rounded to the input dtype: an in-place multiply (mul_, *=) keeps the dtype of the "
           "tensor it writes into, x's, and so does a cast after it (.to(x.dtype)); multiply out of place, "
           "normalised.to(x.dtype) * self.weight, and torch promotes the product to float32")
OVER_END = ("the exponent divided by end, the tables' length ({end} here), instead of head_dim ({head_dim}): "
            "ω_i = theta^(-2i/head_dim), whatever the length")
BY_D_H = "the exponent -i/d_h; ω_i = theta^(-2i/d_h)"
NAMED_LATE = {  # mistake id: (part, what the message holds, a hint it must not hold)
    "05.10.3:rmsnorm-divisor-first-axis": ("RMSNorm", [
        ("the sum of the squares divided by x.shape[0] = {n}, the first axis's length; divide by d = "
         "x.shape[-1] = {d} (or take .mean(-1))", {"n": 2, "d": 16})], None),
    "05.10.3:rmsnorm-weight-cast": ("RMSNorm", [(WEIGHT_CAST, {})], ROUNDED),
    "05.10.3:rmsnorm-product-in-input-dtype": ("RMSNorm", [(ROUNDED, {})], WEIGHT_CAST),
    "05.10.3:rope-double-angle": ("rope_tables", [
        ("twice the angle (2·t·ω_i); the angle at position t is t·ω_i, once", {})], BY_D_H),
    "05.10.3:rope-exponent-over-end": ("rope_tables", [(OVER_END, {"end": 16, "head_dim": 8})], BY_D_H),
}
LATE_CASES = [(mistake_id, source) for mistake_id, source in ex_05_10.MISTAKES["ex_05_10_3_solution"]
              if mistake_id in NAMED_LATE]


def test_the_late_capstone_cases_are_six():
    assert len(LATE_CASES) == 6 and {m for m, _ in LATE_CASES} == set(NAMED_LATE)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("mistake_id,source", LATE_CASES,
                         ids=[f"{m}-{n}" for n, (m, _) in enumerate(LATE_CASES)])
def test_the_capstones_rmsnorm_and_rope_table_mistakes_are_named(monkeypatch, language, mistake_id, source):
    name, said, never = NAMED_LATE[mistake_id]
    namespace: dict = {}
    exec(compile(source, "<wrong answer>", "exec"), namespace)
    monkeypatch.setenv("TINYK_LANGUAGE", language)
    with pytest.raises(PartError) as caught:
        check_parts({name: namespace[name]})
    assert caught.value.part == name
    assert all(say(text, **args) in str(caught.value) for text, args in said), str(caught.value)
    assert never is None or say(never) not in str(caught.value)
    assert "likely cause" not in str(caught.value)


@pytest.mark.parametrize("mistake_id,variant,words", [
    ("05.2.2:divisor-first-axis", 0,
     "the sum of the squares divided by x.shape[0] = 2, the first axis's length"),
    ("05.2.2:weight-cast-to-input-dtype", 0, WEIGHT_CAST),  # self.weight.to(x.dtype)
    ("05.2.2:product-in-input-dtype", 0, ROUNDED),  # (... * self.weight).to(x.dtype): the product cast
    ("05.2.2:product-in-input-dtype", 1, ROUNDED),  # .mul_(self.weight): the in-place multiply
], ids=["divisor-first-axis", "weight-cast", "product-cast", "in-place-multiply"])
def test_05_2_2s_own_wrong_answers_are_named_by_check_parts(monkeypatch, mistake_id, variant, words):
    sources = [src for found, src in ex_05_2.MISTAKES["ex_05_2_2_solution"] if found == mistake_id]
    namespace: dict = {}
    exec(compile(sources[variant], "<wrong answer>", "exec"), namespace)
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    with pytest.raises(PartError) as caught:
        check_parts(RMSNorm=namespace["RMSNorm"])
    assert words in str(caught.value), str(caught.value)


def _tables(omega_of: object, switch: object = None) -> object:
    """rope_tables from ``omega_of(head_dim, end, theta)`` (float64), made in float32; ``switch(end)``, when
    given, says for which lengths the right frequencies are used instead."""
    def rope_tables(head_dim, end, theta=10000.0):
        if head_dim <= 0 or head_dim % 2:
            raise ValueError(head_dim)
        i = torch.arange(head_dim // 2, dtype=torch.float64)
        omega = theta ** (-2 * i / head_dim) if switch is not None and switch(end) else omega_of(
            i, head_dim, end, theta)
        angles = torch.arange(end, dtype=torch.float64)[:, None] * omega[None, :]
        return angles.cos().float(), angles.sin().float()
    return rope_tables


def test_the_exponent_over_end_and_i_over_d_h_are_told_apart_where_they_differ(monkeypatch):
    """At end = 16 = 2·d_h, theta^(-2i/end) is theta^(-i/d_h): the tables of another length tell them apart,
    each named only where it fits, and neither when the other length fits neither."""
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    over_end = _tables(lambda i, d, end, theta: theta ** (-2 * i / end))
    by_d_h = _tables(lambda i, d, end, theta: theta ** (-i / d))
    only_at_16 = _tables(lambda i, d, end, theta: theta ** (-i / d), switch=lambda end: end != 16)
    said = {}
    for name, part in (("over_end", over_end), ("by_d_h", by_d_h), ("only_at_16", only_at_16)):
        with pytest.raises(PartError) as caught:
            check_parts(rope_tables=part)
        said[name] = str(caught.value)
    assert len(said) == 3
    assert OVER_END.format(end=16, head_dim=8) in said["over_end"] and BY_D_H not in said["over_end"]
    assert BY_D_H in said["by_d_h"] and "divided by end" not in said["by_d_h"]
    assert "end=16" in said["only_at_16"] and "it matches" not in said["only_at_16"]


def _complex_rope(xq, xk, cos, sin):
    """apply_rope with complex numbers (Meta's style): each adjacent pair a + bi times cos + i sin."""
    def rotate(x):
        wide = torch.promote_types(x.dtype, torch.float32)
        z = torch.view_as_complex(x.to(wide).reshape(*x.shape[:-1], -1, 2).contiguous())
        turn = torch.complex(cos.to(wide), sin.to(wide))
        turn = turn[None, :, None, :] if turn.ndim == 2 else turn[:, :, None, :]
        return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)
    return rotate(xq), rotate(xk)


class _SqrtDivideRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        normed = xf / torch.sqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def test_right_rmsnorms_tables_and_rotations_in_other_styles_still_pass():
    """A division by a square root, float64 tables made float32, complex numbers: each right, each passes,
    with 05.2.2's and 05.3.1's right answers in other styles."""
    right_tables = _tables(lambda i, d, end, theta: theta ** (-2 * i / d))
    assert check_parts(RMSNorm=_SqrtDivideRMSNorm, rope_tables=right_tables, apply_rope=_complex_rope) == [
        "RMSNorm", "rope_tables", "apply_rope"]
    sources = ex_05_2.RIGHT["ex_05_2_2_solution"] + ex_05_3.RIGHT["ex_05_3_1_solution"]
    names = ["RMSNorm"] * len(ex_05_2.RIGHT["ex_05_2_2_solution"]) + ["rope_tables"] * len(
        ex_05_3.RIGHT["ex_05_3_1_solution"])
    assert len(sources) == len(names) >= 4
    for source, name in zip(sources, names, strict=True):
        namespace: dict = {}
        exec(compile(source, "<right answer>", "exec"), namespace)
        assert check_parts({name: namespace[name]}) == [name]
