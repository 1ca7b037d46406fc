"""Where a model assembled from the learner's parts first departs from ``tinyk``'s (section
05.10; :func:`first_divergence`, used by :mod:`tinyk.learner.parts`' checkpoint).

Both models run the same batch while every module and seam records what it is given and
what it returns; the first step, in ``tinyk``'s order, whose value differs at a real token
is named, with the first entry that differs, in the learner's language
(:func:`tinyk.translations.package_catalogue.say`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from tinyk.learner.part_compare import first_off
from tinyk.model import Transformer
from tinyk.translations.package_catalogue import say

__all__ = ["first_divergence"]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)

# A recorded step: (label, its input, its output, the dims of each that count positions).
_Dims = tuple[tuple[int, ...], tuple[int, ...]]
_Record = tuple[str, Tensor | None, Tensor, tuple[int, ...], tuple[int, ...]]


def _recorder(model: Transformer) -> tuple[list[_Record], Callable[[], None]]:
    """Record, in the order they run, what ``model``'s modules and seams are given and
    return (section 05.10); returns the records and a function that removes the recording."""
    records: list[_Record] = []
    undo: list[Callable[[], None]] = []

    def keep(label: str, given: object, value: object, dims: _Dims) -> None:
        if isinstance(value, Tensor):
            given = given.detach() if isinstance(given, Tensor) else None
            records.append((label, given, value.detach(), *dims))

    def hook(label: str, module: nn.Module) -> None:
        handle = module.register_forward_hook(
            lambda _m, args, out: keep(label, args[0] if args else None, out, ((1,), (1,))))
        undo.append(handle.remove)

    def seam(owner: object, attr: str, labels: tuple[str, ...], dims: _Dims) -> None:
        had = attr in owner.__dict__
        inner = getattr(owner, attr)  # swapped in for this instance, or the class's own

        def recording(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            values = out if isinstance(out, tuple) else (out,)
            for i, (label, value) in enumerate(zip(labels, values[:len(labels)], strict=False)):
                keep(label, args[i] if i < len(args) else None, value, dims)
            return out

        setattr(owner, attr, recording)
        undo.append(lambda: setattr(owner, attr, inner) if had else delattr(owner, attr))

    _record_steps(model, hook, seam)

    def remove() -> None:
        for step in reversed(undo):
            step()

    return records, remove


def _record_steps(model: Transformer, hook: Callable[[str, nn.Module], None],
                  seam: Callable[[object, str, tuple[str, ...], _Dims], None]) -> None:
    """Put ``hook`` on each of ``model``'s modules and ``seam`` on each seam, in the order
    they run, each with the label a learner reads and the dims that count positions."""
    seam(model, "token_positions", (say("the token positions (token_positions)"),), ((1,), (1,)))
    seam(model, "causal_padding_mask", (say("the attention mask (causal_padding_mask)"),), ((1,), (2, 3)))
    hook(say("the token embeddings"), model.tok_embeddings)
    for i, layer in enumerate(model.layers):
        at = say("layer {i}", i=i)
        hook(say("{at}, the norm before attention (RMSNorm)", at=at), layer.attention_norm)
        attention = layer.attention
        rotated = (say("{at}, attention: q after RoPE (apply_rope)", at=at),
                   say("{at}, attention: k after RoPE (apply_rope)", at=at))
        seam(attention, "apply_rope", rotated, ((1,), (1,)))
        repeated = say("{at}, attention: k or v repeated for the groups (repeat_kv)", at=at)
        seam(attention, "repeat_kv", (repeated,), ((1,), (1,)))
        seam(attention, "attend", (say("{at}, attention: the weighted values (gqa_attention)", at=at),),
             ((2,), (2,)))
        hook(say("{at}, attention's output", at=at), attention)
        hook(say("{at}, the norm before the MLP (RMSNorm)", at=at), layer.ffn_norm)
        hook(say("{at}, the MLP (SwiGLU)", at=at), layer.feed_forward)
        hook(say("{at}, the layer's output (decoder_block)", at=at), layer)
    hook(say("the final norm (RMSNorm)"), model.norm)
    hook(say("the logits"), model.output)
    seam(model, "shifted_loss", (say("the loss (shifted_loss)"),), ((1,), ()))


def _departure(got: Tensor, ref: Tensor, dims: tuple[int, ...], valid: Tensor | None, atol: float) -> str:
    """How ``got`` departs from ``ref`` where it counts ('' when it does not): only at real
    tokens when ``valid`` (``B×T``) says which they are (a padded slot may hold any number,
    but not NaN, which the next layer spreads to the real tokens)."""
    if got.shape != ref.shape:
        return say("shape {got} instead of {expected}", got=tuple(got.shape), expected=tuple(ref.shape))
    if got.dtype != ref.dtype:
        return say("dtype {got} instead of {expected}", got=got.dtype, expected=ref.dtype)
    if ref.is_floating_point():
        diff = (got.double() - ref.double()).abs()
        off = diff > atol * (1 + ref.double().abs())
    else:
        diff, off = None, got != ref
    if valid is not None and dims and ref.ndim and ref.shape[0] == valid.shape[0]:
        for dim in dims:
            if ref.ndim > dim and ref.shape[dim] == valid.shape[1]:
                shape = [1] * ref.ndim
                shape[0], shape[dim] = valid.shape
                off = off & valid.view(shape)
    if ref.is_floating_point():  # a NaN counts even in a padded slot: it spreads to real tokens
        off = off | (got.isnan() & ~ref.isnan())
    if not bool(off.any()):
        return ""
    if diff is None:
        largest = ""
    elif bool(diff[off].isnan().any()):
        largest = say("NaN in {n} entries where tinyk has numbers; ", n=int(diff[off].isnan().sum()))
    else:
        largest = say("max |difference| {largest:.3g}; ", largest=float(diff[off].max()))
    return largest + first_off(got, ref, off)


def first_divergence(model: Transformer, base: Transformer, input_ids: Tensor,
                     attention_mask: Tensor | None = None, labels: Tensor | None = None, *,
                     atol: float = 1e-4) -> str:
    """Where ``model`` (the learner's parts, :func:`build_model`) first departs from
    ``base`` (``tinyk``'s own) on one forward pass, or '' when nothing does (section 05.10).

    Both models run ``input_ids`` (with ``attention_mask`` and ``labels`` when given) while
    every module and seam records what it returns: the token positions and the mask, then
    layer by layer the norm, q and k after RoPE, the repeated k and v, the weighted values,
    attention's output, the second norm, the MLP and the layer's output, then the final norm,
    the logits and the loss. The first of them, in ``tinyk``'s order, that differs beyond
    ``atol`` (relative to the size of the value) at a real token is named, with the first
    entry that differs: ``"layer 0, attention: q after RoPE (apply_rope): max |difference|
    ..."``. A value the learner's code never makes (a seam its own code goes around) is
    skipped.
    """
    runs = []
    for m in (model, base):
        records, remove = _recorder(m)
        try:
            with torch.no_grad():
                m(input_ids, attention_mask, labels=labels)
        finally:
            remove()
        runs.append(records)
    valid = None if attention_mask is None else attention_mask.bool()
    mine, ours = runs
    used = [False] * len(mine)
    labels_ours = {record[0] for record in ours}
    for label, given, ref, in_dims, out_dims in ours:
        index = next((i for i, record in enumerate(mine) if record[0] == label and not used[i]), None)
        if index is None:
            continue
        used[index] = True
        _, their_given, got, _, _ = mine[index]
        found = _departure(got, ref, out_dims, valid, atol)
        if not found:
            continue
        # values only the learner's run made on the way (tinyk's fused attention never
        # calls repeat_kv, say): the difference may come from them
        extra = list(dict.fromkeys(record[0] for record in mine[:index] if record[0] not in labels_ours))
        fed = _departure(their_given, given, in_dims, valid, atol) \
            if given is not None and their_given is not None else ""
        return _named(label, extra, fed, found)
    return ""


def _named(step: str, extra: list[str], fed: str, found: str) -> str:
    """The sentence naming the first step that departs: ``found``, how it departs, or ``fed``,
    how its input does (right or wrong, it was given something else: the code that calls it
    differs), after the ``extra`` steps only the learner's run made."""
    after = say(" (after {steps}, which tinyk's own run does not make)", steps=say("; ").join(extra)) \
        if extra else ""
    if fed:
        return say("{step}{after} is given a different input than in tinyk ({fed}): the code that calls it "
                   "differs (in a layer, your decoder_block, if the model runs it)", step=step, after=after,
                   fed=fed)
    return say("{step}{after}: {found}", step=step, after=after, found=found)

