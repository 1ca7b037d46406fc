"""A model's sizes as the course reads them (sections 05.1 and 05.6): every module's input and
output shapes during a real forward pass (:func:`trace_shapes`), and its parameters, counted
on the built model (:func:`count_parameters`, :func:`count_parameters_naive`) or from the
config's formulas without building it (:func:`parameter_budget`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from tinyk.model import ModelConfig

__all__ = ["ShapeRecord", "count_parameters", "count_parameters_naive", "format_trace", "parameter_budget",
           "trace_shapes"]


@dataclass
class ShapeRecord:
    """One module call: its dotted name, class, input tensor shapes and output shape."""

    name: str
    kind: str
    inputs: list[tuple[int, ...]]
    output: tuple[int, ...] | None


def _shapes(value: object) -> list[tuple[int, ...]]:
    if isinstance(value, Tensor):
        return [tuple(value.shape)]
    if isinstance(value, (tuple, list)):
        return [s for v in value for s in _shapes(v)]
    return []


def trace_shapes(model: nn.Module, *args: object, max_depth: int = 3, **kwargs: object) -> list[ShapeRecord]:
    """Run ``model(*args, **kwargs)`` once under ``no_grad`` and record each module's shapes.

    Modules with ``max_depth`` or more dots in their name are skipped: with the default 3,
    ``layers.0.attention`` is recorded and ``layers.0.attention.wq`` is not. Records come in
    the order modules finish: a layer's parts before the layer.
    """
    records: list[ShapeRecord] = []
    hooks = []
    for name, module in model.named_modules():
        if not name or name.count(".") >= max_depth:
            continue

        def hook(mod: nn.Module, inputs: tuple, output: object, name: str = name) -> None:
            out = output.logits if hasattr(output, "logits") else output
            shapes = _shapes(out)
            records.append(ShapeRecord(name, type(mod).__name__, _shapes(inputs)[:1],
                                       shapes[0] if shapes else None))

        hooks.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in hooks:
            h.remove()
    return records


def format_trace(records: list[ShapeRecord]) -> str:
    """A fixed-width table: module, class, input shape, output shape."""
    def fmt(shape: tuple[int, ...] | None) -> str:
        return "×".join(map(str, shape)) if shape else "-"

    rows = [("module", "class", "input", "output")]
    rows += [(r.name, r.kind, fmt(r.inputs[0] if r.inputs else None), fmt(r.output)) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def count_parameters(model: nn.Module) -> int:
    """Unique parameters: a tied matrix is counted once (course section 05.6)."""
    return sum(p.numel() for p in model.parameters())  # parameters() skips repeats


def count_parameters_naive(model: nn.Module) -> int:
    """Every parameter *name*: the tied embedding/head matrix is counted twice."""
    return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))


def parameter_budget(config: ModelConfig) -> dict[str, int]:
    """Parameter counts of a config, computed from the formulas without building it.

    Keys: ``embedding`` (``V·d``, shared with the head), ``attention`` (per layer:
    ``2·d·H_q·d_h + 2·d·H_kv·d_h``), ``mlp`` (per layer: ``3·d·m``), ``norms`` (all
    layers plus the final one), ``total`` (unique) and ``naive`` (head counted again).
    """
    d, d_h = config.dim, config.head_dim
    attention = 2 * d * config.n_heads * d_h + 2 * d * config.n_kv_heads * d_h
    mlp = 3 * d * config.mlp_hidden_dim
    norms = (2 * config.n_layers + 1) * d
    embedding = config.vocab_size * d
    total = embedding + config.n_layers * (attention + mlp) + norms
    return {"embedding": embedding, "attention": attention, "mlp": mlp, "norms": norms,
            "total": total, "naive": total + embedding}
