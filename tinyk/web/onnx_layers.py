"""A deep decoder's ONNX graph from the export of two of its layers (section 05.10's model for a page).

    model_proto = export_stacked(model, "scratch/", attention_layer=15, logits_to_keep=1)
    template = export_template(model, "scratch/")    # once, for several stacks of one config
    model_proto = export_stacked(model, "scratch/", attention_layer=15, template=template)

Every :class:`~tinyk.model.DecoderLayer` of a model runs the same code on its own weights, so
its graph is the same from one layer to the next. PyTorch's exporter traces all of them one by
one, and onnxscript's optimiser takes longer the more nodes the graph has: SmolLM2's 30 layers
cost minutes of one core, where a model of the same class and config with two layers exports in
seconds. :func:`export_stacked` exports that two-layer model with
:func:`tinyk.web.onnx_export.export_onnx` (a plain layer, then one that returns its attention
weights), then builds the ``L``-layer graph from it:

- the nodes outside the layers (the embedding, RoPE and the mask, the final norm, the head) once;
- layer ``i``'s nodes: a copy of the attention layer's if ``i`` is ``attention_layer``, else of
  the plain layer's, with their values renamed ``layers.i/<name>``, reading ``past_key_i`` and
  ``past_value_i``, writing ``present_key_i`` and ``present_value_i``, and reading the residual
  stream of layer ``i - 1``;
- layer ``i``'s weights: the model's own, each found in the two-layer graph by its values
  (the two-layer model is given distinct random weights, so no two of its tensors are equal;
  a weight stored transposed is put in transposed).

The result has the inputs and outputs of :func:`tinyk.web.onnx_export.input_names` and
:func:`~tinyk.web.onnx_export.output_names` for ``L`` layers and computes what ``export_onnx``'s
graph of the whole model computes: ``tests/test_onnx_web.py`` compares every output with what
:class:`~tinyk.web.onnx_export.DecoderForExport` computes in PyTorch, for a plain and a GGUF model
and with the attention layer first, in the middle and last.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, numpy_helper

from tinyk.interop.gguf_blocks import tensor_key
from tinyk.model import Transformer
from tinyk.web.onnx_export import SCOPES, export_onnx, input_names, output_names

__all__ = ["LAYER_INPUT", "export_stacked", "export_template", "stack_differences"]

TEMPLATE_LAYERS = 2  # layer 0: a plain layer; layer 1: the one that returns its attention
TEMPLATE_KEY = "tinyk.stack_template"  # the template's metadata: what it was made for (_template_key)
LAYER_INPUT = "attention_layer"  # a stack with attention_layer=None: the input that chooses the layer
CHOSEN = "chosen_weights"  # the chosen layer's weights, named in the stacked graph


def _template(model: Transformer) -> Transformer:
    """A model of ``model``'s class and config with two layers and distinct random weights."""
    template = type(model)(dataclasses.replace(model.config, n_layers=TEMPLATE_LAYERS)).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in template.parameters():
            p.copy_(torch.rand(p.shape, generator=generator) + 1.0)
    return template


def _functions(module: torch.nn.Module) -> dict[str, object]:
    """The functions set on one module instance (its seams), not its class's methods."""
    return {k: v for k, v in vars(module).items() if callable(v) and not isinstance(v, torch.nn.Module)}


def stack_differences(model: Transformer) -> list[str]:
    """What of ``model`` a two-layer model of its class and config would not have: a module of
    another class, a function swapped on one instance (a seam such as ``attend`` or
    ``token_positions``, which ``tinyk.learner.parts`` plugs a learner's parts into), other buffers (the
    RoPE tables), weights that are not float32. Empty: :func:`export_stacked` exports ``model``."""
    template = _template(model)
    pairs = [("", model, template)] + [(f"layers.{i}.", layer, template.layers[min(i, 1)])
                                       for i, layer in enumerate(model.layers)]
    found = []
    for prefix, ours, theirs in pairs:
        modules = dict(theirs.named_modules())
        for name, module in ours.named_modules():
            if prefix == "" and name.startswith("layers."):
                continue  # compared layer by layer
            other = modules.get(name)
            if other is None or type(module) is not type(other) or _functions(module) != _functions(other):
                found.append(f"{prefix}{name or 'model'}")
    found += [f"buffer {name}" for name, b in model.named_buffers(remove_duplicate=False)
              if not name.startswith("layers.") and not torch.equal(b, template.get_buffer(name))]
    found += [f"{name} ({p.dtype})" for name, p in model.named_parameters() if p.dtype != torch.float32]
    return found


def _owners(template: Transformer) -> dict[tuple, tuple[int | None, str, bool]]:
    """The key of each of the template's weights (as stored and transposed) -> (its layer or
    None, its name within that layer or the model, whether transposed)."""
    owners: dict[tuple, tuple[int | None, str, bool]] = {}
    named = [(None, name, p) for name, p in template.named_parameters() if not name.startswith("layers.")]
    named += [(t, name, p) for t, layer in enumerate(template.layers) for name, p in layer.named_parameters()]
    for layer, name, p in named:
        array = p.detach().numpy()
        owners[tensor_key(array)] = (layer, name, False)
        if array.ndim == 2:
            owners[tensor_key(array.T)] = (layer, name, True)
    return owners


def _layer_of(node: onnx.NodeProto) -> int | None:
    """The template layer a node was traced in, from the exporter's name scopes."""
    for prop in node.metadata_props:
        if prop.key == SCOPES:
            for t in range(TEMPLATE_LAYERS):
                if f"'model.layers.{t}'" in prop.value:
                    return t
    return None


class _Split:
    """The template graph's nodes by layer, the weights each layer owns, and the residual
    stream's values where the layers meet."""

    def __init__(self, graph: onnx.GraphProto, owners: dict[tuple, tuple[int | None, str, bool]]) -> None:
        self.weights: dict[str, tuple[int | None, str, bool]] = {}
        for t in graph.initializer:
            if t.data_type != TensorProto.FLOAT:
                continue
            if owner := owners.get(tensor_key(numpy_helper.to_array(t))):
                self.weights[t.name] = owner
        found = {(layer, name) for layer, name, _ in self.weights.values()}
        missing = {(layer, name) for layer, name, _ in owners.values()} - found
        if missing:
            raise ValueError(f"the two-layer graph holds no tensor for the weights "
                             f"{sorted(missing, key=str)}: the exporter changed them, so the layers "
                             f"cannot be given their own")
        lookups = [n.output[0] for n in graph.node if n.op_type == "Gather" and n.input[0] in self.weights
                   and self.weights[n.input[0]][1] == "tok_embeddings.weight"]
        if len(lookups) != 1:
            raise ValueError(f"the two-layer graph has {len(lookups)} lookups of the embedding: expected one")
        self.embedding = lookups[0]
        # A node traced in a layer belongs to it if it reads the residual stream, the layer's
        # weights or its cache, directly or not; the rest (the mask, RoPE's rows, shapes) the
        # optimiser may have merged across layers, and is the same for every layer.
        varies = {self.embedding} | {x.name for x in graph.input if x.name.startswith("past_")}
        varies |= {name for name, (layer, _, _) in self.weights.items() if layer is not None}
        self.layer: dict[int, int] = {}  # node index -> template layer (absent: outside the layers)
        produced_in: dict[str, int] = {}
        for k, node in enumerate(graph.node):
            t = _layer_of(node)
            if t is None or not varies & set(node.input):
                continue
            varies.update(node.output)
            self.layer[k] = t
            for out in node.output:
                produced_in[out] = t
        self.read_from = {t: {x for k, t_ in self.layer.items() if t_ == t for x in graph.node[k].input
                              if produced_in.get(x) not in (None, t)} for t in range(TEMPLATE_LAYERS)}
        outside = [n for k, n in enumerate(graph.node) if k not in self.layer]
        self.to_outside = {t: {x for n in outside for x in n.input if produced_in.get(x) == t}
                           for t in range(TEMPLATE_LAYERS)}
        self.produced_in = produced_in

    def residual(self, graph: onnx.GraphProto) -> tuple[str, str, str]:
        """The residual stream where the layers meet: into layer 0, from 0 into 1, out of 1."""
        into = [self.embedding] if any(self.embedding in graph.node[k].input for k, t in self.layer.items()
                                       if t == 0) else []
        between = sorted(self.read_from[1])
        shapes = {v.name: v.type for v in graph.value_info}
        out = sorted(x for x in self.to_outside[1] if between and shapes.get(x) == shapes.get(between[0]))
        if len(into) != 1 or len(between) != 1 or self.read_from[0] or self.to_outside[0] or len(out) != 1:
            raise ValueError(f"the two-layer graph's layers do not meet in one residual stream "
                             f"(into layer 0: {into}, from layer 0 into layer 1: {between}, out of "
                             f"layer 1: {out}): they cannot be stacked")
        return into[0], between[0], out[0]


def _copy_layer(graph: onnx.GraphProto, split: _Split, t: int, i: int, residual_in: str, residual_t: str,
                kept: set[str]) -> tuple[list[onnx.NodeProto], dict[str, str]]:
    """Template layer ``t``'s nodes as layer ``i``'s: the renamed nodes and the renaming."""
    rename = {residual_t: residual_in}
    for prefix in "past_key_", "past_value_", "present_key_", "present_value_":
        rename[f"{prefix}{t}"] = f"{prefix}{i}"
    for name, (layer, weight, transposed) in split.weights.items():
        if layer == t:
            rename[name] = f"model.layers.{i}.{weight}" + (".T" if transposed else "")
    nodes = []
    for k in sorted(k for k, t_ in split.layer.items() if t_ == t):
        node = copy.deepcopy(graph.node[k])
        for out in node.output:
            if out not in rename and out not in kept:
                rename[out] = f"layers.{i}/{out}"
        node.name = f"layers.{i}/{node.name}"
        node.input[:] = [rename.get(x, x) for x in node.input]
        node.output[:] = [rename.get(x, x) for x in node.output]
        del node.metadata_props[:]
        nodes.append(node)
    return nodes, rename


def _weights(model: Transformer, split: _Split, n_layers: int) -> list[TensorProto]:
    """The model's weights under the names :func:`_copy_layer` gives them, and the weights
    outside the layers under their names in the template."""
    tensors: dict[str, TensorProto] = {}
    for name, (layer, weight, transposed) in split.weights.items():
        targets = ([(name, model)] if layer is None else
                   [(f"model.layers.{i}.{weight}" + (".T" if transposed else ""), model.layers[i])
                    for i in range(n_layers)])
        for target, module in targets:
            if target not in tensors:
                array = module.get_parameter(weight).detach().float().numpy()
                array = np.ascontiguousarray(array.T if transposed else array)
                tensors[target] = numpy_helper.from_array(array, target)
    return list(tensors.values())


def _renamed_info(info: onnx.ValueInfoProto, name: str) -> onnx.ValueInfoProto:
    out = copy.deepcopy(info)
    out.name = name
    return out


def _template_key(model: Transformer, logits_to_keep: int) -> str:
    """What a two-layer export is made for: the model's class, its config but the depth, and
    ``logits_to_keep``."""
    config = {f.name: getattr(model.config, f.name) for f in dataclasses.fields(model.config)}
    config.pop("n_layers")
    return json.dumps([f"{type(model).__module__}.{type(model).__qualname__}", config, logits_to_keep],
                      sort_keys=True, default=str)


def export_template(model: Transformer, scratch: str | Path, *, logits_to_keep: int = 0) -> onnx.ModelProto:
    """The export of the two-layer model that :func:`export_stacked` builds ``model``'s graph
    from (the exporter's slow part: seconds), for several stacks of models of the same class
    and config (``template=``). ``scratch``: a folder for the export."""
    return _export_template(model, _template(model), scratch, logits_to_keep)


def _export_template(model: Transformer, template: Transformer, scratch: str | Path,
                     logits_to_keep: int) -> onnx.ModelProto:
    """:func:`export_template`, of ``template`` (``_template(model)``, built by the caller)."""
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        path = Path(folder) / "two_layers.onnx"
        export_onnx(template, path, attention_layers=[1], logits_to_keep=logits_to_keep,
                    external_data=True, keep_scopes=True)
        proto = onnx.load(str(path), load_external_data=True)
    onnx.helper.set_model_props(proto, {**{p.key: p.value for p in proto.metadata_props},
                                        TEMPLATE_KEY: _template_key(model, logits_to_keep)})
    return proto


def export_stacked(model: Transformer, scratch: str | Path, *, attention_layer: int | None,
                   logits_to_keep: int = 0, template: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """A graph that computes what :func:`tinyk.web.onnx_export.export_onnx`'s graph of ``model``
    with ``attention_layers=[attention_layer]`` computes, built from the export of a two-layer
    model of the same class and config (see the module). ``scratch``: a folder for the two-layer
    export; ``template``: that export, made once by :func:`export_template` (it is not changed),
    else made here. The model's weights are float32 initializers of the returned graph. A model
    that differs from a freshly built one of its class in more than its weights
    (:func:`stack_differences`: a swapped seam, other buffers, another dtype) is refused, and so
    is a template made for another class, config or ``logits_to_keep``.

    ``attention_layer=None``: every layer is a copy of the attention layer, and the graph takes one
    more input, :data:`LAYER_INPUT` (an int64 scalar), the layer whose weights ``attention`` holds
    (``1×B×H_q×T×T_k``; an index outside ``0..L-1`` gives no rows, ``1×0×H_q×T×T_k``): see
    :func:`_chosen_weights`."""
    n = model.config.n_layers
    if n < 3 or not (attention_layer is None or 0 <= attention_layer < n):
        raise ValueError(f"export_stacked: attention_layer={attention_layer} with n_layers={n}: needs "
                         f"n_layers >= 3 and 0 <= attention_layer < n_layers (export_onnx exports "
                         f"smaller models)")
    differences = stack_differences(model)
    if differences:
        raise ValueError(f"export_stacked: the model differs from a model of its class and config in "
                         f"{', '.join(differences)}: export_onnx exports it as it is")
    two_layers = _template(model)  # its weights name the template's tensors (_owners)
    if template is None:
        proto = _export_template(model, two_layers, scratch, logits_to_keep)
    else:
        made_for = {p.key: p.value for p in template.metadata_props}.get(TEMPLATE_KEY)
        if made_for != _template_key(model, logits_to_keep):
            raise ValueError(f"export_stacked: the template was made for {made_for}, not for "
                             f"{_template_key(model, logits_to_keep)}: make it with export_template")
        proto = copy.deepcopy(template)
    kept = [prop for prop in proto.metadata_props if prop.key != TEMPLATE_KEY]  # the stack's own
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    graph = proto.graph
    split = _Split(graph, _owners(two_layers))
    nodes = _stacked_nodes(graph, split, n, attention_layer)
    _set_io(graph, n, chosen=attention_layer is None)
    initializers = [t for t in graph.initializer if t.name not in split.weights] + _weights(model, split, n)
    del graph.node[:], graph.initializer[:]
    graph.node.extend(nodes)
    graph.initializer.extend(initializers)
    produced = {o for node in nodes for o in node.output}
    kept_info = [v for v in graph.value_info if v.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(kept_info)
    return proto


def _stacked_nodes(graph: onnx.GraphProto, split: _Split, n: int,
                   attention_layer: int | None) -> list[onnx.NodeProto]:
    """The nodes before the layers, ``n`` layers' copies, the nodes after them (their types
    added to ``graph.value_info``, each value once). ``attention_layer=None``: every layer's
    weights, and the choice among them (:func:`_chosen_weights`)."""
    into, between, out = split.residual(graph)
    kept = split.to_outside[1] - {out}  # the attention weights, read by the nodes of the output
    if attention_layer is None and len(kept) != 1:
        raise ValueError(f"the two-layer graph's attention layer hands {sorted(kept)} to the nodes after "
                         f"the layers: expected its weights alone")
    stream, layer_nodes, info = into, [], {v.name: v for v in graph.value_info}
    typed = set(info)
    for i in range(n):
        t = 1 if attention_layer is None or i == attention_layer else 0
        nodes, rename = _copy_layer(graph, split, t, i, stream, into if t == 0 else between,
                                    kept if attention_layer is not None else set())
        layer_nodes += nodes
        stream = rename[out if t == 1 else between]
        if attention_layer is None:
            chosen, stream = _chosen_weights(graph, i, rename[next(iter(kept))], stream)
            layer_nodes += chosen
        added = [_renamed_info(info[old], new) for old, new in rename.items()
                 if old in info and old in split.produced_in and new not in typed]
        typed.update(v.name for v in added)
        graph.value_info.extend(added)
    after_layers = _after(graph, split)
    before = [node for k, node in enumerate(graph.node) if k not in split.layer and k not in after_layers]
    after = [graph.node[k] for k in sorted(after_layers)]
    if attention_layer is None:
        weights = next(iter(kept))
        layer_nodes.append(onnx.helper.make_node("Concat", [f"layers.{i}/{CHOSEN}" for i in range(n)],
                                                 [f"{CHOSEN}"], name=CHOSEN, axis=0))
    for node in after:
        node.input[:] = [stream if x == out else x for x in node.input]
        if attention_layer is None:
            node.input[:] = [CHOSEN if x == weights else x for x in node.input]
    nodes = before + layer_nodes + after
    for node in nodes:
        del node.metadata_props[:]
    return nodes


def _chosen_weights(graph: onnx.GraphProto, i: int, weights: str,
                    stream: str) -> tuple[list[onnx.NodeProto], str]:
    """Layer ``i``'s part of the choice of :data:`LAYER_INPUT`: its weights ``weights``
    (``B×H_q×T×T_k``) sliced to their ``B`` rows if ``i`` is the chosen layer, else to none, as
    ``layers.i/chosen_weights``; a ``Concat`` of every layer's (:func:`_stacked_nodes`) is then the
    chosen layer's weights alone. The constants the nodes need are added to ``graph``.

    The residual stream ``stream`` (``B×T×d``) leaving the layer goes on through a ``Reshape`` to
    its own shape, its ``T`` read from the slice's shape: the next layer then waits for the slice.
    Without that, ONNX Runtime orders the slices after every layer (nothing else needs them before
    the end) and holds all 30 layers' weights until then: for SmolLM2 reading 1,024 tokens, in
    Python's ONNX Runtime on one thread, the process peaked at 2,227 MB without this against 1,204 MB
    with it (1,201 MB for a graph that returns one fixed layer). Returns the nodes and the stream's
    new name."""
    names = {"index": f"layers.{i}/index", "all": f"{CHOSEN}/all_rows", "none": f"{CHOSEN}/no_row"}
    for name, value in ((names["index"], np.array(i, np.int64)),
                        (names["all"], np.array([np.iinfo(np.int64).max], np.int64)),
                        (names["none"], np.array([0], np.int64))):
        if not any(t.name == name for t in graph.initializer):
            graph.initializer.append(numpy_helper.from_array(value, name))
    here = f"layers.{i}/{CHOSEN}"
    return [
        onnx.helper.make_node("Equal", [LAYER_INPUT, names["index"]], [f"{here}/is"], name=f"{here}/is"),
        onnx.helper.make_node("Where", [f"{here}/is", names["all"], names["none"]], [f"{here}/rows"],
                              name=f"{here}/rows"),
        onnx.helper.make_node("Slice", [weights, names["none"], f"{here}/rows", names["none"]], [here],
                              name=here),
        onnx.helper.make_node("Shape", [stream], [f"{here}/B"], name=f"{here}/B", end=1),
        onnx.helper.make_node("Shape", [here], [f"{here}/T"], name=f"{here}/T", start=2, end=3),
        onnx.helper.make_node("Shape", [stream], [f"{here}/d"], name=f"{here}/d", start=2),
        onnx.helper.make_node("Concat", [f"{here}/B", f"{here}/T", f"{here}/d"], [f"{here}/shape"],
                              name=f"{here}/shape", axis=0),
        onnx.helper.make_node("Reshape", [stream, f"{here}/shape"], [f"layers.{i}/stream"],
                              name=f"layers.{i}/stream"),
    ], f"layers.{i}/stream"


def _after(graph: onnx.GraphProto, split: _Split) -> set[int]:
    """The nodes outside the layers that read what a layer computed, directly or not."""
    late = {x for x, t in split.produced_in.items() if t is not None}
    after = set()
    for k, node in enumerate(graph.node):
        if k not in split.layer and late & set(node.input):
            after.add(k)
            late |= set(node.output)
    return after


def _set_io(graph: onnx.GraphProto, n: int, chosen: bool = False) -> None:
    """The graph's inputs and outputs for ``n`` layers, typed as the template's layer 0's
    (``chosen``: and the input :data:`LAYER_INPUT`, an int64 scalar)."""
    for field, names in (graph.input, input_names(n)), (graph.output, output_names(n)):
        by_name = {v.name: v for v in field}
        typed = [_renamed_info(by_name.get(name) or by_name[name.rsplit("_", 1)[0] + "_0"], name)
                 for name in names]
        del field[:]
        field.extend(typed)
    if chosen:
        graph.input.append(onnx.helper.make_tensor_value_info(LAYER_INPUT, TensorProto.INT64, []))
