"""The classic mistakes of sections 05.4-05.6, as the outputs they give on a part check's inputs.

Each function returns ``{hint: the wrong output}`` for one check of
:mod:`tinyk.learner.part_checks`; :func:`tinyk.learner.part_compare.compare` names the hint whose output a
differing part matches. The hints say what the notebooks' visible tests say (05.4.4, 05.5.2,
05.6.2-05.6.4), so that the 05.10 capstone, which checks the parts only, names the mistake too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.model import causal_lm_loss, causal_triangle, padding_to_attention
from tinyk.translations.package_catalogue import say

__all__ = ["attention_hints", "block_hints", "given_mask_hints", "loss_hints", "mask_hints",
           "positions_hints", "swiglu_hints"]


def _scores(q: Tensor, k: Tensor, allowed: Tensor, fill: float | None = None) -> Tensor:
    """The scaled scores q kᵀ / sqrt(d_h) in float32, the blocked ones (``allowed`` False) filled with
    ``fill`` (the lowest float when None)."""
    scores = q.float() @ k.float().transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.masked_fill(~allowed, torch.finfo(scores.dtype).min if fill is None else fill)


def _attend(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor, zeroed: bool = True,
            fill: float | None = None, log: bool = False) -> Tensor:
    """Attention in float32 of K/V already expanded to the query heads, with the boolean mask
    ``allowed``; a row with no allowed key gives zeros only when ``zeroed``. The blocked scores are
    filled with ``fill`` (the lowest float when None); ``log`` takes the log-softmax for the softmax."""
    scores = _scores(q, k, allowed, fill)
    weights = scores.log_softmax(-1) if log else scores.softmax(-1)
    if zeroed:
        weights = weights.masked_fill(~allowed, 0.0)
    return (weights @ v.float()).to(q.dtype)


def attention_hints(q: Tensor, kk: Tensor, vv: Tensor,
                    mask: Tensor | None) -> dict[str, Tensor | tuple[Tensor, ...]]:
    """05.4.4: an inverted mask, a causal triangle from the first key, fully masked rows not zeroed
    (``kk``, ``vv``: K/V expanded to the query heads), the diagonal blocked, the blocked scores set to 0,
    a log-softmax, the triangle shifted the wrong way or one key too far, the weights returned without
    ``@ v``, the softmax over the heads."""
    T, T_k = q.shape[-2], kk.shape[-2]
    allowed = causal_triangle(T, T_k, q.device) if mask is None else mask
    ones = torch.ones(T, T_k, dtype=torch.bool, device=q.device)
    hints = {say("an inverted mask: True = may attend, so fill the scores where the mask is False (~mask)"):
             _attend(q, kk, vv, ~allowed)}
    if mask is None and T > 1:
        hints[say("no causal mask: query t may see keys 0..t only")] = _attend(q, kk, vv, ones)
        hints[say("the upper triangle (triu): query t sees keys t..T_k - 1 instead of 0..t, "
                  "tril(T_k - T)")] = _attend(q, kk, vv, ones.triu(T_k - T))
        hints[say("the diagonal is blocked (tril(T_k - T - 1)): query i sees key i too, tril(T_k - T)")] = \
            _attend(q, kk, vv, ones.tril(T_k - T - 1))
    blocked_zero = say("the blocked scores set to 0 (scores * mask): a score of 0 still gets a weight; fill "
                       "them with a very negative number, scores.masked_fill(~mask, ...)")
    if not bool(allowed.all()):  # the blocked weights zeroed after the softmax, or not
        hints[blocked_zero] = tuple(_attend(q, kk, vv, allowed, zeroed=zeroed, fill=0.0)
                                    for zeroed in (True, False))
    hints[say("log_softmax instead of softmax: the weights are the softmax of the scores, each query's "
              "summing to 1")] = _attend(q, kk, vv, allowed, log=True)
    if mask is None and T < T_k:
        hints[say("a causal triangle aligned to the FIRST T keys; the queries are the LAST T keys: "
                  "tril(T_k - T)")] = _attend(q, kk, vv, ones.tril())
    if mask is not None and not bool(mask.any(-1).all()):
        hints[say("a softmax over a row whose scores are all masked averages every value: give that row's "
                  "weights 0")] = _attend(q, kk, vv, allowed, zeroed=False)
    if mask is None and T < T_k:
        hints[say("the triangle shifted the wrong way (tril(T - T_k)): the queries are the last T keys, so "
                  "query i sees keys 0..i + T_k - T, tril(T_k - T)")] = tuple(
            _attend(q, kk, vv, ones.tril(T - T_k), zeroed=zeroed) for zeroed in (True, False))
    if mask is None and T > 1:
        hints[say("query t also sees key t + 1, a later key (tril(T_k - T + 1)): query t sees keys 0..t, "
                  "tril(T_k - T)")] = _attend(q, kk, vv, ones.tril(T_k - T + 1))
    scores = _scores(q, kk, allowed)
    weights = scores.softmax(-1).masked_fill(~allowed, 0.0)
    hints[say("the attention weights returned (B×H_q×T×T_k): return them multiplied by v, weights @ v")] = \
        weights.to(q.dtype)
    if mask is not None and T < T_k:  # a top-left triangle of its own added to the given mask
        hints[say("a triangle of your own added to the given mask (mask & tril()): use a given mask as it "
                  "is, with no triangle of your own added to it (it already holds causality and "
                  "padding)")] = \
            _attend(q, kk, vv, mask & ones.tril())
    root = math.sqrt(q.shape[-1])  # unscaled scores, then the weights or the output divided by sqrt(d_h)
    hints[say("the weights (or the output, weights @ v) were divided by sqrt(d_h) once the softmax had run, "
              "so a query's weights sum to less than 1: the scale goes on the scores, before the softmax, "
              "softmax(q @ kᵀ / sqrt(d_h))")] = \
        (_attend(q.float() * root, kk, vv, allowed) / root).to(q.dtype)
    if q.shape[1] > 1:
        hints[say("the softmax over the heads (dim=1); it runs over the keys, dim=-1")] = \
            (scores.softmax(1).masked_fill(~allowed, 0.0) @ vv.float()).to(q.dtype)
    return hints


def given_mask_hints(q: Tensor, k: Tensor, v: Tensor, kk: Tensor, vv: Tensor,
                     mask: Tensor | None) -> dict[str, Tensor]:
    """05.4.4: the boolean mask (the given one, or the causal triangle when none is given) added to the
    scores as if it were an additive float one; a mask given: the mask ignored (causal only) too
    (``kk``, ``vv``: K/V expanded to the query heads)."""
    T, T_k = q.shape[-2], k.shape[-2]
    causal = F.scaled_dot_product_attention(q.float(), kk.float(), vv.float(),
                                            attn_mask=causal_triangle(T, T_k, q.device))
    allowed = causal_triangle(T, T_k, q.device) if mask is None else mask
    added = F.scaled_dot_product_attention(q.float(), kk.float(), vv.float(), attn_mask=allowed.float())
    bool_added = say("the boolean mask added to the scores (True counts 1, False 0), as if it were an "
                     "additive float mask: fill the scores where it is False, scores.masked_fill(~mask, ...)")
    if mask is None:
        return {bool_added: added.to(q.dtype)}
    ignored = say("the given mask is ignored: when a mask is given, use it as it is (it already holds "
                  "causality and padding)")
    if T == 1:  # one query: the causal triangle allows every key, only the mask blocks the padding
        ignored = say("the given mask was skipped for a single query: it still blocks the padding keys, use "
                      "it (only when mask is None may a single query see every key)")
    return {ignored: causal.to(q.dtype), bool_added: added.to(q.dtype)}


def swiglu_hints(ref: nn.Module, x: Tensor) -> dict[str, Tensor]:
    """05.5.2: the classic wrong activations and wirings of ``w2(silu(w1(x)) * w3(x))``."""
    w1, w2, w3 = ref.w1, ref.w2, ref.w3
    return {say("the gate on w3 instead of w1 (w1 is the gate, w3 the up branch)"): w2(F.silu(w3(x)) * w1(x)),
            say("F.silu applied after the product"): w2(F.silu(w1(x) * w3(x))),
            say("F.relu instead of F.silu"): w2(F.relu(w1(x)) * w3(x)),
            say("F.gelu instead of F.silu"): w2(F.gelu(w1(x)) * w3(x)),
            say("F.gelu(approximate='tanh') instead of F.silu"):
            w2(F.gelu(w1(x), approximate="tanh") * w3(x)),
            say("torch.sigmoid instead of F.silu"): w2(torch.sigmoid(w1(x)) * w3(x)),
            say("F.mish instead of F.silu (Mish is x·tanh(softplus(x)); the gate is SiLU, x·sigmoid(x))"):
            w2(F.mish(w1(x)) * w3(x)),
            say("no up branch: the product with w3(x) is missing"): w2(F.silu(w1(x))),
            say("F.silu on both branches; only the gate w1(x) goes through F.silu"):
            w2(F.silu(w1(x)) * F.silu(w3(x))),
            say("a sum instead of the product: silu(w1(x)) * w3(x)"): w2(F.silu(w1(x)) + w3(x)),
            say("a residual x + ...: the decoder block adds x, the SwiGLU returns w2(...) alone"):
            x + w2(F.silu(w1(x)) * w3(x)),
            say("w2 (down) is never applied: the output has m features, w2 maps them back to d"):
            F.silu(w1(x)) * w3(x),
            say("F.silu on the input x: the gate is silu(w1(x)), not w1(silu(x))"): w2(w1(F.silu(x)) * w3(x)),
            say("F.silu on the output: w2(...) is returned as it is, the SiLU goes on the gate w1(x)"):
            F.silu(w2(w1(x) * w3(x))),
            say("a second SiLU after w2: the gate silu(w1(x)) is right, but w2(...) is returned as it is, "
                "with no activation on the output"): F.silu(w2(F.silu(w1(x)) * w3(x)))}


Part = Callable[[Tensor], Tensor]


def block_hints(x: Tensor, attention: Part, feed_forward: Part, attention_norm: Part,
                ffn_norm: Part) -> dict[str, Tensor | tuple[Tensor, ...]]:
    """05.5.3: the residuals, norms and halves of a pre-norm decoder block wired wrongly, or missing
    (a tuple: the mistake's outputs, any of which names it)."""
    a = attention(attention_norm(x))
    h = x + a
    averaged = h / 2  # the first sum halved: an average, not a residual
    mlp_first = x + feed_forward(ffn_norm(x))
    swapped = x + attention(ffn_norm(x))
    unnormed = x + attention(x)
    return {say("both residuals are missing: h = x + attention(attention_norm(x)), then y = h + "
                "feed_forward(ffn_norm(h))"): feed_forward(ffn_norm(a)),
            say("ffn_norm is never called: the MLP half is pre-norm too, y = h + feed_forward(ffn_norm(h))"):
            h + feed_forward(h),
            say("h adds attention's output to the normalised copy attention_norm(x): the residual carries x "
                "itself, h = x + attention(attention_norm(x))"):
            attention_norm(x) + a + feed_forward(ffn_norm(attention_norm(x) + a)),
            say("ffn_norm reads attention(attention_norm(x)) without x: the first half's residual is "
                "missing (x = attention(...) overwrote x, or h = attention(...) left x out), h = x + "
                "attention(attention_norm(x))"):
            a + feed_forward(ffn_norm(a)),
            say("each sum adds a normalised copy (x = attention_norm(x), then x = x + attention(x), and "
                "the same with ffn_norm): the residuals carry x and h themselves, h = x + "
                "attention(attention_norm(x)), then h + feed_forward(ffn_norm(h))"):
            ffn_norm(attention_norm(x) + a) + feed_forward(ffn_norm(attention_norm(x) + a)),
            say("the second half's residual is missing: y = h + feed_forward(ffn_norm(h)), not "
                "feed_forward(...) alone"): feed_forward(ffn_norm(h)),
            say("attention_norm is used for both halves: the second half reads ffn_norm(h)"):
            h + feed_forward(attention_norm(h)),
            say("the norms are swapped: attention_norm goes with attention, ffn_norm with feed_forward"):
            swapped + feed_forward(attention_norm(swapped)),
            say("ffn_norm reads x: the second half starts from h = x + attention(attention_norm(x))"):
            h + feed_forward(ffn_norm(x)),
            say("the MLP half before the attention half: the attention half comes first, then the MLP half "
                "from h"):
            mlp_first + attention(attention_norm(mlp_first)),
            say("the MLP half is missing: after h = x + attention(attention_norm(x)), return "
                "h + feed_forward(ffn_norm(h))"): h,
            say("attention_norm is never called: the attention half is pre-norm, h = x + "
                "attention(attention_norm(x))"): unnormed + feed_forward(ffn_norm(unnormed)),
            say("feed_forward reads h itself, the norm after it: the MLP half is pre-norm too, "
                "h + feed_forward(ffn_norm(h))"): h + ffn_norm(feed_forward(h)),
            say("ffn_norm reads attention(attention_norm(x)) without x: the first half's residual is "
                "missing, h = x + attention(attention_norm(x))"): x + feed_forward(ffn_norm(a)),
            say("neither norm is called: the block is pre-norm, h = x + attention(attention_norm(x)), then "
                "h + feed_forward(ffn_norm(h))"): unnormed + feed_forward(unnormed),
            say("a norm applied to the block's output: return h + feed_forward(ffn_norm(h)) as it is (the "
                "model's last norm comes after the last block)"):
            ffn_norm(h + feed_forward(ffn_norm(h))),
            # both sums halved, the first only, the second only
            say("a residual sum halved, an average such as (x + attention(attention_norm(x))) / 2: a "
                "residual adds, with no division, h = x + attention(attention_norm(x)), then "
                "h + feed_forward(ffn_norm(h))"):
            ((averaged + feed_forward(ffn_norm(averaged))) / 2, averaged + feed_forward(ffn_norm(averaged)),
             (h + feed_forward(ffn_norm(h))) / 2)}


def positions_hints(valid: Tensor) -> dict[str, Tensor]:
    """05.6.2: positions that ignore the padding, counted from 1, -1 or 0 at the padding, counted
    over the batch, one count per row, or the slot's index kept for the real tokens."""
    running = valid.long().cumsum(-1)
    return {say("positions 0..T-1 whatever the padding; a row's positions count its real tokens only"):
            torch.arange(valid.shape[1]).expand_as(valid),
            say("positions from 1 (the running count without the -1); the first real token is at position 0"):
            running,
            say("the padding is at -1, and a negative position reads the tables from their end: raise it to "
                "0"): running - 1,
            say("the padding set to 0: padding after the real tokens keeps the last real position, the "
                "running count minus 1 raised to 0"): torch.where(valid, running - 1, 0),
            say("the running count taken over the batch axis (cumsum(0)); count along each row, cumsum(-1)"):
            (valid.long().cumsum(0) - 1).clamp(min=0),
            say("a position counts the real tokens before it along the row, it is not 0..T-1 shifted by the "
                "number of padding tokens"): (torch.arange(valid.shape[1]) - (~valid).sum(-1, keepdim=True))
            .clamp(min=0),
            say("the padding counted (the running count of ~valid): count the real tokens, "
                "valid.long().cumsum(-1)"): (((~valid).long().cumsum(-1) - 1).clamp(min=0),
                                             (~valid).long().cumsum(-1)),
            say("abs() turns the padding's -1 into 1: raise it to 0, clamp(min=0)"): (running - 1).abs(),
            say("clamp(max=0) caps every position at 0 and keeps the padding's -1: raise the -1 to 0, "
                "clamp(min=0)"): (running - 1).clamp(max=0),
            say("cumsum - valid moves the padding after the real tokens on by one: the running count minus "
                "1, raised to 0"): running - valid.long(),
            say("the running count ran on from row to row (a cumsum over the flattened batch): count along "
                "each row, cumsum(-1)"):
            (valid.long().flatten().cumsum(0) - 1).clamp(min=0).view(valid.shape),
            say("one number per row, as valid.sum(-1) gives: a running count, cumsum(-1), gives one per "
                "slot"): valid.long().sum(-1),
            say("the slot's index (arange) kept for the real tokens: a real token's position counts the real "
                "tokens before it, not the slots"): torch.where(valid, torch.arange(valid.shape[1]), 0)}


def mask_hints(valid: Tensor, query_len: int) -> dict[str, Tensor]:
    """05.6.3: the classic wrong triangles and wrong placements of the padding (or none, or ~valid)."""
    T_k = valid.shape[1]
    ones = torch.ones(query_len, T_k, dtype=torch.bool)
    causal = ones.tril(T_k - query_len)[None, None]
    keys, queries = valid[:, None, None, :], valid[:, None, -query_len:, None]
    new_keys = valid.clone()
    new_keys[:, :T_k - query_len] = True  # the padding of the cached keys ignored
    cached = {} if query_len == T_k else {
        say("the padding among the cached keys ignored (valid applied to the last T keys only): a padding "
            "key is blocked wherever it is, cached or new; combine the whole valid, valid[:, None, None, :]"):
        causal & new_keys[:, None, None, :]}
    # any other diagonal offset than T_k - T (those named above, 0, T_k - T - 1 and T - T_k, come first)
    shifted = {say("a triangle shifted by {shift}, tril({shift}): the queries are the last T keys, so the "
                   "diagonal offset must be T_k - T = {offset}, tril(T_k - T)",
                   shift=k, offset=T_k - query_len):
               ones.tril(k)[None, None] & keys for k in range(1 - query_len, T_k - 1) if k != T_k - query_len}
    return {say("a causal triangle aligned to the FIRST query_len keys; the queries are the LAST query_len "
                "keys: tril(T_k - T)"): ones.tril()[None, None] & keys,
            say("the padding is forgotten: a padding key is blocked for every query"):
            causal.expand(valid.shape[0], 1, query_len, T_k),
            say("the padding is applied to the queries (the rows) instead of the keys (the columns)"):
            causal & queries,
            say("the padding applied to the queries (the rows) as well as the keys (the columns); block the "
                "padding keys only, valid[:, None, None, :]"): causal & keys & queries,
            say("the mask is inverted: True = may attend, so return causal & valid, not its negation"):
            ~padding_to_attention(valid, query_len),
            say("the upper triangle (triu): query i sees the keys up to i, the lower triangle, tril"):
            ones.triu(T_k - query_len)[None, None] & keys,
            say("the diagonal is blocked (tril(T_k - T - 1)): query i sees key i too, tril(T_k - T)"):
            ones.tril(T_k - query_len - 1)[None, None] & keys,
            say("every key allowed: a key must be both causal AND real, causal & valid (not |)"):
            causal | keys,
            say("no head axis: the mask is B×1×T×T_k, causal[None, None] & valid[:, None, None, :]"):
            (causal & keys)[:, 0],
            say("the triangle shifted the wrong way (tril(T - T_k)): the queries are the last T keys, so "
                "query i sees keys 0..i + T_k - T, tril(T_k - T)"):
            ones.tril(query_len - T_k)[None, None] & keys,
            say("a T×T triangle: the mask has one column per key, cached keys included, T×T_k, "
                "tril(T_k - T)"):
            torch.ones(query_len, query_len, dtype=torch.bool).tril()[None, None] & keys[..., -query_len:],
            say("query_len ignored: the mask has one row per query, B×1×query_len×T_k, the triangle "
                "tril(T_k - query_len)"): torch.ones(T_k, T_k, dtype=torch.bool).tril()[None, None] & keys,
            say("valid is B×T_k: put its batch axis first, valid[:, None, None, :], so that it broadcasts "
                "over the queries"): padding_to_attention(valid, query_len).transpose(0, 1),
            say("the causal triangle alone, the padding is forgotten: combine it with valid, "
                "causal[None, None] & valid[:, None, None, :], one mask per row"): causal,
            say("valid inverted (~valid): True in valid marks a real token, the keys that may be seen"):
            causal & ~keys,
            say("causality is forgotten: valid alone lets query i see the later keys too; combine it with "
                "the causal triangle, causal[None, None] & valid[:, None, None, :]"):
            keys.expand(valid.shape[0], 1, query_len, T_k), **cached, **shifted}


def loss_hints(logits: Tensor, labels: Tensor) -> dict[str, Tensor]:
    """05.6.4 (targets ignored at -100): a wrong shift (reversed, by two, rolled, or both cut at the
    start), a softmax first, the mean of row means, the ignored targets counted as class 0."""
    V = logits.shape[-1]
    each = F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1),
                           reduction="none").view(labels.shape[0], -1)
    counted = labels[:, 1:] != -100
    by_row = (each.sum(1) / counted.sum(1).clamp(min=1)).mean()
    as_class_0 = labels[:, 1:].clamp(min=0).reshape(-1)  # -100 -> 0
    return {say("the unshifted loss; position t predicts labels[:, t + 1]"):
            F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1)),
            say("the shift reversed: logits[:, 1:] against labels[:, :-1]; position t predicts the NEXT "
                "label, logits[:, :-1] against labels[:, 1:]"):
            F.cross_entropy(logits[:, 1:].reshape(-1, V), labels[:, :-1].reshape(-1)),
            say("a softmax before F.cross_entropy, which takes the raw logits (it applies the log-softmax "
                "itself)"): causal_lm_loss(logits.softmax(-1), labels),
            say("probabilities given to F.nll_loss (softmax), which takes log-probabilities: log_softmax(-1) "
                "before F.nll_loss, or F.cross_entropy on the raw logits"):
            F.nll_loss(logits[:, :-1].softmax(-1).reshape(-1, V), labels[:, 1:].reshape(-1)),
            say("the mean of each row's mean; the loss is one mean over the batch's counted targets"): by_row,
            say("the targets shifted by two: position t predicts labels[:, t + 1], logits[:, :-1] against "
                "labels[:, 1:]"): F.cross_entropy(logits[:, :-2].reshape(-1, V), labels[:, 2:].reshape(-1)),
            say("the ignored targets counted as class 0 (averaged over every position): a target equal to "
                "ignore_index adds no loss and is not counted; pass ignore_index to F.cross_entropy"):
            F.cross_entropy(logits[:, :-1].reshape(-1, V), as_class_0),
            say("the ignored targets counted as class 0 (their loss added to the sum): a target equal to "
                "ignore_index adds no loss; pass ignore_index to F.cross_entropy"):
            F.cross_entropy(logits[:, :-1].reshape(-1, V), as_class_0, reduction="sum") / counted.sum(),
            say("labels.roll(-1) wraps labels[:, 0] round to the last position, which predicts nothing: drop "
                "that position, logits[:, :-1] against labels[:, 1:]"):
            F.cross_entropy(logits.reshape(-1, V), labels.roll(-1, 1).reshape(-1)),
            say("the targets labels[:, 1:] padded with 0, a real class, so the last position, which "
                "predicts nothing, is scored against class 0: cut the logits too, logits[:, :-1] against "
                "labels[:, 1:] (or pad with ignore_index)"):
            F.cross_entropy(logits.reshape(-1, V), F.pad(labels[:, 1:], (0, 1)).reshape(-1)),
            say("logits[:, 1:] against labels[:, 1:]: each position is scored on its own token, not the "
                "next; the logits lose their last position, logits[:, :-1]"):
            F.cross_entropy(logits[:, 1:].reshape(-1, V), labels[:, 1:].reshape(-1)),
            say("F.nll_loss was given the raw logits: it takes log-probabilities, F.cross_entropy takes the "
                "logits"): F.nll_loss(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))}
