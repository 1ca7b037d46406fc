"""The GGUF file's own quantised blocks in place of an exported graph's float32 weights (section 05.10).

    weights = gguf_weights(model, gguf_path)      # the file's blocks, checked against the model
    ops = rewrite_graph(model_proto, model, weights)

:func:`tinyk.web.onnx_export.export_onnx` writes each ``nn.Linear`` of a model that
:func:`tinyk.interop.gguf.load_gguf` loaded as ``MatMul(x, Wᵀ)``, ``Wᵀ`` a float32 initializer; the
input embedding as ``Gather(E, ids)``; the tied head as ``MatMul(h, Transpose(E))``, ``E``
stored once. For SmolLM2-135M-Instruct those float32 matrices are 537.9 MB. :func:`rewrite_graph`
puts the file's bits in their place:

- a Q4_1 linear (``w = d·q + m`` per block of 32 weights, ``q`` in 0..15, ``d`` and ``m``
  fp16) becomes a blocked ``DequantizeLinear`` (opset 21) of the ``uint4`` ``K×N`` matrix ``q``
  with the scales ``d``, then ``MatMul``, plus the offset term ``Σ m·x``: the input's block sums
  (``B×T×K/32``, computed once for an input that several linears share) times ``mᵀ``. ``d·q``
  is exact in float32 and so is ``m``: only the order of the float sums differs from tinyk's.
- the Q8_0 embedding (``w = d·q``, ``q`` int8) becomes one blocked ``DequantizeLinear`` of the
  ``int8`` ``V×D`` table, read by the ``Gather`` and, for the head, by ``FusedMatMul(transB=1)``.

ONNX Runtime folds each ``DequantizeLinear`` of initializers into a float32 matrix once, when the
session loads, if the session sets ``session.disable_quant_qdq=1`` (:data:`SESSION_CONFIG`;
otherwise it fuses ``DequantizeLinear`` and ``MatMul`` into ``MatMulNBits``). The graph then
multiplies float32 matrices. Why not ``MatMulNBits``, which reads the 4-bit blocks at every
call: in onnxruntime-web 1.30's WebAssembly build (one thread) a 1536×576 4-bit ``MatMulNBits``
took 2.4 to 3.2 ms against 0.18 ms for the float32 ``MatMul`` (13 to 18 times slower), and the
8-bit head 87 to 188 ms against 5.7 ms. Its float zero points (``d·(q - z)``, ``z = -m/d``) are
not exact either: ``d·(q + m/d)`` differs from ``d·q + m`` in 63.9 M of SmolLM2's 106.2 M
linear weights, by a rounding.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from tinyk.interop.gguf import raw_tensors
from tinyk.interop.hf import permute_adjacent_to_half
from tinyk.model import Transformer

__all__ = ["BLOCK", "LINEARS", "OPSET", "SESSION_CONFIG", "GGUFWeights", "Q4Blocks", "Q8Blocks",
           "gguf_weights", "rewrite_graph", "tensor_key"]

BLOCK = 32  # weights per block, Q4_1 and Q8_0 alike
OPSET = 21  # blocked DequantizeLinear
MS_DOMAIN = "com.microsoft"  # FusedMatMul
SESSION_CONFIG = {"session.disable_quant_qdq": "1"}
# tinyk's linear (its path in a DecoderLayer) -> the GGUF tensor of block i, "blk.{i}.<name>.weight"
LINEARS = {"attention.wq": "attn_q", "attention.wk": "attn_k", "attention.wv": "attn_v",
           "attention.wo": "attn_output", "feed_forward.w1": "ffn_gate", "feed_forward.w3": "ffn_up",
           "feed_forward.w2": "ffn_down"}


@dataclass
class Q4Blocks:
    """One Q4_1 matrix of ``N`` rows (output features) by ``K`` columns: ``q`` (``N×K/32×32``
    uint8 in 0..15), ``d`` and ``m`` (``N×K/32`` float16)."""

    q: np.ndarray
    d: np.ndarray
    m: np.ndarray

    @classmethod
    def from_raw(cls, raw: np.ndarray) -> Q4Blocks:
        """``raw``: ``N × (K/32·20)`` bytes; each block is ``d``, ``m`` (fp16), then 16 bytes
        holding elements 0..15 in their low nibbles and 16..31 in their high ones."""
        blocks = np.ascontiguousarray(raw).reshape(raw.shape[0], -1, 20)
        packed = blocks[..., 4:20]
        q = np.concatenate([packed & 0x0F, packed >> 4], axis=-1)
        return cls(q=q, d=blocks[..., 0:2].copy().view(np.float16)[..., 0],
                   m=blocks[..., 2:4].copy().view(np.float16)[..., 0])

    def dequantised(self) -> np.ndarray:
        """``d·q + m`` in float32, ``N×K``, as ``gguf.quants.dequantize`` computes it."""
        d, m = self.d.astype(np.float32)[..., None], self.m.astype(np.float32)[..., None]
        w = d * self.q.astype(np.float32) + m
        return w.reshape(self.q.shape[0], -1)


@dataclass
class Q8Blocks:
    """The Q8_0 embedding: ``q`` (``V×D/32×32`` int8) and ``d`` (``V×D/32`` float16)."""

    q: np.ndarray
    d: np.ndarray

    @classmethod
    def from_raw(cls, raw: np.ndarray) -> Q8Blocks:
        """``raw``: ``V × (D/32·34)`` bytes; each block is ``d`` (fp16), then 32 int8 values."""
        blocks = np.ascontiguousarray(raw).reshape(raw.shape[0], -1, 34)
        d = blocks[..., 0:2].copy().view(np.float16)[..., 0]
        return cls(q=blocks[..., 2:34].copy().view(np.int8), d=d)

    def dequantised(self) -> np.ndarray:
        """``d·q`` in float32, ``V×D``."""
        return (self.q.astype(np.float32) * self.d.astype(np.float32)[..., None]).reshape(self.q.shape[0], -1)


@dataclass
class GGUFWeights:
    """The blocks of one file: each linear's by GGUF name, and the embedding's."""

    linears: dict[str, Q4Blocks]
    embedding: Q8Blocks


def _raw(tensors: dict, name: str, kind: str, path: Path) -> np.ndarray:
    if name not in tensors:
        raise ValueError(f"{path} has no tensor {name}: the model does not come from this file")
    found, raw = tensors[name]
    if found != kind:
        raise ValueError(f"{name} has GGML type {found}: the web export takes Q4_1 for every linear "
                         f"and Q8_0 for token_embd.weight, so {name} must be {kind}")
    return raw


def _check_same(gguf_name: str, stored: np.ndarray, weight: torch.Tensor, param: str, heads: int) -> None:
    """Raise unless the file's dequantised blocks are the model's float32 matrix, bit for bit."""
    if weight.dtype != torch.float32:
        raise ValueError(f"{param} is {weight.dtype}: the web export takes a float32 model")
    ours = weight.detach().cpu().numpy()
    if stored.shape == ours.shape and np.array_equal(stored, ours):
        return
    if stored.shape != ours.shape:
        raise ValueError(f"{gguf_name} is {stored.shape[0]}×{stored.shape[1]} in the file but the model's "
                         f"{param} is {ours.shape[0]}×{ours.shape[1]}: the model does not come from "
                         f"this file")
    if heads and torch.equal(permute_adjacent_to_half(torch.from_numpy(stored), heads), weight):
        raise ValueError(f"{param} holds {gguf_name}'s rows in the half-split order: the model was loaded "
                         f"with rope_layout='half'; export one loaded with rope_layout='adjacent'")
    wrong = stored != ours
    raise ValueError(f"{gguf_name}, dequantised, differs from the model's {param} at {int(wrong.sum())} of "
                     f"{wrong.size} weights (largest difference {np.abs(stored - ours).max():.3g}): the "
                     f"graph must hold the file's blocks exactly, so export the model as load_gguf loaded it")


def gguf_weights(model: Transformer, gguf_path: str | Path) -> GGUFWeights:
    """The file's blocks for every linear of ``model`` and for its tied embedding, each checked
    to dequantise to the model's float32 matrix exactly (a ``ValueError`` names the tensor)."""
    path = Path(gguf_path)
    tensors = raw_tensors(path)
    config = model.config
    heads = {"attention.wq": config.n_heads, "attention.wk": config.n_kv_heads}
    linears = {}
    for i, layer in enumerate(model.layers):
        for module, short in LINEARS.items():
            name = f"blk.{i}.{short}.weight"
            blocks = Q4Blocks.from_raw(_raw(tensors, name, "Q4_1", path))
            _check_same(name, blocks.dequantised(), layer.get_submodule(module).weight,
                        f"layers.{i}.{module}.weight", heads.get(module, 0))
            linears[name] = blocks
    embedding = Q8Blocks.from_raw(_raw(tensors, "token_embd.weight", "Q8_0", path))
    _check_same("token_embd.weight", embedding.dequantised(), model.tok_embeddings.weight,
                "tok_embeddings.weight", 0)
    if model.output.weight is not model.tok_embeddings.weight:
        raise ValueError("the model's output.weight is not its tok_embeddings.weight: the web export "
                         "stores the tied embedding once, for the lookup and the head")
    return GGUFWeights(linears, embedding)


def tensor_key(array: np.ndarray) -> tuple:
    """A lookup key for a float32 matrix: its shape and the hash of its bytes."""
    data = np.ascontiguousarray(array, dtype=np.float32)
    return data.shape, hashlib.sha256(data.tobytes()).hexdigest()


class _Builder:
    """New names, initializers and nodes for one graph. ``prep`` holds the nodes that read only
    initializers (casts of the fp16 scales, the dequantisations); they go first in the graph."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.names = {t.name for t in graph.initializer} | {i.name for i in graph.input}
        self.names |= {o for n in graph.node for o in n.output}
        self.initializers: list[TensorProto] = []
        self.prep: list[onnx.NodeProto] = []
        self.sums: dict[str, str] = {}  # an input of linears -> its block sums

    def name(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def node(self, op: str, inputs: list[str], out: str | None = None, **attrs: object) -> onnx.NodeProto:
        domain = MS_DOMAIN if op == "FusedMatMul" else ""
        return helper.make_node(op, inputs, [out or self.name(f"{op}_out")], name=self.name(f"{op}_node"),
                                domain=domain, **attrs)

    def constant(self, base: str, array: np.ndarray) -> str:
        name = self.name(base)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def dequantised(self, base: str, q: TensorProto, d16: np.ndarray, axis: int) -> str:
        """``DequantizeLinear(q, float(d16))`` blocked on ``axis``: the name of the float32 matrix."""
        self.initializers.append(q)
        scales = self.name(f"{base}.scales")
        self.prep.append(self.node("Cast", [self.constant(f"{base}.scales_fp16", d16)], scales,
                                   to=TensorProto.FLOAT))
        out = self.name(f"{base}.dq")
        self.prep.append(self.node("DequantizeLinear", [q.name, scales], out, axis=axis, block_size=BLOCK))
        return out

    def linear(self, x: str, y: str, blocks: Q4Blocks, base: str) -> list[onnx.NodeProto]:
        """``y = x·(d·q) + blocksum(x)·mᵀ``, ``x`` of shape ``B×T×K``."""
        N, nb, _ = blocks.q.shape
        K = nb * BLOCK
        q_kn = np.ascontiguousarray(blocks.q.reshape(N, K).T).reshape(-1)  # K×N, row-major
        packed = (q_kn[0::2] | (q_kn[1::2] << 4)).astype(np.uint8)  # ONNX uint4: first element low
        q = helper.make_tensor(self.name(f"{base}.q4"), TensorProto.UINT4, [K, N], packed.tobytes(), raw=True)
        w = self.dequantised(base, q, np.ascontiguousarray(blocks.d.T), axis=0)
        m_t = self.name(f"{base}.offsets")
        self.prep.append(self.node("Cast", [self.constant(f"{base}.offsets_fp16", blocks.m.T)], m_t,
                                   to=TensorProto.FLOAT))
        nodes = []
        if x not in self.sums:
            shape = self.constant(f"{base}.block_shape", np.array([0, 0, nb, BLOCK], dtype=np.int64))
            axis = self.constant(f"{base}.block_axis", np.array([-1], dtype=np.int64))
            nodes.append(self.node("Reshape", [x, shape]))  # B×T×K/32×32
            nodes.append(self.node("ReduceSum", [nodes[-1].output[0], axis], keepdims=0))  # B×T×K/32
            self.sums[x] = nodes[-1].output[0]
        nodes += [self.node("MatMul", [x, w]), self.node("MatMul", [self.sums[x], m_t])]
        return [*nodes, self.node("Add", [nodes[-2].output[0], nodes[-1].output[0]], y)]

    def embedding(self, blocks: Q8Blocks) -> str:
        """The ``V×D`` float32 table ``d·q``, dequantised from the ``int8`` blocks."""
        V = blocks.q.shape[0]
        q = numpy_helper.from_array(np.ascontiguousarray(blocks.q.reshape(V, -1)), self.name("embedding.q8"))
        return self.dequantised("embedding", q, blocks.d, axis=1)


def _replacements(graph: onnx.GraphProto, model: Transformer, weights: GGUFWeights, build: _Builder
                  ) -> tuple[dict[int, list[onnx.NodeProto]], set[str]]:
    """Node index -> the nodes taking its place (an empty list drops it), and the names of
    the float32 initializers they no longer need."""
    by_key = {tensor_key(layer.get_submodule(module).weight.detach().numpy().T): f"blk.{i}.{short}.weight"
              for i, layer in enumerate(model.layers) for module, short in LINEARS.items()}
    embedding = model.tok_embeddings.weight.detach().numpy()
    embedding_key, head_key = tensor_key(embedding), tensor_key(embedding.T)
    inits = {t.name: t for t in graph.initializer if t.data_type == TensorProto.FLOAT and len(t.dims) == 2}
    keys = {name: tensor_key(numpy_helper.to_array(t)) for name, t in inits.items()}
    table_name = next((name for name, key in keys.items() if key == embedding_key), None)
    if table_name is None:
        raise ValueError("the graph holds no float32 initializer equal to the model's tok_embeddings.weight: "
                         "it is not the export of this model")
    rank = {v.name: len(v.type.tensor_type.shape.dim) for v in [*graph.value_info, *graph.input]}
    producer = {o: k for k, n in enumerate(graph.node) for o in n.output}
    table = build.embedding(weights.embedding)
    replaced: dict[int, list[onnx.NodeProto]] = {}
    for k, node in enumerate(graph.node):
        if node.op_type == "Gather" and node.input[0] == table_name:
            replaced[k] = [build.node("Gather", [table, node.input[1]], node.output[0], axis=0)]
        elif node.op_type != "MatMul":
            continue
        elif keys.get(node.input[1]) == head_key or _transposes(graph, producer, node.input[1], table_name):
            if node.input[1] not in keys:  # the tied head, MatMul(h, Transpose(E)): the Transpose goes
                replaced[producer[node.input[1]]] = []
            replaced[k] = [build.node("FusedMatMul", [node.input[0], table], node.output[0],
                                      transA=0, transB=1, alpha=1.0)]
        elif (name := by_key.get(keys.get(node.input[1], ()))) is not None:
            if rank.get(node.input[0]) != 3:
                raise ValueError(f"the input of {name} has rank {rank.get(node.input[0])} in the graph: "
                                 f"the rewrite takes a B×T×K input")
            replaced[k] = build.linear(node.input[0], node.output[0], weights.linears[name],
                                       name.removesuffix(".weight"))
    return replaced, {table_name} | {n for n, key in keys.items() if key in by_key or key == head_key}


def _transposes(graph: onnx.GraphProto, producer: dict[str, int], name: str, table: str) -> bool:
    """Whether ``name`` is ``Transpose(table)``: the exporter folds it into an initializer of its
    own for a small table, and keeps the node for a large one (SmolLM2's)."""
    k = producer.get(name)
    return k is not None and graph.node[k].op_type == "Transpose" and graph.node[k].input[0] == table


def rewrite_graph(model_proto: onnx.ModelProto, model: Transformer, weights: GGUFWeights) -> dict[str, int]:
    """Put the file's blocks (:func:`gguf_weights`) in place of the float32 weights of
    ``model_proto``, the graph :func:`tinyk.web.onnx_export.export_onnx` wrote for ``model`` (loaded
    with its external data). Changes ``model_proto`` in place and returns its op counts.

    Each linear is found by its values (the exporter names its initializers ``val_*``). A graph
    in which fewer than all ``7·L`` linears, the lookup and the head are found, or in which a
    replaced float32 weight is still read, is refused with a ``ValueError``."""
    graph = model_proto.graph
    build = _Builder(graph)
    replaced, removed = _replacements(graph, model, weights, build)
    ops = Counter(node.op_type for nodes in replaced.values() for node in nodes)
    expected = {"Add": 7 * model.config.n_layers, "Gather": 1, "FusedMatMul": 1}
    if {op: ops[op] for op in expected} != expected:
        raise ValueError(f"found {ops['Add']} of the {expected['Add']} linears, "
                         f"{ops['Gather']} of 1 lookup and {ops['FusedMatMul']} of 1 head "
                         f"in the graph: it is not the export of this model")
    nodes = build.prep + [n for k, node in enumerate(graph.node) for n in replaced.get(k, [node])]
    still = sorted({x for n in nodes for x in n.input} & removed)
    if still:
        raise ValueError(f"the graph still reads {still} after the rewrite: it is not the export of "
                         f"this model")
    del graph.node[:]
    graph.node.extend(nodes)
    produced = {o for n in nodes for o in n.output}
    kept_info = [v for v in graph.value_info if v.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(kept_info)
    kept = [t for t in graph.initializer if t.name not in removed]
    del graph.initializer[:]
    graph.initializer.extend(kept + build.initializers)
    for opset in model_proto.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, OPSET)
    if not any(o.domain == MS_DOMAIN for o in model_proto.opset_import):
        model_proto.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    counts = Counter(node.op_type for node in graph.node)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
