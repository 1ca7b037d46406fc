"""The decoder as an ONNX graph, for a page that runs it without Python (sections 05.3 to 05.7).

    python -m tinyk.web.onnx_export --out DIR     # the 05.7 model: DIR/tiny.onnx and DIR/tiny.json

    program = export_onnx(model, "model.onnx", attention_layers=[3])

The book build writes the 05.7 files into each edition's ``_static/models/``
(``book/_ext/tinyk_book.py``), so a page can load them from the site itself.

:class:`DecoderForExport` wraps a :class:`tinyk.model.Transformer` and runs **its** steps:
``rope_and_mask`` (05.6), every :class:`~tinyk.model.DecoderLayer` (05.5) with its
``Attention`` and that module's seams (``apply_rope`` 05.3, ``attend``, ``repeat_kv`` 05.4),
``kept_positions``, the final norm and the tied head (05.6). Nothing of the model's arithmetic is
written again here, so a change to the model changes the export. Every layer attends by the
hand-written branch of ``attend`` (``attention_by_hand``; see :func:`_attention_for_export`
for why), which computes what the ``scaled_dot_product_attention`` branch computes. PyTorch's dynamo exporter
(``torch.onnx.export(..., dynamo=True)``) traces it into one graph with dynamic batch,
length and cache length. What the graph leaves out is ``Transformer._check_inputs``: it
reads token values (a data-dependent branch that cannot be traced), so a caller of the
graph checks its ids itself (``0 <= id < vocab_size``, ``past + T <= max_seq_len``).

Inputs and outputs of the graph (``L`` layers, ``P`` cached tokens, ``T_k = P + T``;
names in :func:`input_names` and :func:`output_names`):

- ``input_ids``: ``B×T`` int64; ``attention_mask``: ``B×T_k`` int64, 1 for a real token,
  0 for padding, cached tokens included. The graph always takes a mask (all ones when
  nothing is padded), so each row's RoPE positions count its real tokens, as in ``tinyk``.
- ``past_key_i``, ``past_value_i``: ``B×P×H_kv×d_h`` float, the layout of
  :class:`tinyk.generation.KVCache` (unexpanded: GQA's saving). ``P = 0`` for a prompt.
- ``logits``: ``B×T×V`` (or the last ``k`` positions with ``logits_to_keep=k``);
- ``present_key_i``, ``present_value_i``: ``B×T_k×H_kv×d_h``, the next call's past;
- ``attention``: ``N×B×H_q×T×T_k``, the softmax weights of the ``N`` layers chosen by
  ``attention_layers``, in that order (rows of padding queries are zeros);
- ``rope_positions``: ``B×T`` int64, the position each token was rotated for;
- ``rope_angles``: ``B×T×d_h/2``, the angle by which pair ``i`` of that token was turned,
  ``atan2(sin, cos)`` of the very table rows the model used: ``t·ω_i`` wrapped to ``(-π, π]``;
- with ``panels=True`` (the 05.7 model's graph), :data:`PANELS`: the scaled scores of the
  ``attention`` layers before the mask, the mask added to them and the residual stream's norm
  per token after the embedding and after each layer (:func:`output_names`).

How much attention to return is a size decision: ``N·B·H_q·T·T_k`` floats per call. All
layers of the tiny model (2 layers, 4 heads) at 64 tokens are 128 KB. SmolLM2-135M has 30
layers of 9 heads: all of them for a 256-token prompt would be 71 MB per call, one layer
2.4 MB, so a page exports one chosen layer of a large model (the default for models with
more than :data:`ALL_LAYERS_UP_TO` layers is the middle layer).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from tinyk.model import Attention, Transformer

__all__ = ["ALL_LAYERS_UP_TO", "EXPORT_TOOLS", "PANELS", "SCOPES", "GraphCache", "DecoderForExport",
           "default_attention_layers", "input_names", "output_names", "export_onnx", "files_stamp",
           "course_model_current", "course_model_stamp", "course_model_manifest", "export_course_model",
           "main"]

EXPORT_TOOLS = ("torch", "onnx", "onnxscript")  # their versions are in a stamp
SCOPES = "pkg.torch.onnx.name_scopes"  # a node's metadata entry: the modules it was traced in
ALL_LAYERS_UP_TO = 4  # models with at most this many layers return every layer's attention


class GraphCache:
    """The graph's KV cache: past keys/values come in as inputs, present ones go out (05.4).

    Implements :class:`tinyk.model.KVCacheProtocol`, so each ``Attention`` writes to it as it
    writes to :class:`tinyk.generation.KVCache`; ``update`` appends this call's keys and
    values to the past ones (``torch.cat`` on the length axis) instead of writing into a
    preallocated buffer, because a graph returns new tensors rather than filling old ones.
    """

    def __init__(self, past_keys: Sequence[Tensor], past_values: Sequence[Tensor]) -> None:
        self.past_keys, self.past_values = list(past_keys), list(past_values)
        self.present_keys: list[Tensor | None] = [None] * len(self.past_keys)
        self.present_values: list[Tensor | None] = [None] * len(self.past_values)

    @property
    def length(self) -> int:
        """Tokens stored before this call: ``P`` (a symbolic size while tracing)."""
        return self.past_keys[0].shape[1]

    def update(self, layer_id: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Past ``B×P×H_kv×d_h`` and new ``B×T×H_kv×d_h`` -> all ``B×T_k×H_kv×d_h``."""
        keys = torch.cat([self.past_keys[layer_id], k], dim=1)  # B×T_k×H_kv×d_h
        values = torch.cat([self.past_values[layer_id], v], dim=1)
        self.present_keys[layer_id], self.present_values[layer_id] = keys, values
        return keys, values

    def advance(self, n_tokens: int) -> None:
        """Nothing to count: the next call's ``P`` is the length of the present tensors."""


def _attention_weights(attention: Attention, q: Tensor, k: Tensor, mask: Tensor | None) -> Tensor:
    """``softmax(q kᵀ / sqrt(d_h))`` of one layer, by the model's own hand-written path (05.4).

    ``q``: ``B×H_q×T×d_h``, ``k``: ``B×H_kv×T_k×d_h``, as ``Attention.attend`` receives them.
    ``attention_by_hand`` returns ``weights @ values``; with the identity as the values
    (``T_k×T_k`` for every head) that product is the weights themselves, exactly: every
    entry is one weight times 1 plus zeros. Returns ``B×H_q×T×T_k``.
    """
    k = attention.repeat_kv(k.transpose(1, 2), attention.n_rep).transpose(1, 2)  # B×H_q×T_k×d_h
    key_len = k.shape[-2]
    identity = torch.eye(key_len, dtype=q.dtype, device=q.device).expand(*k.shape[:2], key_len, key_len)
    return attention.attention_by_hand(q, k, identity, mask)  # B×H_q×T×T_k


class _KeptWeights(nn.Module):
    """Stands in for one layer's ``attn_dropout`` during a call of :class:`DecoderForExport`.

    ``attention_by_hand`` passes the softmax weights through ``attn_dropout`` on their way to the
    product with the values: this module keeps them (``store[layer]``) and hands them on to the
    layer's own dropout. The graph then returns the very tensor the layer multiplies by its values:
    no second softmax and no product by an identity matrix (``T·T_k²`` multiplications per head,
    seconds for a 1,024-token prompt in a page)."""

    def __init__(self, dropout: nn.Module, store: dict[int, Tensor], layer: int) -> None:
        super().__init__()
        self.dropout, self.store, self.layer = dropout, store, layer

    def forward(self, weights: Tensor) -> Tensor:
        self.store[self.layer] = weights
        return self.dropout(weights)


def _scaled_scores(attention: Attention, q: Tensor, k: Tensor) -> Tensor:
    """``q kᵀ / sqrt(d_h)`` of one layer, before the mask (``B×H_q×T×T_k``): the product
    ``attention_by_hand`` starts from, written as it writes it (the exporter's optimiser computes
    the two once)."""
    k = attention.repeat_kv(k.transpose(1, 2), attention.n_rep).transpose(1, 2)  # B×H_q×T_k×d_h
    return (q @ k.transpose(-2, -1)) / math.sqrt(attention.head_dim)


@contextmanager
def _attention_for_export(model: Transformer, layers: Sequence[int],
                          scores: dict[int, Tensor] | None = None) -> Iterator[dict[int, Tensor]]:
    """For one call: every layer attends by the hand-written branch of ``attend``, and the
    chosen layers also store their weights (through :class:`_KeptWeights`; a layer whose
    ``attend`` is a learner's that does not pass them through ``attn_dropout``: computed by
    :func:`_attention_weights`) and, given ``scores``, their scaled scores. Everything is put back
    afterwards, whatever it was (a learner's ``attend`` from ``tinyk.learner.parts`` included).

    Why the hand-written branch (05.4): ONNX's translation of ``scaled_dot_product_attention``
    (onnxscript 0.7) fills blocked scores with the smallest float instead of ``-inf``, so a
    padding query that may see no key averages every value instead of giving PyTorch's
    zeros; ``attention_by_hand`` zeros such rows, and its arithmetic translates op by op.
    """
    weights: dict[int, Tensor] = {}
    saved: list[tuple[Attention, bool, Any, nn.Module]] = []
    for i, layer in enumerate(model.layers):
        attention = layer.attention
        saved.append((attention, attention.flash, attention.__dict__.get("attend"), attention.attn_dropout))
        attention.flash = False
        if i not in layers:
            continue
        attention.attn_dropout = _KeptWeights(attention.attn_dropout, weights, i)
        original = attention.attend

        def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, i: int = i,
                   attention: Attention = attention, original: Any = original) -> Tensor:
            out = original(q, k, v, mask)
            if i not in weights:
                weights[i] = _attention_weights(attention, q, k, mask)
            if scores is not None:
                scores[i] = _scaled_scores(attention, q, k)
            return out

        attention.attend = attend  # type: ignore[method-assign]
    try:
        yield weights
    finally:
        for attention, flash, own_attend, dropout in saved:
            attention.flash = flash
            attention.attn_dropout = dropout
            if own_attend is not None:
                attention.attend = own_attend  # type: ignore[method-assign]
            elif "attend" in attention.__dict__:
                del attention.attend  # back to the class's method


def default_attention_layers(n_layers: int) -> tuple[int, ...]:
    """Every layer up to :data:`ALL_LAYERS_UP_TO` layers, else the middle one."""
    return tuple(range(n_layers)) if n_layers <= ALL_LAYERS_UP_TO else (n_layers // 2,)


def _checked_layers(layers: Sequence[int] | None, n_layers: int) -> tuple[int, ...]:
    if layers is None:
        return default_attention_layers(n_layers)
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
        raise TypeError(f"attention_layers={layers!r}: must be a sequence of layer indices, "
                        f"e.g. [0] or (0, {n_layers - 1})")
    chosen = tuple(layers)
    if not chosen:
        raise ValueError("attention_layers=(): choose at least one layer whose attention weights "
                         "the graph returns, or None for the default")
    for i in chosen:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"attention_layers holds {i!r}: each entry must be an int layer index")
        if not 0 <= i < n_layers:
            raise ValueError(f"attention_layers holds {i}: the model has {n_layers} layers, so an "
                             f"index must satisfy 0 <= index <= {n_layers - 1}")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"attention_layers={list(chosen)} names a layer twice: each layer once")
    return chosen


class DecoderForExport(nn.Module):
    """A :class:`~tinyk.model.Transformer` with the graph's inputs and outputs (see the module).

    ``attention_layers``: the layers whose weights the graph returns (``None``:
    :func:`default_attention_layers`). ``logits_to_keep``: ``0`` returns every position's
    logits, ``k > 0`` only the last ``k`` (a page that generates needs the last one, and
    ``T×V`` floats of a 49,152-token vocabulary are 200 KB per position). ``panels=True`` adds
    the outputs of the page's steps before the softmax and of the residual stream (see
    :func:`output_names`). Calling it in Python gives what the exported graph gives, without any
    input check.
    """

    def __init__(self, model: Transformer, attention_layers: Sequence[int] | None = None,
                 logits_to_keep: int = 0, panels: bool = False) -> None:
        super().__init__()
        if not isinstance(model, Transformer):
            raise TypeError(f"model is a {type(model).__name__}: DecoderForExport wraps a "
                            f"tinyk.model.Transformer")
        if isinstance(logits_to_keep, bool) or not isinstance(logits_to_keep, int) or logits_to_keep < 0:
            raise ValueError(f"logits_to_keep={logits_to_keep!r}: must be an int >= 0 (0 keeps "
                             f"every position)")
        self.model = model
        self.attention_layers = _checked_layers(attention_layers, model.config.n_layers)
        self.logits_to_keep = logits_to_keep
        self.panels = panels

    def forward(self, input_ids: Tensor, attention_mask: Tensor, past_keys: Sequence[Tensor],
                past_values: Sequence[Tensor]) -> tuple[Tensor, ...]:
        """Outputs in the order of :func:`output_names`: logits, attention, RoPE positions
        and angles, (with ``panels``) the scaled scores, the added mask and the residual
        stream's norms, then the present keys and values of every layer."""
        model = self.model
        cache = GraphCache(past_keys, past_values)
        B, T = input_ids.shape
        start_pos = cache.length
        valid = attention_mask == 1  # B×T_k; 1 = real token
        cos, sin, mask = model.rope_and_mask(valid, B, start_pos, T, input_ids.device)  # B×T×d_h/2
        scores: dict[int, Tensor] | None = {} if self.panels else None
        with _attention_for_export(model, self.attention_layers, scores) as weights:
            h = model.dropout(model.tok_embeddings(input_ids))  # B×T×d
            stream = [h]
            for layer in model.layers:
                h = layer(h, cos, sin, mask, cache)  # B×T×d
                stream.append(h)
        logits = model.output(model.norm(model.kept_positions(h, self.logits_to_keep)))  # B×T×V
        attention = torch.stack([weights[i] for i in self.attention_layers])  # N×B×H_q×T×T_k
        positions = model.token_positions(valid)[:, start_pos:]  # B×T
        angles = torch.atan2(sin, cos)  # B×T×d_h/2, in (-π, π]
        panels: tuple[Tensor, ...] = ()
        if scores is not None:
            panels = (torch.stack([scores[i] for i in self.attention_layers]),  # N×B×H_q×T×T_k
                      _added_mask(mask, h.dtype),  # B×1×T×T_k
                      torch.stack([torch.linalg.vector_norm(x, dim=-1) for x in stream]))  # (L+1)×B×T
        return (logits, attention, positions, angles, *panels, *cache.present_keys, *cache.present_values)


def _added_mask(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """What ``attention_by_hand`` puts in place of a blocked score, as a mask added to the scores:
    0 where a query may attend, the smallest float (about -3.4e38, in effect minus infinity) where it
    may not. ``mask``: boolean ``B×1×T×T_k``, True = may attend."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def input_names(n_layers: int) -> list[str]:
    """``input_ids, attention_mask, past_key_0..L-1, past_value_0..L-1``."""
    return (["input_ids", "attention_mask"] + [f"past_key_{i}" for i in range(n_layers)]
            + [f"past_value_{i}" for i in range(n_layers)])


PANELS = ("scores", "mask", "residual_norms")  # the outputs a graph exported with panels=True adds


def output_names(n_layers: int, panels: bool = False) -> list[str]:
    """``logits, attention, rope_positions, rope_angles, present_key_*, present_value_*``;
    ``panels=True``: :data:`PANELS` before the present keys, ``scores`` ``N×B×H_q×T×T_k`` (the
    scaled scores ``q kᵀ / sqrt(d_h)`` of the layers of ``attention``, before the mask), ``mask``
    ``B×1×T×T_k`` (what is added to them: 0, or the smallest float where a key is blocked) and
    ``residual_norms`` ``(L+1)×B×T`` (the residual stream's norm per token after the embedding and
    after each layer)."""
    return (["logits", "attention", "rope_positions", "rope_angles"] + (list(PANELS) if panels else [])
            + [f"present_key_{i}" for i in range(n_layers)]
            + [f"present_value_{i}" for i in range(n_layers)])


def _example_inputs(model: Transformer) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The call :func:`export_onnx` traces (ids, mask, past keys, past values) and the names
    of its dynamic axes."""
    config = model.config
    param = next(model.parameters())
    # Sizes that differ from each other (and from 0 and 1, which torch.export would fix as
    # constants), so the tracer keeps each one a symbol of its own.
    B, T, P = 2, 3, 4
    shape = (B, P, config.n_kv_heads, config.head_dim)  # B×P×H_kv×d_h
    past_keys = [torch.zeros(shape, dtype=param.dtype, device=param.device) for _ in model.layers]
    past_values = [torch.zeros(shape, dtype=param.dtype, device=param.device) for _ in model.layers]
    ids = torch.zeros(B, T, dtype=torch.long, device=param.device)
    mask = torch.ones(B, P + T, dtype=torch.long, device=param.device)
    past_dims = [{0: "batch", 1: "past"}] * config.n_layers
    dynamic = ({0: "batch", 1: "seq"}, {0: "batch", 1: "total"}, past_dims, past_dims)
    return (ids, mask, past_keys, past_values), dynamic


def export_onnx(model: Transformer, path: str | Path, *, attention_layers: Sequence[int] | None = None,
                logits_to_keep: int = 0, external_data: bool = False,
                keep_scopes: bool = False, panels: bool = False) -> torch.onnx.ONNXProgram:
    """Export ``model`` (evaluated in eval mode, its dtype kept) to the ONNX file ``path``.

    Dynamic sizes: ``batch``, ``seq`` (``T``), ``past`` (``P``, may be 0) and ``total``
    (``T_k``). ``external_data=True`` writes the weights beside the graph (``path.data``),
    needed above ONNX's 2 GB limit; the default keeps one self-contained file.
    ``keep_scopes=True`` keeps each node's module path (the metadata entry
    :data:`SCOPES`), which :mod:`tinyk.web.onnx_layers` reads. ``panels=True``: the outputs
    :data:`PANELS` too (:func:`output_names`).
    Returns the ``torch.onnx.ONNXProgram`` (its ``model_proto`` is the saved graph).
    """
    wrapper = DecoderForExport(model, attention_layers, logits_to_keep, panels).eval()
    config = model.config
    if config.max_seq_len < 8:
        raise ValueError(f"ModelConfig.max_seq_len={config.max_seq_len}: the export traces a "
                         f"call with 4 cached and 3 new tokens, so it needs max_seq_len >= 8")
    args, dynamic = _example_inputs(model)
    was_training = model.training
    model.eval()
    # The exporter's registry logs one line per torchvision operator when torchvision is
    # absent; the decoder uses none of them.
    registry_log = logging.getLogger("torch.onnx._internal.exporter._registration")
    log_level = registry_log.level
    registry_log.setLevel(logging.ERROR)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # "axis name batch will not be used": the exporter notices that every batch axis
            # is one symbol; the names stay as given.
            warnings.filterwarnings("ignore", message=".*axis name.*")
            warnings.filterwarnings("ignore", category=FutureWarning)
            program = torch.onnx.export(
                wrapper, args, dynamo=True,
                input_names=input_names(config.n_layers), output_names=output_names(config.n_layers, panels),
                dynamic_shapes=dynamic, verbose=False,
            )
    finally:
        model.train(was_training)
        registry_log.setLevel(log_level)
    assert program is not None  # dynamo=True always returns the program
    # Each node carries the exporter's debugging notes (its Python stack, the FX node): three
    # times the weights of the tiny model, and nothing a runtime reads.
    for node in program.model.graph.all_nodes():
        scopes = node.metadata_props.get(SCOPES)
        node.metadata_props.clear()
        if keep_scopes and scopes is not None:
            node.metadata_props[SCOPES] = scopes
    program.save(str(path), external_data=external_data)
    return program


def files_stamp(paths: Sequence[Path], tools: Sequence[str] = EXPORT_TOOLS, first: bytes = b"") -> str:
    """16 hex digits of a SHA-256 of ``first``, then each file's name and bytes, then each
    tool's installed version: what a graph's files were made from (:func:`course_model_stamp`,
    :func:`tinyk.web.onnx_web.web_model_stamp`)."""
    from importlib.metadata import version

    digest = hashlib.sha256(first)
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for tool in tools:
        digest.update(f"{tool}=={version(tool)}\0".encode())
    return digest.hexdigest()[:16]


def course_model_stamp() -> str:
    """A hash of everything the 05.7 graph is made from: the model's and the exporter's code,
    the tokenizer, the shipped weights and the versions of the export's tools."""
    from tinyk.training import CHECKPOINT

    package = Path(__file__).parents[1]
    return files_stamp([package / "model.py", package / "web" / "onnx_export.py", package / "data.py",
                        CHECKPOINT])


def course_model_manifest(model: Transformer, attention_layers: Sequence[int],
                          onnx_file: str) -> dict[str, Any]:
    """What a page needs beside the graph of the 05.7 model: config, vocabulary, names."""
    from tinyk.data import CharTokenizer

    config = model.config
    return {
        "model": "tinyk 05.7 (commutativity)",
        "onnx": onnx_file,
        "config": {f.name: getattr(config, f.name) for f in dataclasses.fields(config)},
        "tokenizer": {"kind": "characters", "vocab": list(CharTokenizer().vocab)},
        "inputs": input_names(config.n_layers),
        "outputs": output_names(config.n_layers, panels=True),
        "attention_layers": list(attention_layers),
        "dtype": "float32",
        "stamp": course_model_stamp(),
    }


def course_model_current(out_dir: str | Path) -> bool:
    """Whether ``out_dir`` holds the 05.7 model's graph and a manifest with the current
    :func:`course_model_stamp` (what :func:`export_course_model` keeps with ``reuse=True``)."""
    out = Path(out_dir)
    if not (out / "tiny.onnx").exists():
        return False
    try:
        stamp = json.loads((out / "tiny.json").read_text(encoding="utf-8")).get("stamp")
    except (OSError, json.JSONDecodeError, AttributeError):
        return False
    return stamp == course_model_stamp()


def export_course_model(out_dir: str | Path, *, reuse: bool = False) -> list[Path]:
    """Write the 05.7 model's graph and manifest into ``out_dir``: ``tiny.onnx``, ``tiny.json``.

    ``reuse=True`` keeps files whose manifest has the current :func:`course_model_stamp`
    (the book build calls this once per edition; only a change to the model, its weights
    or the tools exports again).
    """
    from tinyk.training import trained_course_model

    out = Path(out_dir)
    onnx_path, manifest_path = out / "tiny.onnx", out / "tiny.json"
    if reuse and course_model_current(out):
        return [onnx_path, manifest_path]
    out.mkdir(parents=True, exist_ok=True)
    model = trained_course_model()
    layers = default_attention_layers(model.config.n_layers)
    export_onnx(model, onnx_path, attention_layers=layers, panels=True)
    manifest = course_model_manifest(model, layers, onnx_path.name)
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [onnx_path, manifest_path]


def main(argv: list[str] | None = None, prog: str = "python -m tinyk.web.onnx_export") -> int:
    """``python -m tinyk.web.onnx_export --out DIR``: export the 05.7 model."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="export the 05.7 tiny model to ONNX, with its manifest")
    parser.add_argument("--out", type=Path, required=True, help="folder for tiny.onnx and tiny.json")
    args = parser.parse_args(argv)
    for path in export_course_model(args.out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
