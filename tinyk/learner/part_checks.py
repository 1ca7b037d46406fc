"""Each of the learner's parts checked alone against ``tinyk`` (the build track of sections
05.2 to 05.6; :func:`check_parts`).

Each part gets small random inputs (several shapes, float32 and bfloat16, GQA ratios 1, 2
and 4, padded batches), its output is compared with ``tinyk``'s, and the first difference
is named, with a hint when the difference is a classic mistake (how a part is run and
compared, and :class:`PartError`: :mod:`tinyk.learner.part_compare`), in the learner's language.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.interop.hf import apply_rotary_emb_half
from tinyk.learner.own_code import trusted
from tinyk.learner.part_compare import (
    PART_NAMES,
    PartError,
    as_tensor,
    call_part,
    compare,
    diagnosed,
    reject_unknown,
)
from tinyk.learner.part_hints import (
    attention_hints,
    block_hints,
    given_mask_hints,
    loss_hints,
    mask_hints,
    positions_hints,
    swiglu_hints,
)
from tinyk.model import (
    MLP,
    RMSNorm,
    apply_rotary_emb,
    causal_lm_loss,
    causal_triangle,
    padding_to_attention,
    precompute_freqs_cis,
    repeat_kv,
    token_positions,
)
from tinyk.translations.package_catalogue import say

__all__ = ["check_kind", "check_parts", "reference_decoder_block", "reference_gqa_attention",
           "reference_token_positions"]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)

_CLASSES = ("RMSNorm", "SwiGLU")


#: ``B×T_k`` bool -> ``B×T_k`` long, real tokens counted from 0: the model's own
#: :func:`tinyk.model.token_positions` (05.6).
reference_token_positions = token_positions


def reference_gqa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
    """``gqa_attention`` as ``tinyk`` computes it (05.4): PyTorch's fused attention with
    ``enable_gqa``, causal when no mask is given (the queries being the last keys)."""
    T, T_k = q.shape[-2], k.shape[-2]
    causal = mask is None and T > 1
    if mask is None and T != T_k and T > 1:  # queries are the last T keys: tril(T_k - T)
        mask, causal = causal_triangle(T, T_k, q.device), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                          enable_gqa=q.shape[1] != k.shape[1])


def reference_decoder_block(x: Tensor, attention: Callable[[Tensor], Tensor],
                            feed_forward: Callable[[Tensor], Tensor],
                            attention_norm: Callable[[Tensor], Tensor],
                            ffn_norm: Callable[[Tensor], Tensor]) -> Tensor:
    """``decoder_block`` as :class:`tinyk.DecoderLayer` runs it (05.5): pre-norm, two residual sums."""
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))


def _normalised(x: Tensor) -> Tensor:
    """``x`` over the root mean square of its last axis, in float32 (eps 1e-5, no gains)."""
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)


def _call_broadcasting(name: str, fn: Callable[..., Any], advice: str | Callable[[str], str | None],
                       *args: Any) -> Any:
    """:func:`call_part`, with ``advice`` added when the part failed on shapes that do not
    broadcast (a ``RuntimeError``): which axis to keep or add. ``advice`` may be a function of the
    error's text, giving the advice or None (the error as it is)."""
    try:
        return call_part(name, fn, *args)
    except PartError as err:
        # a ValueError only where the advice reads the error (F.cross_entropy's batch sizes, 05.6.4)
        if isinstance(err.__cause__, RuntimeError) or (callable(advice) and isinstance(
                err.__cause__, ValueError)):
            said = advice(str(err.__cause__)) if callable(advice) else advice
            if said is None:
                raise
            raise PartError(name, say("{detail}; {advice}", detail=err.detail, advice=said)) from None
        raise


def _attention_advice(grouped: bool, cached: bool = False, n_kv: int = 1,
                      T_k: int = 0, masked: bool = False) -> Callable[[str], str | None]:
    """05.4.4's advice for a ``RuntimeError``: k's axes out of order (``k.T`` on a 4-D tensor: q @ k's
    batch axes meet T_k), k not transposed, n_rep = H_kv // H_q (empty K/V), a T×T mask (with cached
    keys, T < T_k: the scores' last axis is T_k), a given B×1×T×T_k mask with its head axis dropped
    (its batch axis meets the heads; the unmasked calls before it passed), or the K/V heads copied
    along another axis (fewer K/V heads than query heads) or although there are as many (a multiple
    of H_kv heads)."""
    def advice(error: str) -> str | None:
        if "expanded size" in error:
            return say("expand grows only axes of size 1, and the K/V head axis has H_kv: add one for the "
                       "copies, k[:, :, None], expand it to B×H_kv×n_rep×T_k×d_h, then reshape it to "
                       "B×H_q×T_k×d_h (or k.repeat_interleave(n_rep, dim=1))")
        if "view size" in error:
            return say("an expanded tensor is not contiguous: use .reshape, not .view")
        if "is invalid for input of size" in error:
            return say("a reshape asked for another number of heads than the copies hold: H_kv heads "
                       "copied n_rep times are H_kv·n_rep = H_q heads, B×H_q×T_k×d_h; read the sizes from "
                       "the shapes")
        sizes = re.search(r"tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
                          r"dimension 1", error)
        if sizes and int(sizes.group(2)) == T_k and T_k % n_kv:
            return say("k's axes came out of order: the batch axes of q @ k do not line up (H_q = {a} "
                       "against T_k = {b}); swap its last two axes only, k.transpose(-2, -1) or k.mT (k.T "
                       "on a 4-D tensor reverses all four, B×H×T_k×d_h -> d_h×T_k×H×B)", a=sizes.group(1),
                       b=sizes.group(2))
        if "batch2" in error or "cannot be multiplied" in error:
            return say("the scores are q @ k.transpose(-2, -1), T×d_h times d_h×T_k")
        if "size of tensor b (0)" in error:
            return say("n_rep came out 0, so K and V were copied 0 times: copy each K/V head n_rep = "
                       "H_q // H_kv times, q.shape[1] // k.shape[1] (n_rep = H_kv // H_q rounds to 0, and so "
                       "does H_q // T_k, k.shape[2], when T_k > H_q)")
        if cached and "dimension 3" in error:
            return say("the causal mask has one column per key, cached keys included, T×T_k, "
                       "torch.ones(T, T_k).tril(T_k - T), not a T×T triangle")
        if masked and "dimension 1" in error:
            return say("use the given mask as it is; its head axis (dim=1, size 1) broadcasts over the H_q "
                       "heads, and mask[:, 0] or mask.squeeze(1) drops it, so the batch axis meets the heads")
        if grouped:
            return say("copy each K/V head n_rep = H_q // H_kv times along the head axis, dim=1 of "
                       "B×H_kv×T_k×d_h (not the time axis, dim=2)")
        if sizes and int(sizes.group(2)) % n_kv == 0:
            return say("the K/V heads were copied although H_q = H_kv here, so n_rep = H_q // H_kv = 1: a "
                       "size is hard-coded; read n_rep from the shapes, q.shape[1] // k.shape[1]")
        return None
    return advice


def _left_alone(name: str, fix: str, **inputs: tuple[Tensor, Tensor]) -> None:
    """Raise :class:`PartError` naming the first input a part changed in place: each input is
    given as (itself after the call, its clone taken before)."""
    for label, (now, before) in inputs.items():
        if not torch.equal(now, before):
            raise PartError(name, say("{part} changed its input {label} in place: {fix}", part=name,
                                      label=label, fix=fix))


def _rmsnorm_untouched(x: Tensor, before: Tensor) -> None:
    _left_alone("RMSNorm", say("compute a new tensor (x * ..., never x.mul_(...), x *= ... or x[...] = ...); "
                               "x.float() of a float32 x is x itself"), x=(x, before))


def _check_rmsnorm(cls: Any, g: torch.Generator) -> None:
    name = "RMSNorm"
    try:  # the model builds its norms as RMSNorm(dim, eps=...): the keyword must be eps
        call_part(name, cls, 8, eps=1e-5)
    except PartError as err:
        if isinstance(err.__cause__, TypeError) and "'eps'" in str(err.__cause__):
            raise PartError(name, say("{detail}: the model builds its norms as RMSNorm(dim, eps=...); name "
                                      "the constructor's argument eps, def __init__(self, dim, eps=1e-5)",
                                      detail=err.detail)) from None
        raise
    _check_rmsnorm_outputs(cls, g, ((16, (2, 3, 16), torch.float32, torch.float32),
                                    (8, (5, 8), torch.float32, torch.float32),
                                    (64, (2, 7, 64), torch.bfloat16, torch.bfloat16)))
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)) * 1e-3  # where eps matters
    outside = say("eps added outside the square root; it goes inside: rsqrt(mean(x²) + eps)")
    small = say("output on a small x of shape (4, 8), where eps matters")
    with torch.no_grad():
        expected, before = RMSNorm(8, eps=1e-5)(x), x.clone()
        got = call_part(name, call_part(name, cls, 8, eps=1e-5), x)
        _rmsnorm_untouched(x, before)
        compare(name, got, expected, small,
                hints={outside: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-5)})
    _check_rmsnorm_float64_and_gradient(cls, g)
    # last, so that every mistake named above keeps its name: float32 gains under a half input, and eps
    # left at its default
    _check_rmsnorm_outputs(cls, g, ((32, (2, 4, 32), torch.bfloat16, torch.float32),
                                    (32, (3, 32), torch.float16, torch.float32)))
    with torch.no_grad():
        default = call_part(name, call_part(name, cls, 8), x)
        compare(name, default, expected, say("output of RMSNorm(8), eps left at its default, on a small x of "
                                             "shape (4, 8)"),
                hints={say("a default eps other than 1e-5: write eps: float = 1e-5 in the signature"):
                       RMSNorm(8, eps=1e-6)(x)})
        # an eps other than the default: the one given to the constructor, never a number typed in forward
        other = call_part(name, call_part(name, cls, 8, eps=0.1), x)
        compare(name, other, RMSNorm(8, eps=0.1)(x),
                say("output of RMSNorm(8, eps=0.1) on a small x of shape (4, 8)"),
                hints={say("eps fixed at 1e-5 whatever eps is given: add self.eps, the eps given to the "
                           "constructor"): expected})


def _check_rmsnorm_outputs(cls: Any, g: torch.Generator, cases: tuple) -> None:
    """Outputs on random inputs: (dim, shape, input dtype, the module's dtype) for each case."""
    name = "RMSNorm"
    mixed = say("the normalised x cast to the weight's dtype (type_as(weight)); cast it back to the input's "
                "dtype (x.dtype), then multiply by the weight")
    for dim, shape, dtype, module_dtype in cases:
        mine = call_part(name, cls, dim, eps=1e-5)
        ref = RMSNorm(dim, eps=1e-5)
        weight = torch.randn(dim, generator=g) * 0.5 + 1.0
        if not isinstance(getattr(mine, "weight", None), nn.Parameter):
            raise PartError(name, say("needs a parameter self.weight (nn.Parameter of shape (dim,))"))
        if tuple(mine.weight.shape) != (dim,):
            raise PartError(name, say("self.weight must start as ones of shape ({dim},), got shape {shape}",
                                      dim=dim, shape=tuple(mine.weight.shape)))
        if not torch.equal(mine.weight.detach(), torch.ones(dim)):
            start = (say("self.weight starts as zeros, not ones") if not mine.weight.detach().any() else
                     say("self.weight does not start as ones"))
            raise PartError(name, start + say(": nn.Parameter(torch.ones(dim)), so that a fresh norm leaves "
                                              "the normalised x as it is"))
        extra = [key for key in mine.state_dict() if key != "weight"]
        if extra == ["eps"]:
            raise PartError(name, say("its state dict holds {keys}, not one entry, weight: keep eps a plain "
                                      "attribute", keys=list(mine.state_dict())))
        if extra:
            raise PartError(name, say("its state dict holds {keys}, not one entry, weight: {extra} is saved "
                                      "too; keep one tensor, self.weight (a second name for it, self.gamma = "
                                      "..., adds an entry)", keys=list(mine.state_dict()),
                                      extra=", ".join(extra)))
        with torch.no_grad():
            mine.load_state_dict({"weight": weight}, strict=False)  # works where the module lives elsewhere
            ref.weight.copy_(weight)
            mine.to(module_dtype), ref.to(module_dtype)  # the whole model in bfloat16, or float32 gains
            weight = weight.to(module_dtype)
            x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
            before = x.clone()
            expected = ref(x)
            got = _call_broadcasting(name, mine, say("the mean over the last axis keeps that axis "
                                                     "(keepdim=True): …×1 broadcasts against …×d"), x)
            _rmsnorm_untouched(x, before)
            x32 = x.float()
            hints = {say("a norm that subtracts the mean (LayerNorm): RMSNorm does not"):
                     (_normalised(x32 - x32.mean(-1, keepdim=True)) * weight).to(dtype),
                     say("the gains applied to x before normalising; normalise first, then multiply by "
                         "the weight"): _normalised(x32 * weight.float()).to(dtype),
                     say("x over its standard deviation (x.var or x.std): the variance takes the mean out "
                         "first; r = sqrt(x.pow(2).mean(-1, keepdim=True) + eps) squares x itself"):
                     tuple((x32 / torch.sqrt(x32.var(-1, keepdim=True, correction=c) + 1e-5) * weight)
                           .to(dtype) for c in (0, 1)),
                     say("x times r: divide by r, x / r, or multiply by torch.rsqrt(...)"):
                     (x32 * torch.sqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5) * weight).to(dtype)}
            if shape[0] != dim:  # the batch axis's length, told apart from d
                over_first = say("the sum of the squares divided by x.shape[0] = {n}, the first axis's "
                                 "length; divide by d = x.shape[-1] = {d} (or take .mean(-1))", n=shape[0],
                                 d=dim)
                hints[over_first] = (x32 * torch.rsqrt(x32.pow(2).sum(-1, keepdim=True) / shape[0] + 1e-5)
                                     * weight).to(dtype)
            if len(shape) == 3:
                hints[say("the mean of the squares taken over the last two axes (positions and features); "
                          "take it over the last axis alone, .mean(-1, keepdim=True)")] = \
                    (x32 * torch.rsqrt(x32.pow(2).mean((-2, -1), keepdim=True) + 1e-5) * weight).to(dtype)
            if dtype != torch.float32:
                hints[say("the squares taken in the input dtype, then cast up: x.pow(2) of a {dtype} x "
                          "rounds each square; cast x to float32 first, then square it", dtype=dtype)] = \
                    (x32 * torch.rsqrt(x.pow(2).mean(-1, keepdim=True).float() + 1e-5)).to(dtype) * weight
                hints[say("the norm computed in the input dtype; compute it in float32")] = \
                    (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight
                hints[say("the weight multiplied before casting back; cast back to the input dtype, then "
                          "multiply by the weight")] = (_normalised(x) * weight.float()).to(dtype)
            if dtype != module_dtype:
                hints[mixed] = _normalised(x).to(module_dtype) * weight
            what = say("output on x of shape {shape}, {dtype}", shape=shape, dtype=dtype)
            if dtype != module_dtype:
                what = say("output on x of shape {shape}, {dtype}, with a float32 weight", shape=shape,
                           dtype=dtype)
                _product_in_input_dtype(got, x, weight, what)
            compare(name, got, expected, what, hints=hints, half_exact=True)


def _product_in_input_dtype(got: object, x: Tensor, weight: Tensor, what: str) -> None:
    """With float32 gains and a half input the output is float32, as torch promotes the product: a
    :class:`PartError` naming which of 05.2.2's two ways kept it in the input's dtype, when ``got`` is
    one of them (at most 1% of the entries off by a rounding): the weight cast to that dtype, or the
    product rounded to it (an in-place multiply into the cast-back vector, or a cast after it)."""
    if not (isinstance(got, Tensor) and got.dtype == x.dtype and got.shape == x.shape):
        return
    normalised = _normalised(x).to(x.dtype)
    weight_cast = say("the weight cast to the input dtype (self.weight.to(x.dtype) or type_as(x)), so the "
                      "product stays in it: multiply by self.weight as it is, out of place, "
                      "normalised.to(x.dtype) * self.weight, and torch promotes the product to float32")
    rounded = say("the product rounded to the input dtype: an in-place multiply (mul_, *=) keeps the "
                  "dtype of the tensor it writes into, x's, and so does a cast after it (.to(x.dtype)); "
                  "multiply out of place, normalised.to(x.dtype) * self.weight, and torch promotes the "
                  "product to float32")
    causes = {weight_cast: normalised * weight.to(x.dtype),
              rounded: (normalised.float() * weight).to(x.dtype)}
    for cause, wrong in causes.items():
        if float((got.detach() != wrong).double().mean()) <= 0.01:
            raise PartError("RMSNorm", say("{what}: dtype {got}, expected {expected}", what=what,
                                           got=got.dtype, expected=weight.dtype)
                            + say("; it matches {hint}", hint=cause))


def _check_rmsnorm_float64_and_gradient(cls: Any, g: torch.Generator, name: str = "RMSNorm") -> None:
    """A float64 input computed in float64 (eps a Python float, not rounded to float32), and the gradient
    of every step (05.2.2)."""
    with torch.no_grad():
        x = torch.randn(3, 16, generator=g, dtype=torch.float64)
        expected, before = RMSNorm(16, eps=1e-5).double()(x), x.clone()
        got = call_part(name, call_part(name, cls, 16, eps=1e-5).double(), x)
        _rmsnorm_untouched(x, before)
        compare(name, got, expected, say("output on a float64 x of shape (3, 16)"),
                atol=1e-12, hints={say("the norm computed in float32; compute in promote_types(x.dtype, "
                                       "float32), float64 here, never downcast"): _normalised(x).double()})
        # where eps matters (a mean square near it), an eps rounded to float32 (torch.tensor(1e-5), off by
        # 2.5e-13) moves the output by about 1e-9, not within float64's rounding: named, as 05.2.2's test
        # names it, when the output is the one of that eps to 1e-15
        x = x * 1e-3
        expected, rounded = RMSNorm(16, eps=1e-5).double()(x), torch.tensor(1e-5).item()
        got = call_part(name, call_part(name, cls, 16, eps=1e-5).double(), x)
        rounded_output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + rounded)
        float32_eps = isinstance(got, Tensor) and got.shape == x.shape and bool(
            (got.double() - rounded_output).abs().max() < 1e-15)
        named = say("eps rounded to float32 (a tensor, torch.tensor(eps)): keep self.eps a Python float")
        compare(name, got, expected, say("output on a small float64 x of shape (3, 16), where eps matters"),
                atol=1e-12, hints={named: rounded_output} if float32_eps else None)
    x, upstream = torch.randn(3, 16, generator=g), torch.randn(3, 16, generator=g)
    grads, weight_grads = [], []
    for mine, module in ((True, call_part(name, cls, 16, eps=1e-5)), (False, RMSNorm(16, eps=1e-5))):
        xi = x.clone().requires_grad_()
        try:
            out = call_part(name, module, xi) if mine else module(xi)  # tinyk's bare
            (out * upstream).sum().backward()
        except RuntimeError as err:
            if "inplace operation" not in str(err):
                raise
            raise PartError(name, say("backward raised RuntimeError ({err}): an in-place write in forward "
                                      "(mul_, *=, xf[...] = ...) changed a tensor autograd saved for the "
                                      "gradient; autograd needs the values it saved: write xf * r instead of "
                                      "xf.mul_(r)", err=err)) from None
        grads.append(torch.zeros_like(x) if xi.grad is None else xi.grad)
        weight_grads.append(module.weight.grad)
    compare(name, grads[0], grads[1], say("the gradient with respect to x of shape (3, 16)"), hints={
        say("1/r left out of the graph (.detach(), .item() or torch.no_grad() in forward); keep every step "
            "in the graph"): upstream * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)})
    if weight_grads[0] is None or not torch.any(weight_grads[0]):
        raise PartError(name, say("the weight gets no gradient: multiply by self.weight itself, kept in the "
                                  "graph (no .detach(), .data or torch.no_grad() around it)"))
    compare(name, weight_grads[0], weight_grads[1],
            say("the gradient with respect to the weight, of shape (16,)"))


def _pair(name: str, got: object, returns: str) -> None:
    """A :class:`PartError` saying what the part ``returns`` unless ``got`` is a pair (a tuple or a
    list of two)."""
    if not (isinstance(got, tuple | list) and len(got) == 2):
        raise PartError(name, returns)


def _check_rope_tables(fn: Callable[..., Any], g: torch.Generator) -> None:
    for head_dim, end, theta in ((8, 16, 10000.0), (64, 40, 100000.0)):
        got = call_part("rope_tables", fn, head_dim, end, theta)
        _pair("rope_tables", got, say("must return a tuple (cos, sin)"))
        if all(getattr(table, "shape", None) == (end, head_dim) for table in got):
            raise PartError("rope_tables", say("full-width tables, end × head_dim: one column per pair, "
                                               "end × head_dim/2"))
        # ω_i = theta^(-i/d_h) are the frequencies of sqrt(theta) with the right exponent, and
        # theta^(-2i/end) those of theta^(d_h/end)
        by_d_h = say("the exponent -i/d_h; ω_i = theta^(-2i/d_h)")
        over_end = say("the exponent divided by end, the tables' length ({end} here), instead of head_dim "
                       "({head_dim}): ω_i = theta^(-2i/head_dim), whatever the length", end=end,
                       head_dim=head_dim)
        hints = {say("the tables of theta = 10000 whatever theta is; use the theta argument"):
                 precompute_freqs_cis(head_dim, end, 10000.0),
                 by_d_h: precompute_freqs_cis(head_dim, end, theta ** 0.5),
                 say("the positions 1..end; row t is position t, counted from 0: torch.arange(end)"):
                 tuple(table[1:] for table in precompute_freqs_cis(head_dim, end + 1, theta)),
                 say("cos and sin swapped; return (cos, sin) in that order"):
                 precompute_freqs_cis(head_dim, end, theta)[::-1],
                 say("twice the angle (2·t·ω_i); the angle at position t is t·ω_i, once"):
                 tuple(table[::2] for table in precompute_freqs_cis(head_dim, 2 * end - 1, theta)),
                 over_end: precompute_freqs_cis(head_dim, end, theta ** (head_dim / end))}
        if end == 2 * head_dim and _tables_fit(got, hints[by_d_h]):
            # theta^(-2i/end) is theta^(-i/d_h) at this length: the tables of another length tell them
            # apart, each hint kept only where it fits those too (a right part is never called for them)
            try:
                longer = call_part("rope_tables", fn, head_dim, end + 2, theta)
            except PartError:
                longer = None
            for hint, base in ((by_d_h, theta ** 0.5), (over_end, theta ** (head_dim / (end + 2)))):
                if not _tables_fit(longer, precompute_freqs_cis(head_dim, end + 2, base)):
                    del hints[hint]
        for i, (table, expected, label) in enumerate(zip(got, precompute_freqs_cis(head_dim, end, theta),
                                                         ("cos", "sin"), strict=True)):
            compare("rope_tables", table, expected, say("{label} table for head_dim={head_dim}, end={end}, "
                                                        "theta={theta:g}", label=label, head_dim=head_dim,
                                                        end=end, theta=theta),
                    hints={hint: tables[i] for hint, tables in hints.items()})
    got = call_part("rope_tables", fn, 8, 16)  # theta left at its default
    _pair("rope_tables", got, say("must return a tuple (cos, sin)"))
    if not all(isinstance(table, Tensor) and table.shape == expected.shape and torch.allclose(
            table.double(), expected.double(), atol=1e-5) for table, expected in zip(
            got, precompute_freqs_cis(8, 16), strict=True)):
        raise PartError("rope_tables", say("with theta left out, the tables are not those of theta = 10000: "
                                           "the default is theta=10000.0 in the signature"))
    try:  # even and positive but no multiple of 4: three whole pairs, tables to build
        call_part("rope_tables", fn, 6, 4)
    except PartError as err:
        if not isinstance(err.__cause__, ValueError):
            raise
        even = say("head_dim=6 raised ValueError: 6 is even and positive, three whole pairs; raise it only "
                   "when head_dim is odd or not positive (head_dim % 2), not when it is no multiple of 4")
        raise PartError("rope_tables", even) from None
    for head_dim in (7, 0, -4):  # no whole pairs, or no width at all: a ValueError first
        try:
            call_part("rope_tables", fn, head_dim, 4)
        except PartError as err:
            if isinstance(err.__cause__, ValueError):
                continue
            if not isinstance(err.__cause__, Exception):  # a stub, or a call of a ready-made version
                raise
            raised = say("raised {error}", error=type(err.__cause__).__name__)
        else:
            raised = say("raised nothing")
        raise PartError("rope_tables", say("head_dim={head_dim} {raised}: check head_dim first and raise "
                                           "ValueError when it is odd (no whole pairs) or not positive",
                                           head_dim=head_dim, raised=raised))


def _tables_fit(got: object, tables: tuple[Tensor, Tensor]) -> bool:
    """Whether ``got`` is the pair of (mistaken) ``tables``, to float32 precision."""
    return isinstance(got, tuple | list) and len(got) == 2 and all(
        isinstance(table, Tensor) and table.shape == wrong.shape
        and torch.allclose(table.detach().double(), wrong.double(), atol=1e-5, rtol=1e-4)
        for table, wrong in zip(got, tables, strict=True))


def _turned(xq: Tensor, xk: Tensor, cos: Tensor, sin: Tensor,
            turn: Callable[[Tensor, Tensor, Tensor, Tensor], tuple[Tensor, Tensor]]) -> list[Tensor]:
    """q and k with each adjacent pair (a, b) turned to ``turn(a, b, cos, sin)``: a wrong rotation to name."""
    out = []
    for x in (xq, xk):
        c = cos[None, :, None, :] if cos.ndim == 2 else cos[:, :, None, :]
        s = sin[None, :, None, :] if sin.ndim == 2 else sin[:, :, None, :]
        wide = x.to(torch.promote_types(x.dtype, c.dtype))
        first, second = turn(wide[..., 0::2], wide[..., 1::2], c, s)
        out.append(torch.stack([first, second], dim=-1).flatten(3).to(x.dtype))
    return out


def _tiled(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x turned by tables tiled to the full width, c_0 c_1 ... c_0 c_1, where each pair's two
    coordinates take its own angle (the interleaved layout, written with a rotate-every-two)."""
    c, s = torch.cat([cos, cos], -1).unsqueeze(-2), torch.cat([sin, sin], -1).unsqueeze(-2)
    turned = torch.stack([-x[..., 1::2], x[..., 0::2]], -1).flatten(-2)
    return (x.float() * c + turned.float() * s).to(x.dtype)


def _check_apply_rope(fn: Callable[..., Any], g: torch.Generator) -> None:
    name = "apply_rope"
    B, T = 2, 5
    for n_heads, n_kv, dtype, per_row, d_h in ((4, 2, torch.float32, False, 8),
                                               (4, 4, torch.float32, True, 8),
                                               (2, 1, torch.float32, False, 16),  # no size typed in
                                               (6, 3, torch.bfloat16, False, 8)):
        cos_all, sin_all = precompute_freqs_cis(d_h, 32)
        xq = torch.randn(B, T, n_heads, d_h, generator=g).to(dtype)
        xk = torch.randn(B, T, n_kv, d_h, generator=g).to(dtype)
        if per_row:  # left padding: each row its own positions
            positions = torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
            cos, sin = cos_all[positions], sin_all[positions]
            what = say("B×T×d_h/2 tables (per-row positions)")
        else:  # after a cache of 3 tokens: rows 3..7
            cos, sin, what = cos_all[3:3 + T], sin_all[3:3 + T], say("T×d_h/2 tables, rows 3..7")
        before = xq.clone(), xk.clone()
        lined_up = say("a B×T×d_h/2 table has a batch axis first: line it up as B×T×1×d_h/2 (batch, "
                       "position, head, pair)") if per_row else \
            say("a T×d_h/2 table lines up as 1×T×1×d_h/2 (batch, position, head, pair)")
        typed = say("heads of width {d_h} hold {pairs} pairs: a size is hard-coded; read the sizes from the "
                    "shapes (x.shape[-1] // 2, or reshape(..., -1, 2))", d_h=d_h, pairs=d_h // 2)
        # "shape [...] is invalid for input of size N": N the size of q or k (the pairs' count typed in), or
        # of a table (lined up wrongly)
        inputs = {f"input of size {x.numel()}" for x in (xq, xk)}
        got = _call_broadcasting(name, fn, lambda error, lined_up=lined_up, typed=typed, inputs=inputs: typed
                                 if any(error.endswith(size) for size in inputs) else lined_up,
                                 xq, xk, cos, sin)
        _left_alone(name, say("build new tensors for the rotated pairs (torch.stack, torch.empty), never "
                              "write into xq or xk; x.float() of a float32 x is x itself"),
                    xq=(xq, before[0]), xk=(xk, before[1]))
        _pair(name, got, say("must return a tuple (xq_rotated, xk_rotated)"))
        expected = apply_rotary_emb(xq, xk, cos, sin)
        half = apply_rotary_emb_half(xq, xk, cos, sin)
        backwards = apply_rotary_emb(xq, xk, cos, -sin)
        hints = {say("the half-split pairing (i with i + d_h/2); pair ADJACENT coordinates (x0, x1), "
                     "(x2, x3), ..."): half,
                 say("a rotation the wrong way (the sign of sin swapped): (a, b) -> (a cos - b sin, "
                     "a sin + b cos)"): backwards,
                 say("a turn by twice the angle; cos and sin already hold the angle t·ω_i, use them as they "
                     "are"): apply_rotary_emb(xq, xk, 2 * cos**2 - 1, 2 * sin * cos),
                 say("an input returned unrotated; rotate both q and k"): (xq, xk),
                 say("the rotated pairs written back as halves with cat; interleave them again, "
                     "torch.stack([a, b], -1).flatten(-2)"): [torch.cat([e[..., 0::2], e[..., 1::2]], -1)
                                                             for e in expected],
                 say("the pairs read as halves (x[..., :d_h/2] with x[..., d_h/2:], the half-split layout) "
                     "and written back interleaved; read adjacent coordinates as the pairs too, x[..., 0::2] "
                     "with x[..., 1::2]"): [torch.stack([h[..., : d_h // 2], h[..., d_h // 2 :]], -1)
                                           .flatten(-2) for h in half]}
        for k in range(1, d_h // 2):  # the first k pairs rotated, the others passed through
            hints[say("only the first {k} of the {pairs} pairs rotated, the others passed through as they "
                      "were; rotate every pair, i = 0..d_h/2 - 1", k=k, pairs=d_h // 2)] = \
                [torch.cat([e[..., : 2 * k], x[..., 2 * k :]], -1)
                 for e, x in zip(expected, (xq, xk), strict=True)]
        hints[say("the minus of a cos - b sin left out: (a, b) -> (a cos - b sin, a sin + b cos)")] = \
            _turned(xq, xk, cos, sin, lambda a, b, c, s: (a * c + b * s, a * s + b * c))
        hints[say("cos where sin belongs in a term: (a, b) -> (a cos - b sin, a sin + b cos)")] = [
            tuple(pair) for pair in zip(
                _turned(xq, xk, cos, sin, lambda a, b, c, s: (a * c - b * c, a * s + b * c)),
                _turned(xq, xk, cos, sin, lambda a, b, c, s: (a * c - b * c, a * s + b * s)), strict=True)]
        hints[say("the tables' columns reversed: pair i takes column i, in order")] = \
            apply_rotary_emb(xq, xk, cos.flip(-1), sin.flip(-1))
        hints[say("cos and sin were swapped (s, c = cos, sin, or sin where cos goes): (a, b) -> (a cos - b "
                  "sin, a sin + b cos), the tables in the order cos, sin")] = \
            apply_rotary_emb(xq, xk, sin, cos)
        hints[say("the tables taken as angles (torch.cos(cos)); they hold cos(t·ω_i) and sin(t·ω_i) already, "
                  "use them as they are")] = [tuple(pair) for pair in zip(
                      apply_rotary_emb(xq, xk, torch.cos(cos), torch.sin(cos)),
                      apply_rotary_emb(xq, xk, torch.cos(cos), torch.sin(sin)), strict=True)]
        swapped_q, swapped_k = (x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2) for x in (xq, xk))
        hints[say("each pair read swapped, (x1, x0): a is x[..., 0::2] and b is x[..., 1::2], in that "
                  "order")] = apply_rotary_emb(swapped_q, swapped_k, cos, sin)
        hints[say("the tables tiled (cos.repeat(..., 2) lays out c_0 c_1 ... c_0 c_1), yet both coordinates "
                  "of pair i take its own angle: cos.repeat_interleave(2, -1)")] = \
            [_tiled(x, cos, sin) for x in (xq, xk)]
        hints[say("angles of its own, positions 0..T-1 and theta = 10000, whatever the tables given: use the "
                  "cos and sin given")] = apply_rotary_emb(xq, xk, cos_all[:T], sin_all[:T])
        if per_row:  # every sequence given sequence 0's rows
            hints[say("B×T×d_h/2 tables: sequence b takes its own rows cos[b], sin[b], not sequence 0's "
                      "(cos[0]) for every sequence")] = apply_rotary_emb(xq, xk, cos[0], sin[0])
        if dtype == torch.bfloat16:  # the tables rounded to bfloat16 before the rotation
            hints[say("the rotation rounded to bfloat16 along the way (the tables cast to x.dtype before "
                      "it); rotate with the float32 tables and cast once at the end, .to(x.dtype)")] = \
                apply_rotary_emb(xq, xk, cos.to(dtype), sin.to(dtype))
        for i, label in enumerate((say("rotated q"), say("rotated k"))):
            rotated = say("{label} ({dtype}, {what})", label=label, dtype=dtype, what=what)
            compare(name, got[i], expected[i], rotated, atol=1e-5 if dtype == torch.float32 else 1e-2,
                    hints={hint: tables[i] for hint, tables in hints.items()},
                    half_exact=dtype == torch.bfloat16)
    # float64 values that float32 cannot hold, and float64 tables: a float64 rotation
    xq = torch.randn(B, T, 4, 8, generator=g, dtype=torch.float64)
    xk = torch.randn(B, T, 2, 8, generator=g, dtype=torch.float64)
    cos, sin = precompute_freqs_cis(8, T, dtype=torch.float64)
    got = call_part(name, fn, xq, xk, cos, sin)
    _pair(name, got, say("must return a tuple (xq_rotated, xk_rotated)"))
    expected = apply_rotary_emb(xq, xk, cos, sin)
    in_float32 = [e.double() for e in apply_rotary_emb(xq.float(), xk.float(), cos.float(), sin.float())]
    for i, label in enumerate((say("rotated q"), say("rotated k"))):
        compare(name, got[i], expected[i], say("{label} (float64, float64 tables)", label=label), atol=1e-9,
                hints={say("a rotation computed in float32: keep x's dtype (x.float() turns float64 into "
                           "float32)"): in_float32[i]})
    # q and k of two dtypes: each comes back in its own (.type_as(xq) on both gives k q's dtype)
    got = call_part(name, fn, xq.float(), xk, cos.float(), sin.float())
    _pair(name, got, say("must return a tuple (xq_rotated, xk_rotated)"))
    for i, (x, label) in enumerate(zip((xq.float(), xk), (say("rotated q"), say("rotated k")), strict=True)):
        if getattr(got[i], "dtype", None) != x.dtype:
            raise PartError(name, say("{label} came back as {got} for a {dtype} input (float32 q, float64 "
                                      "k): cast each result back to its own input's dtype, .type_as(xq) for "
                                      "q and .type_as(xk) for k", label=label,
                                      got=getattr(got[i], "dtype", None), dtype=x.dtype))
    try:  # tables built from d = 32 instead of d_h = 8
        call_part(name, fn, xq.float(), xk.float(), *precompute_freqs_cis(4 * d_h, T))
    except PartError as err:
        if not isinstance(err.__cause__, ValueError | RuntimeError | IndexError):
            raise
    else:
        raise PartError(name, say("a {rows}×{pairs} table (built from d = {d}) was used on heads of width "
                                  "{d_h} without an error: raise one, never crop the table to fit", rows=T,
                                  pairs=2 * d_h, d=4 * d_h, d_h=d_h))
    try:  # one row more than the T tokens: cos[:T] would crop it to fit
        call_part(name, fn, xq, xk, *precompute_freqs_cis(8, T + 1, dtype=torch.float64))
    except PartError as err:
        if not isinstance(err.__cause__, ValueError | RuntimeError | IndexError):
            raise
    else:
        raise PartError(name, say("{rows}×4 tables for T = {T} tokens were used without an error: the "
                                  "tables hold one row per token; raise one, never slice the rows to fit",
                                  rows=T + 1, T=T))


def _check_repeat_kv(fn: Callable[..., Any], g: torch.Generator) -> None:
    x = torch.randn(2, 3, 2, 4, generator=torch.Generator().manual_seed(1))  # g left for the checks below
    try:  # the same shape whatever n_rep is, more heads than x has: the copies typed in
        shapes = {n_rep: tuple(getattr(call_part("repeat_kv", fn, x, n_rep), "shape", ()))
                  for n_rep in (1, 3)}
    except PartError:  # the checks below say why
        shapes = {}
    if shapes and shapes[1] == shapes[3] and len(shapes[1]) == 4 and shapes[1][2] == 4:
        try:  # H_kv² = 4 heads from x's 2: H_kv copies of each head, or 2 typed in? x with 3 heads tells
            three = call_part("repeat_kv", fn, torch.zeros(1, 1, 3, 1), 1)
            squared = tuple(getattr(three, "shape", ()))[2:3] == (9,)
        except PartError:
            squared = False
        if squared:
            raise PartError("repeat_kv", say(
                "the copies counted H_kv (x.shape[2]), not n_rep: 4 heads for n_rep = 1 and for n_rep = 3 "
                "from x's H_kv = 2, 9 from 3 heads; copy each head n_rep times, "
                "x[:, :, :, None, :].expand(B, T, H_kv, n_rep, d_h)"))
    if shapes and shapes[1] == shapes[3] and len(shapes[1]) == 4 and shapes[1][2] > 2:
        raise PartError("repeat_kv", say("{heads} heads for n_rep = 1 and for n_rep = 3 (x has H_kv = 2): a "
                                         "size is hard-coded; read the number of copies from the argument "
                                         "n_rep", heads=shapes[1][2]))
    for n_rep, dtype in ((1, torch.bfloat16), (2, torch.float32), (4, torch.float32), (2, torch.bfloat16)):
        x = torch.randn(2, 3, 2, 4, generator=g).to(dtype)
        got = _call_broadcasting("repeat_kv", fn, _copies_advice(x, n_rep), x, n_rep)
        compare("repeat_kv", got, repeat_kv(x, n_rep),
                say("output for x of shape {shape}, n_rep={n_rep}", shape=tuple(x.shape), n_rep=n_rep),
                hints={say("the [0, 1, 0, 1] grouping (repeat/tile); each K/V head serves a CONTIGUOUS "
                           "group: [0, 0, 1, 1] (repeat_interleave)"): x.repeat(1, 1, n_rep, 1),
                       say("copies made along the time axis (dim=1): the heads are dim=2 of "
                           "B×T×H_kv×d_h"): x.repeat_interleave(n_rep, 1),
                       say("copies made along d_h (the last axis): the heads are dim=2 of "
                           "B×T×H_kv×d_h"): x.repeat_interleave(n_rep, -1),
                       say("n_rep is the number of copies of each K/V head, not the number of query heads"):
                       x.repeat_interleave(n_rep // x.shape[2], 2),
                       say("the expanded B×T×H_kv×n_rep×d_h view returned as it is: reshape it to "
                           "B×T×(H_kv·n_rep)×d_h"):
                       x[:, :, :, None, :].expand(*x.shape[:3], n_rep, x.shape[3]),
                       say("the new axis after d_h (x[..., None]), which interleaves each head's coordinates "
                           "with their copies: put it between the heads and d_h, x[:, :, :, None, :]"):
                       x.repeat_interleave(n_rep, -1).reshape(repeat_kv(x, n_rep).shape),
                       say("repeat_interleave without dim= flattens x first: copy along the head axis, "
                           "x.repeat_interleave(n_rep, dim=2)"): x.repeat_interleave(n_rep),
                       say("the heads before the positions (B×H×T×d_h): repeat_kv keeps x's order, "
                           "B×T×H×d_h, with the heads on dim=2 (transpose back)"):
                       repeat_kv(x, n_rep).transpose(1, 2)})


def _copies_advice(x: Tensor, n_rep: int) -> Callable[[str], str | None]:
    """05.4.3's advice for a ``RuntimeError`` of ``repeat_kv(x, n_rep)``: .view on the expanded copies,
    expand on the head axis, or a reshape whose head count the copies do not hold (read from
    "shape '[B, T, h, d]' is invalid for input of size N" against x's shape: with h = H_kv·n_rep the
    copies are the mistake, N / (B·T·d_h) heads; otherwise the reshape's head count is)."""
    B, T, H, d = x.shape

    def advice(error: str) -> str | None:
        if "view size" in error:
            return say("an expanded tensor is not contiguous: use .reshape, not .view")
        if "expanded size" in error:
            return say("expand grows only axes of size 1: add one for the copies, x[:, :, :, None, :], "
                       "expand it, then reshape")
        asked = re.search(r"shape '\[(\d+), (\d+), (\d+), (\d+)\]' is invalid for input of size (\d+)", error)
        if asked and int(asked.group(3)) == H * n_rep and int(asked.group(5)) % (B * T * d) == 0:
            return say("the copies hold {held} heads, not H_kv·n_rep = {want}: make n_rep copies of each "
                       "head, x[:, :, :, None, :].expand(B, T, H_kv, n_rep, d_h), then reshape to "
                       "B×T×(H_kv·n_rep)×d_h", held=int(asked.group(5)) // (B * T * d), want=H * n_rep)
        if asked or "is invalid for input of size" in error:
            return say("the reshape asked for another number of heads than the copies hold (H_kv², or a "
                       "fixed number): the new head count is H_kv·n_rep, B×T×(H_kv·n_rep)×d_h")
        return None
    return advice


def _check_gqa_attention(fn: Callable[..., Any], g: torch.Generator) -> None:
    name = "gqa_attention"
    B = 2
    valid = torch.tensor([[False, False, True, True, True, True], [True, True, True, True, True, True]])
    for case, (n_heads, n_kv, T, T_k, masked, dtype, d_h) in enumerate((
            (4, 4, 6, 6, False, torch.float32, 8), (4, 2, 6, 6, False, torch.float32, 8),
            (8, 2, 2, 6, False, torch.float32, 8), (4, 1, 1, 6, False, torch.float32, 8),
            (4, 2, 6, 6, True, torch.float32, 8), (8, 2, 3, 6, True, torch.float32, 8),
            (4, 2, 6, 6, True, torch.float32, 16),  # another head width: no size typed in
            (4, 2, 6, 6, True, torch.bfloat16, 8),
            (4, 2, 1, 6, True, torch.float32, 8))):  # one query with a padded batch's mask
        q = torch.randn(B, n_heads, T, d_h, generator=g).to(dtype)
        k = torch.randn(B, n_kv, T_k, d_h, generator=g).to(dtype)
        v = torch.randn(B, n_kv, T_k, d_h, generator=g).to(dtype)
        mask = padding_to_attention(valid, T) if masked else None
        padded = say("a padded batch's mask (row 0's first queries see no key)")
        what = say("output for H_q={H_q}, H_kv={H_kv}, T={T}, T_k={T_k}, {dtype}, {mask}", H_q=n_heads,
                   H_kv=n_kv, T=T, T_k=T_k, dtype=dtype, mask=padded if masked else "mask=None")
        before = {"q": q.clone(), "k": k.clone(), "v": v.clone()}
        try:
            advice = _attention_advice(n_heads != n_kv, T != T_k, n_kv, T_k, masked)
            got = _call_broadcasting(name, fn, advice, q, k, v, mask)
        except PartError as err:
            # only a head-axis mismatch may come from K or V left uncopied: an expand, a .view or a reshape
            # that fails is a copy that works only when the head axis has size 1, named by the advice
            if n_heads != n_kv and re.search(r"must match the size of tensor b \(\d+\) at non-singleton "
                                             r"dimension 1\b", err.detail):
                _kv_left_uncopied(fn, q, k, v, mask, n_heads // n_kv)
            raise
        _left_alone(name, say("compute new tensors (q / math.sqrt(d_h), never q /= ... or q.div_(...)): the "
                              "caller still needs q, k and v"), **{key: (now, before[key]) for key, now in
                                                                (("q", q), ("k", k), ("v", v))})
        expected = reference_gqa_attention(q, k, v, mask)
        kk, vv = repeat_kv(k.transpose(1, 2), n_heads // n_kv).transpose(1, 2), \
            repeat_kv(v.transpose(1, 2), n_heads // n_kv).transpose(1, 2)
        unscaled = reference_gqa_attention(q * math.sqrt(d_h), kk, vv, mask)
        tiled = reference_gqa_attention(q, k.repeat(1, n_heads // n_kv, 1, 1),
                                         v.repeat(1, n_heads // n_kv, 1, 1), mask)
        hints = {say("attention without the 1/sqrt(d_h) scale"): unscaled,
                 **attention_hints(q, kk, vv, mask),
                 **given_mask_hints(q, k, v, kk, vv, mask),
                 say("the output returned as B×T×H_q×d_h, the positions before the heads: return the heads "
                     "first, B×H_q×T×d_h, as q has them"): expected.transpose(1, 2)}
        # Scaled by the number of keys or of queries: the same output when T = T_k, so one message then.
        if T == T_k and T not in (1, d_h):
            hints[say("the scores scaled by 1/sqrt(T_k), the number of keys, or by 1/sqrt(T), q.shape[2], "
                      "the number of queries T (the same number here): scale them by 1/sqrt(d_h), the "
                      "head width, q.shape[-1]")] = reference_gqa_attention(q * math.sqrt(d_h / T), kk, vv,
                                                                             mask)
        if T != T_k and T_k != d_h:
            hints[say("the scores scaled by 1/sqrt(T_k), the number of keys: scale them by 1/sqrt(d_h), the "
                      "head width, q.shape[-1]")] = reference_gqa_attention(q * math.sqrt(d_h / T_k), kk,
                                                                            vv, mask)
        if T != T_k and T not in (1, d_h):
            hints[say("the scale read from q.shape[2], the number of queries T: d_h is q's last axis, "
                      "q.shape[-1]; divide the scores by its square root")] = \
                reference_gqa_attention(q * math.sqrt(d_h / T), kk, vv, mask)
        if n_heads not in (1, d_h, T, T_k):  # scaled by the number of heads, told from the other sizes
            by_heads = say("the scores scaled by 1/sqrt(H_q), the square root of the number of heads, "
                           "q.shape[1]: scale them by 1/sqrt(d_h), the head width, q.shape[-1]")
            if n_kv == n_heads:  # k.shape[1] gives the same scale
                by_heads = say("the scores scaled by 1/sqrt(H_q), the square root of the number of heads, "
                               "q.shape[1] (or k.shape[1], H_kv, the same number here): scale them by "
                               "1/sqrt(d_h), the head width, q.shape[-1]")
            hints[by_heads] = reference_gqa_attention(q * math.sqrt(d_h / n_heads), kk, vv, mask)
        if T == T_k:  # k @ qᵀ: the scores transposed
            hints[say("q and k swapped; the scores have one row per query, T×T_k, q times the transposed k; "
                      "k @ q.transpose(-2, -1) is their transpose")] = \
                reference_gqa_attention(kk, q, vv, mask)
        if n_heads // n_kv > 1 and n_kv > 1:
            hints[say("the [0, 1, 0, 1] grouping; query head h reads K/V head h // n_rep")] = tiled
            keys_tiled = say("the keys tiled [0, 1, 0, 1] (repeat) and the values grouped: query head h "
                             "reads K/V head h // n_rep for its keys too: copy k as you copied v, "
                             "repeat_interleave(n_rep, dim=1)")
            values_tiled = say("the values tiled [0, 1, 0, 1] (repeat) and the keys grouped: query head h "
                               "reads K/V head h // n_rep for its values too: copy v as you copied k, "
                               "repeat_interleave(n_rep, dim=1)")
            hints[keys_tiled] = reference_gqa_attention(q, k.repeat(1, n_heads // n_kv, 1, 1), vv, mask)
            hints[values_tiled] = reference_gqa_attention(q, kk, v.repeat(1, n_heads // n_kv, 1, 1), mask)
        if d_h != 8:
            hints[say("the scores scaled by 1/sqrt(8) on heads of width {d_h}: a size is hard-coded; read "
                      "d_h from the shapes, q.shape[-1]", d_h=d_h)] = \
                reference_gqa_attention(q * math.sqrt(d_h / 8), kk, vv, mask)
        got_t = as_tensor(name, got, what)
        again = call_part(name, fn, q, k, v, mask) if case == 0 else got  # once: dropout draws anew each call
        if isinstance(again, Tensor) and again.shape == got_t.shape and not torch.allclose(
                again, got_t, rtol=0, atol=0, equal_nan=True):
            raise PartError(name, say("two calls on the same input gave different outputs: something random "
                                      "ran, such as dropout on the weights; attention here draws nothing at "
                                      "random"))
        if masked and got_t.shape == expected.shape and torch.isnan(got_t).any():
            raise PartError(name, say("{what}: a query row with no allowed key gives NaN; it must give zeros "
                                      "(-inf everywhere in a row softmaxes to 0/0: fill the blocked scores "
                                      "with a finite value, then zero the blocked weights)", what=what))
        compare(name, got_t, expected, what, atol=1e-5 if dtype == torch.float32 else 2e-2, hints=hints)


def _kv_left_uncopied(fn: Callable[..., Any], q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None,
                     n_rep: int) -> None:
    """Raise :class:`PartError` when attention that failed on H_kv < H_q runs once given v's copies
    already made: it copied k for the groups and not v. One K/V head broadcasts over the query heads,
    so an answer right with one K/V head copied v and not k, or neither: given v with H_q heads already,
    one that copies v makes n_rep times too many and fails, one that copies neither runs."""
    def gives(k_given: Tensor, v_given: Tensor, expected: Tensor | None = None) -> bool:
        try:
            out = fn(q, k_given, v_given, mask)
        except Exception:  # a probe: any failure means this is not the cause
            return False
        return isinstance(out, Tensor) and tuple(out.shape) == tuple(q.shape) and (
            expected is None or torch.allclose(out.float(), expected.float(), atol=1e-4))

    copied_v = v.repeat_interleave(n_rep, dim=1)
    if gives(k, copied_v):
        raise PartError("gqa_attention", say("k was copied for the groups and v was not: copy v the same "
                                             "way, v.repeat_interleave(n_rep, dim=1)"))
    one_k, one_v = k[:, :1], v[:, :1]
    if gives(one_k, one_v, reference_gqa_attention(q, one_k, one_v, mask)):
        if gives(one_k, copied_v):
            raise PartError("gqa_attention", say(
                "neither k nor v was copied for the groups, so both still have H_kv heads: copy each n_rep = "
                "H_q // H_kv times, k.repeat_interleave(n_rep, dim=1) and v.repeat_interleave(n_rep, dim=1)"))
        raise PartError("gqa_attention", say("v was copied for the groups and k was not, so k still has H_kv "
                                             "heads: copy k the same way, k.repeat_interleave(n_rep, dim=1)"))


def _check_swiglu(cls: Any, g: torch.Generator) -> None:
    name = "SwiGLU"
    for dim, hidden in ((8, 24), (16, 40)):
        mine = call_part(name, cls, dim, hidden)
        ref = MLP(dim, hidden)
        for key in ("w1", "w2", "w3"):
            layer = getattr(mine, key, None)
            if layer is None:
                missing = say("it has no attribute self.{key}: name the three layers w1 (gate), w2 (down) "
                              "and w3 (up), the names tinyk's checkpoints load by", key=key)
                raise PartError(name, missing)
            if not isinstance(layer, nn.Linear) or layer.bias is not None:
                raise PartError(name, say("self.{key} must be an nn.Linear(..., bias=False)", key=key))
        widths = {mine.w1.out_features, mine.w3.out_features, mine.w2.in_features}
        if len(widths) == 1 and hidden not in widths and mine.w1.in_features == dim:  # a width typed in
            raise PartError(name, say("SwiGLU({dim}, {hidden}) has m = {m} features: w1 and w3 map d = "
                                      "{dim} -> m = {hidden}, use the hidden_dim argument", dim=dim,
                                      hidden=hidden, m=mine.w1.out_features))
        try:
            mine.load_state_dict(ref.state_dict())
        except RuntimeError as err:
            raise PartError(name, say("its state_dict does not match tinyk.MLP's (w1: d->m gate, w2: m->d "
                                      "down, w3: d->m up): {error}", error=err)) from None
        for dtype in (torch.float32, torch.bfloat16):  # the whole model in bfloat16, weights included
            mine.to(dtype), ref.to(dtype)
            x = torch.randn(3, 4, dim, generator=g).to(dtype)
            with torch.no_grad():
                try:
                    got = _call_broadcasting(name, mine, _linear_advice, x)
                except PartError as err:
                    if dtype == torch.float32:
                        raise
                    raise PartError(name, say("{error}, on a bfloat16 input with bfloat16 weights: compute "
                                              "in x's dtype (no .float())", error=err.detail)) from None
                what = say("output for dim={dim}, hidden_dim={hidden}, {dtype}", dim=dim, hidden=hidden,
                           dtype=dtype)
                flattened = say("the output flattened to (B·T)×d: forward takes any leading shape and keeps "
                                "it, …×d -> …×d")
                again = call_part(name, mine, x)
                if isinstance(got, Tensor) and isinstance(again, Tensor) and got.shape == again.shape \
                        and not torch.equal(got, again):
                    raise PartError(name, say("two calls on the same input give different outputs: the "
                                              "SwiGLU has no dropout or other randomness"))
                compare(name, got, ref(x), what, atol=1e-5 if dtype == torch.float32 else 2e-2,
                        hints={**swiglu_hints(ref, x), flattened: ref(x).reshape(-1, dim)})
        lead_g = torch.Generator().manual_seed(2)  # g left as it was for the parts checked after
        for lead in ((5,), (2, 2, 3)):  # any leading shape: nn.Linear acts on the last axis
            x = torch.randn(*lead, dim, generator=lead_g).to(dtype)
            try:
                with torch.no_grad():
                    got = call_part(name, mine, x)
            except PartError as err:
                if not isinstance(err.__cause__, Exception):
                    raise
                raise PartError(name, say("an input of shape {shape} raised {error} ({text}): forward takes "
                                          "any leading shape, …×d -> …×d", shape=tuple(x.shape),
                                          error=type(err.__cause__).__name__, text=err.__cause__)) from None
            compare(name, got, ref(x), say("output on an input of shape {shape}: forward takes any leading "
                                           "shape, …×d -> …×d", shape=tuple(x.shape)), atol=2e-2)


def _linear_advice(error: str) -> str | None:
    """05.5.2's advice for a ``RuntimeError``: the two branches multiplied with @ (w3(x) transposed
    to fit: a product over T, whose width matches neither side of an nn.Linear weight), or x @ weight
    without the transpose (x's width is the weight's in, its last axis)."""
    shapes = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", error)
    # w1(x) @ w3(x): two B×T×m tensors; with w3(x) transposed, B×T×T reaches w2, whose T is no width
    if "batch2" in error or (shapes and shapes.group(2) != shapes.group(4)):
        return say("the two branches are multiplied entry by entry, silu(w1(x)) * w3(x), not with @ (a "
                   "matrix product)")
    if "must match the size of tensor" in error:  # w2(silu(w1(x))) * w3(x): d features against m
        return say("w2 maps the product back to d, w2(silu(w1(x)) * w3(x)); w2 applied to the gate alone "
                   "gives d features, which do not multiply w3(x)'s m")
    if "cannot be multiplied" in error:
        return say("an nn.Linear weight is out×in, x @ weight needs its transpose; call the layer, "
                   "self.w1(x)")
    return None


def _check_decoder_block(fn: Callable[..., Any], g: torch.Generator) -> None:
    d = 8
    weights = [torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(2)]
    attention = lambda y: torch.tanh(y @ weights[0])
    feed_forward = lambda y: torch.sin(y @ weights[1])
    attention_norm = lambda y: y * 0.5 + 1.0
    ffn_norm = lambda y: y * y * 0.25
    x = torch.randn(2, 3, d, generator=g)
    h_post = attention_norm(x + attention(x))
    h = x + attention(attention_norm(x))
    hints = {say("post-norm (norm after the sum); the block is pre-norm"):
             ffn_norm(h_post + feed_forward(h_post)),
             say("an overwritten residual: the second sum must add h, the first sum's result"):
             attention(attention_norm(x)) + feed_forward(ffn_norm(h)),
             say("the second sum adding x instead of h"): x + feed_forward(ffn_norm(h)),
             say("y adds feed_forward's output to ffn_norm(h), the normalised h: the second residual carries "
                 "h itself, y = h + feed_forward(ffn_norm(h))"): ffn_norm(h) + feed_forward(ffn_norm(h)),
             **block_hints(x, attention, feed_forward, attention_norm, ffn_norm)}
    before = x.clone()
    calls = {"attention": 0, "feed_forward": 0, "attention_norm": 0, "ffn_norm": 0}

    def counted(label: str, part: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
        def run(y: Tensor) -> Tensor:
            calls[label] += 1
            return part(y)
        return trusted(run)

    try:
        got = call_part("decoder_block", fn, x, counted("attention", attention),
                        counted("feed_forward", feed_forward), counted("attention_norm", attention_norm),
                        counted("ffn_norm", ffn_norm))
    except PartError as err:
        if isinstance(err.__cause__, TypeError) and "positional argument" in str(err.__cause__):
            raise PartError("decoder_block", say(
                "decoder_block gave a part more than one tensor ({error}): each part here takes one, and "
                "the block's attention takes x alone, attention(attention_norm(x)); the layer hands it cos, "
                "sin and the mask itself", error=err.__cause__)) from None
        raise
    if not torch.equal(x, before):
        raise PartError("decoder_block", say("decoder_block changed x in place: write h = x + ..., not "
                                             "x += ..."))
    expected = reference_decoder_block(x, attention, feed_forward, attention_norm, ffn_norm)
    compare("decoder_block", got, expected, say("output with made-up attention, feed-forward and norms"),
            hints=hints)
    half = x.to(torch.bfloat16)  # the whole model in bfloat16: the block keeps x's dtype
    keeping = [lambda y, part=part: part(y.float()).to(y.dtype)  # made-up parts that keep y's dtype
               for part in (attention, feed_forward, attention_norm, ffn_norm)]
    got = call_part("decoder_block", fn, half, *(trusted(part) for part in keeping))
    if isinstance(got, Tensor) and got.dtype != half.dtype:
        raise PartError("decoder_block", say("decoder_block maps a {shape} {dtype} tensor to one of that "
                                             "shape and dtype, not {got}: keep x's dtype (no .float())",
                                             shape=tuple(half.shape), dtype=half.dtype, got=got.dtype))
    compare("decoder_block", got, reference_decoder_block(half, *keeping),
            say("output on a bfloat16 x with made-up parts that keep its dtype"), atol=2e-2)
    again = {label: n for label, n in calls.items() if n != 1}
    if again:  # the right output, yet a part run twice: a model's attention costs twice as much
        runs = ", ".join(f"{label} ×{n}" for label, n in again.items())
        raise PartError("decoder_block", say(
            "decoder_block ran {runs} (calls of each part), with the right output: each part runs once per "
            "forward, and a print that calls a part (print(attention_norm(x).shape)) runs it again, as does "
            "computing a part's value twice; print or reuse a value you kept, e.g. the variable: call each "
            "part exactly once, h = x + attention(attention_norm(x)), then h + feed_forward(ffn_norm(h))",
            runs=runs))


def _random_valid(g: torch.Generator, B: int = 4, T_k: int = 7) -> Tensor:
    lengths = torch.randint(1, T_k + 1, (B,), generator=g)
    lengths[0] = T_k - 3  # at least one padded row
    lengths[-1] = lengths[-1].clamp(max=T_k - 2)  # and the last one right-padded, below
    valid = torch.arange(T_k)[None, :] >= (T_k - lengths)[:, None]  # left padding
    valid[-1] = valid[-1].flip(0)  # and one right-padded row
    return valid


def _check_token_positions(fn: Callable[..., Any], g: torch.Generator) -> None:
    for _ in range(2):
        valid = _random_valid(g)
        before = valid.clone()
        got = call_part("token_positions", fn, valid)
        fix = say("build a new tensor, never valid[...] = ... or valid.add_(...): the model still needs "
                  "valid (for the mask)")
        _left_alone("token_positions", fix, valid=(valid, before))
        from_first = say("positions counted from each row's first real token, arange(T) minus its index: "
                         "the padding before it gets negative positions, the padding after the last keeps "
                         "counting; count the real tokens, valid.cumsum(-1) - 1, raised to 0")
        first_real = valid.long().argmax(-1, keepdim=True)  # each row's first real token
        compare("token_positions", got, reference_token_positions(valid),
                say("positions for valid = {valid}", valid=valid.long().tolist()),
                hints={**positions_hints(valid), from_first: torch.arange(valid.shape[1]) - first_real})


def _mask_kind(got: object) -> str | None:
    """05.6.3: what a mask that is no boolean tensor holds (0s and 1s as integers or floats, other
    integers, or an additive float mask), or None for a boolean tensor or no tensor."""
    if not isinstance(got, Tensor) or got.dtype == torch.bool:
        return None
    zeros_and_ones = bool(((got == 0) | (got == 1)).all())
    if not got.is_floating_point():
        if zeros_and_ones:
            return say("0s and 1s as integers: keep the comparisons' booleans (no .long() or .int())")
        return say("an integer tensor")
    if zeros_and_ones:
        return say("a 0/1 float mask (a float triangle times valid): keep the triangle boolean "
                   "(dtype=torch.bool) and combine with &, causal & valid")
    return say("an additive float mask")


def _check_causal_padding_mask(fn: Callable[..., Any], g: torch.Generator) -> None:
    valid = _random_valid(g)
    for query_len in (valid.shape[1], 3, 1):
        expected = padding_to_attention(valid, query_len)
        before = valid.clone()
        got = _call_broadcasting("causal_padding_mask", fn, say(
            "valid is B×T_k, line it up as B×1×1×T_k, valid[:, None, None, :], to combine it with the T×T_k "
            "triangle"), valid, query_len)
        _left_alone("causal_padding_mask", say(
            "build new tensors, valid[:, None, None, :], never valid.unsqueeze_(...), valid.fill_(...) or "
            "valid[...] = ...: the caller still needs valid"), valid=(valid, before))
        kind = _mask_kind(got)
        if kind is not None:
            raise PartError("causal_padding_mask", say(
                "return a boolean tensor (True = may attend), got {dtype}: {kind}", kind=kind,
                dtype=got.dtype))
        compare("causal_padding_mask", got, expected,
                say("mask for valid = {valid}, query_len={query_len}", valid=valid.long().tolist(),
                    query_len=query_len),
                hints=mask_hints(valid, query_len))


def _loss_in_float32(got: object) -> object:
    """A float64 loss as float32: the exercise asks for "a 0-d float tensor", in any float dtype."""
    return got.float() if isinstance(got, Tensor) and got.dtype == torch.float64 else got


def _loss_advice(error: str) -> str | None:
    """05.6.4's advice for a ``RuntimeError``: B×(T-1)×V logits given to F.cross_entropy as they are,
    or ``.view`` on the slice logits[:, :-1] (not contiguous)."""
    if "view size is not compatible" in error:
        return say("a slice such as logits[:, :-1] is not contiguous, so .view fails on it: use .reshape, or "
                   ".contiguous().view(...)")
    if "Expected target size" in error:
        return say("F.cross_entropy takes the classes on dim 1, so flatten B×(T-1)×V logits to (B·(T-1))×V "
                   "and the labels to B·(T-1)")
    sizes = re.search(r"input batch_size \((\d+)\) to match target batch_size \((\d+)\)", error)
    if sizes is not None and int(sizes.group(1)) < int(sizes.group(2)):  # fewer logits than labels
        return say("the logits were shifted, the labels not: shift both, logits[:, :-1] against "
                   "labels[:, 1:]")
    if "batch_size" in error:
        return say("the logits and the targets do not pair up; position t predicts labels[:, t+1], so the "
                   "last position predicts nothing and the first label is never a target: logits[:, :-1] "
                   "against labels[:, 1:]")
    return None


def _check_shifted_loss(fn: Callable[..., Any], g: torch.Generator) -> None:
    logits = torch.randn(2, 5, 7, generator=g)
    labels = torch.randint(0, 7, (2, 5), generator=g)
    labels[0, :2] = -100
    before = {"logits": logits.clone(), "labels": labels.clone()}
    got = _loss_in_float32(_call_broadcasting("shifted_loss", fn, _loss_advice, logits, labels))
    _left_alone("shifted_loss", say("select or copy what you change (labels[:, 1:], .clone()), never "
                                    "labels[...] = ... or logits.sub_(...): the caller still needs them"),
                logits=(logits, before["logits"]), labels=(labels, before["labels"]))
    compare("shifted_loss", got, causal_lm_loss(logits, labels),
            say("loss on labels with ignored (-100) targets"), hints=loss_hints(logits, labels))
    pad = torch.randint(0, 7, (2, 5), generator=g)
    pad[1, -2:] = 0
    compare("shifted_loss", _loss_in_float32(call_part("shifted_loss", fn, logits, pad, 0)),
            causal_lm_loss(logits, pad, 0), say("loss with ignore_index=0"),
            hints={say("the targets equal to ignore_index are not counted: use the argument, not -100"):
                   causal_lm_loss(logits, pad),
                   say("the denominator counts the targets that are not -100, the loss those that are not "
                       "ignore_index: count with the argument too, (labels[:, 1:] != ignore_index)"):
                   F.cross_entropy(logits[:, :-1].reshape(-1, 7), pad[:, 1:].reshape(-1), ignore_index=0,
                                   reduction="sum") / (pad[:, 1:] != -100).sum()})
    nothing = torch.full((2, 5), -100)
    got = call_part("shifted_loss", fn, logits, nothing)
    if isinstance(got, int | float):
        raise PartError("shifted_loss", say(
            "nothing counted: the loss is still a 0-d tensor, torch.tensor(0.0) (training calls .backward() "
            "on it), not the Python {kind} {got!r}: divide the sum by the count raised to 1, "
            "count.clamp(min=1)",
            kind=type(got).__name__, got=got))
    compare("shifted_loss", _loss_in_float32(got),
            causal_lm_loss(logits, nothing),
            say("loss when no target is counted (must be 0.0, not NaN)"))


_CHECKS: dict[str, Callable[[Any, torch.Generator], None]] = {
    "RMSNorm": _check_rmsnorm, "rope_tables": _check_rope_tables, "apply_rope": _check_apply_rope,
    "repeat_kv": _check_repeat_kv, "gqa_attention": _check_gqa_attention, "SwiGLU": _check_swiglu,
    "decoder_block": _check_decoder_block, "token_positions": _check_token_positions,
    "causal_padding_mask": _check_causal_padding_mask, "shifted_loss": _check_shifted_loss,
}


def check_kind(name: str, part: object) -> None:
    """Raise :class:`PartError` unless a class part is an ``nn.Module`` class and the others callables."""
    if name in _CLASSES and not (isinstance(part, type) and issubclass(part, nn.Module)):
        raise PartError(name, say("must be a class derived from nn.Module, got {part!r}", part=part))
    if name not in _CLASSES and not callable(part):
        raise PartError(name, say("must be a function, got {part!r}", part=part))


def check_parts(parts: Mapping[str, object] | None = None, /, *, seed: int = 0, **more: object) -> list[str]:
    """Check each given part alone against ``tinyk``; return the names checked, in order.

    Raises :class:`PartError` (an ``AssertionError``) for the first part, in section
    order, that is a stub, crashes, or disagrees, naming the part and what differs.
    Parts are given as a mapping, as keywords, or both: ``check_parts(RMSNorm=RMSNorm)``.
    """
    given = {**(parts or {}), **more}
    reject_unknown(given)
    g = torch.Generator().manual_seed(seed)
    checked = []
    for name in PART_NAMES:
        if name in given:
            check_kind(name, given[name])
            try:
                _CHECKS[name](given[name], g)
            except PartError as err:
                raise diagnosed(err, given[name]) from None
            checked.append(name)
    return checked
