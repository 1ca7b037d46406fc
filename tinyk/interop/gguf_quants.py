"""A GGUF file's tensors as ``tinyk``'s float32 state dict, each dequantised as the ``gguf``
package does it, to the bit (course section 05.10).

    weight = dequantise(data, tensor_type)        # one stored tensor: float32, the stored shape
    state, types = state_dict(tensors, gguf)      # every tensor, under tinyk's names

``gguf.quants.dequantize`` handles every GGML type in numpy, a group of rows at a time. The two
quantised types of SmolLM2's file are done here on the whole tensor at once, in torch:

- Q4_1, blocks of 32 weights in 20 bytes: ``d`` and ``m`` (float16), then 16 bytes holding
  ``q`` for elements 0..15 in their low nibbles and 16..31 in their high ones; ``w = d·q + m``;
- Q8_0, blocks of 32 weights in 34 bytes: ``d`` (float16), then 32 int8 ``q``; ``w = q·d``.

Each weight gets the same float32 roundings as in ``gguf`` (for Q4_1 the product, then the sum:
no fused multiply-add), so every value has the same bits; a NaN (from a NaN or infinite scale)
is a NaN in both, its payload aside. F32 and F16 tensors are read as they are; any other type,
or a quantised tensor that is not a matrix, goes to ``gguf``. ``tests/test_gguf.py`` compares
the two on every tensor of SmolLM2's file and on random blocks; ``benchmarks/bench_load.py``
times both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = ["BLOCK_NAMES", "FAST_TYPES", "dequantise", "state_dict"]

# GGUF tensor name (per block "blk.{i}.") -> tinyk state-dict name
BLOCK_NAMES = {
    "attn_q.weight": "attention.wq.weight",
    "attn_k.weight": "attention.wk.weight",
    "attn_v.weight": "attention.wv.weight",
    "attn_output.weight": "attention.wo.weight",
    "ffn_gate.weight": "feed_forward.w1.weight",
    "ffn_up.weight": "feed_forward.w3.weight",
    "ffn_down.weight": "feed_forward.w2.weight",
    "attn_norm.weight": "attention_norm.weight",
    "ffn_norm.weight": "ffn_norm.weight",
}
FAST_TYPES = ("Q4_1", "Q8_0")  # done here; F32 and F16 are read as they are, the rest by gguf


def _blocks(data: np.ndarray, size: int) -> Tensor:
    """The raw bytes as ``blocks × size`` uint8 (a copy: the file's view is read-only)."""
    raw = np.asarray(data, dtype=np.uint8)
    if raw.ndim != 2 or raw.shape[1] % size:
        raise ValueError(f"raw blocks of shape {raw.shape}: expected rows × a multiple of {size} bytes")
    return torch.from_numpy(raw.reshape(-1, size).copy())


def _half(blocks: Tensor, start: int) -> Tensor:
    """The float16 at bytes ``start``, ``start + 1`` of each block, as a ``blocks × 1`` float32."""
    return blocks[:, start:start + 2].contiguous().view(torch.float16).float()


def _q4_1(data: np.ndarray) -> Tensor:
    blocks = _blocks(data, 20)
    d, m, packed = _half(blocks, 0), _half(blocks, 2), blocks[:, 4:20]
    out = torch.empty(blocks.shape[0], 32)
    out[:, :16] = packed & 0x0F
    out[:, 16:] = packed >> 4
    return out.mul_(d).add_(m).view(data.shape[0], -1)


def _q8_0(data: np.ndarray) -> Tensor:
    blocks = _blocks(data, 34)
    d = _half(blocks, 0)
    return blocks[:, 2:34].contiguous().view(torch.int8).float().mul_(d).view(data.shape[0], -1)


def dequantise(data: np.ndarray, tensor_type: Any) -> Tensor:
    """One stored tensor as float32: ``data`` as the file holds it (a numpy view; a quantised
    type's raw blocks, ``rows × bytes per row`` uint8) and its ``gguf.GGMLQuantizationType``."""
    name = getattr(tensor_type, "name", str(tensor_type))
    if name in FAST_TYPES and np.ndim(data) == 2:
        return _q4_1(data) if name == "Q4_1" else _q8_0(data)
    if name in ("F32", "F16"):
        return torch.from_numpy(np.array(data, dtype=np.float32))
    import gguf

    return torch.from_numpy(np.array(gguf.quants.dequantize(data, tensor_type), dtype=np.float32))


def state_dict(tensors: Iterable[Any], gguf: Any) -> tuple[dict[str, Tensor], dict[str, int]]:
    """A llama GGUF file's ``tensors`` (each with ``name``, ``tensor_type`` and ``data``, as
    ``gguf.GGUFReader`` lists them), dequantised (:func:`dequantise`) under ``tinyk``'s names,
    and each GGUF tensor's type; a tensor of another name or of a type ``gguf`` (the module,
    imported by the caller) cannot dequantise is refused."""
    state, types = {}, {}
    supported = set(gguf.quants._type_traits) | {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16}
    for tensor in tensors:
        if tensor.tensor_type not in supported:
            raise ValueError(f"tensor {tensor.name} has type {tensor.tensor_type.name}, which gguf "
                             f"cannot dequantise here")
        weight = dequantise(tensor.data, tensor.tensor_type)
        types[tensor.name] = int(tensor.tensor_type)
        if tensor.name == "token_embd.weight":
            state["tok_embeddings.weight"] = weight
            state["output.weight"] = weight
        elif tensor.name == "output_norm.weight":
            state["norm.weight"] = weight
        elif tensor.name.startswith("blk."):
            _, layer, rest = tensor.name.split(".", 2)
            if rest not in BLOCK_NAMES:
                raise ValueError(f"unexpected tensor {tensor.name} in a llama GGUF file")
            state[f"layers.{layer}.{BLOCK_NAMES[rest]}"] = weight
        else:
            raise ValueError(f"unexpected tensor {tensor.name} in a llama GGUF file")
    return state, types
