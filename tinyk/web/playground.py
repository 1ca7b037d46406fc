"""What the book's live page runs, computed in Python: the page "The decoder, live" (05.7 model).

The page runs the 05.7 model's ONNX graph (:mod:`tinyk.web.onnx_export`) in the reader's browser
with ONNX Runtime Web (``book/_static/tinyk-playground.js``). This module runs the same graph
with ONNX Runtime in Python, the way the page does:

- :func:`run_graph`: one call of the graph, ``ids`` after ``past`` cached tokens (batch 1,
  nothing padded);
- :func:`generate`: the page's generation loop: the prompt once, then one token per call with
  the KV cache, greedy (the most likely token, the lowest id on a tie, as ``torch.argmax``);
- :func:`example_run`: what the page shows without WebAssembly (the prompt
  :data:`EXAMPLE_PROMPT`: its tokens, next-token logits, attention weights, RoPE angles and
  greedy continuation), written beside the graph as ``tiny-example.json`` by
  :func:`write_example`. The browser test compares the live page with these numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["EXAMPLE_PROMPT", "EXAMPLE_TOKENS", "encode", "run_graph", "generate", "example_run",
           "write_example"]

EXAMPLE_PROMPT = "1+2=2+1\n3+7="  # the page's first prompt (as 05.7 prompts): the answer is 7+3
EXAMPLE_TOKENS = 4  # tokens the page generates at a click of "Generate"


def encode(manifest: dict[str, Any], text: str) -> list[int]:
    """Token ids of ``text`` in the manifest's character vocabulary; an unknown character is
    a ``ValueError`` naming it and its position."""
    vocab = manifest["tokenizer"]["vocab"]
    ids = []
    for position, char in enumerate(text):
        if char not in vocab:
            raise ValueError(f"text[{position}]={char!r} is not in the model's vocabulary "
                             f"{''.join(vocab)!r}")
        ids.append(vocab.index(char))
    return ids


def run_graph(session: Any, manifest: dict[str, Any], ids: list[int],
              past: dict[str, np.ndarray] | None = None, layer: int | None = None) -> dict[str, np.ndarray]:
    """One call of the graph on ``ids`` (batch 1) after the cached ``past`` (``None``: none).
    ``layer``: for a graph with the manifest's ``layer_input`` (SmolLM2's), the layer whose
    attention weights come back (``None``: the manifest's ``default_layer``).

    Returns every output by name (``logits``: ``1×T×V``; ``present_key_i``... for the next call).
    """
    config = manifest["config"]
    n_layers = config["n_layers"]
    empty = np.zeros((1, 0, config["n_kv_heads"], config["head_dim"]), dtype=np.float32)
    cached = 0 if past is None else past["present_key_0"].shape[1]
    feeds: dict[str, np.ndarray] = {"input_ids": np.array([ids], dtype=np.int64),
                                    "attention_mask": np.ones((1, cached + len(ids)), dtype=np.int64)}
    for i in range(n_layers):
        for kind in ("key", "value"):
            feeds[f"past_{kind}_{i}"] = empty if past is None else past[f"present_{kind}_{i}"]
    if "layer_input" in manifest:
        chosen = manifest["default_layer"] if layer is None else layer
        feeds[manifest["layer_input"]] = np.array(chosen, dtype=np.int64)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def generate(session: Any, manifest: dict[str, Any], ids: list[int], n_tokens: int) -> list[int]:
    """``n_tokens`` greedy tokens after ``ids``, by the page's loop (KV cache, one token per
    call), stopping at the model's ``max_seq_len``."""
    count = max(0, min(n_tokens, manifest["config"]["max_seq_len"] - len(ids)))
    out = run_graph(session, manifest, ids)
    new: list[int] = []
    for step in range(count):
        new.append(int(np.argmax(out["logits"][0, -1])))
        if step + 1 < count:  # the last token needs no call of its own
            out = run_graph(session, manifest, [new[-1]], out)
    return new


def example_run(onnx_path: str | Path, manifest: dict[str, Any],
                prompt: str = EXAMPLE_PROMPT) -> dict[str, Any]:
    """The page's view of ``prompt`` (batch 1, so the batch axis is dropped): ``ids``,
    ``logits`` (``T×V``), ``attention`` (per returned layer, ``H_q×T×T``), ``rope_angles``
    (``T×d_h/2``), ``rope_positions``, the graph's panels when it has them (``scores`` per returned
    layer ``H_q×T×T``, ``mask`` ``1×T×T``, ``residual_norms`` ``(L+1)×T``), ``cache_length`` and ``generated``
    (:data:`EXAMPLE_TOKENS` greedy tokens)."""
    import onnxruntime

    from tinyk.web.onnx_export import PANELS

    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids = encode(manifest, prompt)
    out = run_graph(session, manifest, ids)

    def rounded(array: np.ndarray) -> Any:
        return np.asarray(array, dtype=np.float64).round(7).tolist()

    return {"prompt": prompt, "ids": ids, "logits": rounded(out["logits"][0]),
            "attention": rounded(out["attention"][:, 0]), "rope_angles": rounded(out["rope_angles"][0]),
            "rope_positions": out["rope_positions"][0].tolist(),
            **{name: rounded(out[name][:, 0]) for name in PANELS if name in out},
            "cache_length": int(out["present_key_0"].shape[1]),
            "generated": generate(session, manifest, ids, EXAMPLE_TOKENS)}


def write_example(out_dir: str | Path) -> Path:
    """``tiny-example.json`` beside ``tiny.onnx`` and ``tiny.json`` in ``out_dir``
    (:func:`tinyk.web.onnx_export.export_course_model` writes those), with the manifest's stamp:
    written again only when the graph was."""
    out = Path(out_dir)
    manifest = json.loads((out / "tiny.json").read_text(encoding="utf-8"))
    path = out / "tiny-example.json"
    if path.exists():
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("stamp") == manifest["stamp"]:
                return path
        except (json.JSONDecodeError, AttributeError):
            pass
    example = example_run(out / manifest["onnx"], manifest)
    path.write_text(json.dumps({"stamp": manifest["stamp"], **example}) + "\n", encoding="utf-8")
    return path
