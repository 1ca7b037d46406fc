"""The learner's parts inside a ``tinyk`` model (the build track of sections 05.2 to 05.6).

In 05.2 to 05.6 the learner writes the decoder's parts themselves, under fixed names:

========================  =======  =====================================================
name                      section  behaves as
========================  =======  =====================================================
``RMSNorm``               05.2     :class:`tinyk.RMSNorm` (a class, same ``state_dict``)
``rope_tables``           05.3     :func:`tinyk.precompute_freqs_cis`
``apply_rope``            05.3     :func:`tinyk.apply_rotary_emb`
``repeat_kv``             05.4     :func:`tinyk.repeat_kv`
``gqa_attention``         05.4     ``scaled_dot_product_attention(..., enable_gqa=True)``
``SwiGLU``                05.5     :class:`tinyk.MLP` (a class, same ``state_dict``)
``decoder_block``         05.5     :meth:`tinyk.DecoderLayer.forward`
``token_positions``       05.6     the positions line of :meth:`tinyk.Transformer.forward`
``causal_padding_mask``   05.6     :func:`tinyk.model.padding_to_attention`
``shifted_loss``          05.6     :func:`tinyk.model.causal_lm_loss`
========================  =======  =====================================================

Three tools, used by the 05.6 checkpoint and the 05.10 capstone, each imported from the
module that defines it:

- :func:`~tinyk.learner.part_checks.check_parts` (:mod:`tinyk.learner.part_checks`) runs
  each given part **alone** against ``tinyk`` on small random inputs (several shapes,
  float32 and bfloat16, GQA ratios 1, 2 and 4, padded batches) and raises
  :class:`~tinyk.learner.part_compare.PartError` naming the first part that is still a stub
  or disagrees, and what differs (with a hint when the difference is a classic mistake).
- :func:`build_model` (this module) returns a copy of a :class:`tinyk.Transformer` that runs the given
  parts (any subset; the missing ones are ``tinyk``'s own) with the same weights. The
  parts go into the seams that :mod:`tinyk.model` exposes, so the copy runs the model's
  own forward passes around the learner's code and this module has none. A part that
  raises ``NotImplementedError`` inside the model is reported as a :class:`PartError`
  naming the part, not as a traceback from deep inside the model.
- :func:`checkpoint` (this module) prints, part by part, where each part came from and whether it
  passes, then compares the assembled model's logits and greedy tokens with ``tinyk``'s.
  It never raises for a stub: a stub or a wrong part is reported and replaced by
  ``tinyk``'s own, so a notebook with unanswered exercises still runs to the end, and the
  comparison says which parts were ``tinyk``'s ("with tinyk's RMSNorm in place of yours"):
  a model that agrees with a wrong part taken out is not read as the learner's agreeing.

Where the parts come from. Each notebook runs on its own (Colab opens one file; the grader
grades one notebook at a time), yet the parts are written in five notebooks. The design:
:func:`from_notebooks` reads the learner's own notebooks **from the folder they sit in**,
takes the solution cells (nbgrader ``solution`` cells) that define one of the names above,
runs each such cell in a fresh namespace (exercise cells are self-contained) and returns
the names it finds. The 05.6 checkpoint adds the parts defined in 05.6 itself. A part
whose notebook is absent (a notebook opened alone, as in Colab) is simply missing, and the
checkpoint says it falls back to ``tinyk``'s own. The 05.10 capstone is graded on its own,
so its solution cell holds the parts (pasted from the earlier notebooks) and its test cell
passes them to :func:`build_model` and :func:`~tinyk.learner.part_checks.check_parts` directly.

The parts' names (``PART_NAMES``) and :class:`~tinyk.learner.part_compare.PartError` live in
:mod:`tinyk.learner.part_compare`, and
:func:`~tinyk.learner.divergence.first_divergence` (where an assembled model departs first from
``tinyk``'s) in :mod:`tinyk.learner.divergence`: this module uses them and re-exports none.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from tinyk.courseware.cell_names import defined_names, python_source
from tinyk.generation import KVCache, generate
from tinyk.learner.divergence import first_divergence
from tinyk.learner.own_code import trusted
from tinyk.learner.part_checks import check_kind, check_parts
from tinyk.learner.part_compare import PART_NAMES, SECTIONS, PartError, call_part, reject_unknown
from tinyk.model import DecoderLayer, ModelConfig, Transformer
from tinyk.translations.package_catalogue import say

__all__ = ["Parts", "build_model", "from_notebooks", "defined_here", "checkpoint", "smollm2"]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)

# ---------------------------------------------------------------------------
# build_model: the same weights, the learner's parts
# ---------------------------------------------------------------------------


def _named(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, with a stub or a crash reported as a :class:`PartError` naming the part."""
    return functools.partial(call_part, name, fn)


def _learner_block(layer: DecoderLayer, block: Callable[..., Tensor], x: Tensor, cos: Tensor,
                   sin: Tensor, mask: Tensor | None = None, cache: KVCache | None = None) -> Tensor:
    """A layer's call, handed to the learner's ``decoder_block`` with its four modules."""
    def attention(y: Tensor) -> Tensor:
        return layer.attention(y, cos, sin, mask, cache)

    return call_part("decoder_block", block, x, trusted(attention), trusted(layer.feed_forward),
                 trusted(layer.attention_norm), trusted(layer.ffn_norm))


def build_model(base: Transformer, parts: Mapping[str, object] | None = None, /,
                **more: object) -> Transformer:
    """A model that runs the given parts with ``base``'s weights (``base`` is not changed).

    Parts are given as a mapping, as keywords, or both, under the names of
    :data:`PART_NAMES`; each missing part is ``tinyk``'s own. The result is a
    :class:`tinyk.Transformer` (so :func:`tinyk.generate` and :class:`tinyk.KVCache` work
    with it) with the same ``state_dict`` keys as ``base``, sharing its parameter tensors
    (nothing is copied; do not train one and expect the other unchanged), in eval mode. Its
    RoPE tables come from ``rope_tables`` when given. The parts go into the model's seams
    (``Transformer``'s ``token_positions``, ``causal_padding_mask``, ``shifted_loss``;
    ``Attention``'s ``apply_rope``, ``repeat_kv``, ``attend``; each layer's call for
    ``decoder_block``; the modules themselves for ``RMSNorm`` and ``SwiGLU``): the model
    runs ``tinyk``'s own forward passes around them. A part that raises inside the model
    (e.g. a stub's ``NotImplementedError``) surfaces as a :class:`PartError` naming it.
    """
    given = {**(parts or {}), **more}
    reject_unknown(given)
    for name, part in given.items():
        check_kind(name, part)
    # A structural copy that shares base's parameter tensors: no weight is copied, so this
    # stays cheap for SmolLM2's 135M parameters.
    model = copy.deepcopy(base, memo={id(p): p for p in base.parameters()}).eval()
    for name in ("token_positions", "causal_padding_mask", "shifted_loss"):
        if name in given:
            setattr(model, name, _named(name, given[name]))
    for layer in model.layers:
        attention = layer.attention
        if "apply_rope" in given:
            attention.apply_rope = _named("apply_rope", given["apply_rope"])
        if "repeat_kv" in given:  # runs in tinyk's hand-written attention
            attention.repeat_kv = _named("repeat_kv", given["repeat_kv"])
            attention.flash = False
        if "gqa_attention" in given:  # the learner groups the heads themselves
            attention.attend = _named("gqa_attention", given["gqa_attention"])
        if "decoder_block" in given:
            layer.forward = functools.partial(_learner_block, layer, given["decoder_block"])
    _swap_modules(model, given)
    if "rope_tables" in given:
        config = model.config
        cos, sin = call_part("rope_tables", given["rope_tables"], config.head_dim, config.max_seq_len,
                         config.rope_theta)
        model.freqs_cos, model.freqs_sin = cos.to(model.freqs_cos), sin.to(model.freqs_sin)
    return model.eval()


def _swap_modules(model: Transformer, given: Mapping[str, Any]) -> None:
    """Replace the norms and MLPs by instances of the learner's classes, same tensors."""
    config: ModelConfig = model.config
    dtype = next(model.parameters()).dtype

    def learners(name: str, old: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:
        new = call_part(name, given[name], *args, **kwargs)
        _load(new, old, name)
        try:
            new.forward = _named(name, new.forward)  # a stub's forward is reported by name
        # a module that lives in the learner's process (tinyk.grading.verdict) stays as it is
        except TypeError:
            pass
        return new.to(dtype)

    if "RMSNorm" in given:
        for layer in model.layers:
            layer.attention_norm = learners("RMSNorm", layer.attention_norm, config.dim, eps=config.norm_eps)
            layer.ffn_norm = learners("RMSNorm", layer.ffn_norm, config.dim, eps=config.norm_eps)
        model.norm = learners("RMSNorm", model.norm, config.dim, eps=config.norm_eps)
    if "SwiGLU" in given:
        for layer in model.layers:
            layer.feed_forward = learners("SwiGLU", layer.feed_forward, config.dim, config.mlp_hidden_dim)


def _load(new: nn.Module, old: nn.Module, name: str) -> None:
    try:
        new.load_state_dict(old.state_dict(), assign=True)  # the same tensors, not copies
    except RuntimeError as err:
        raise PartError(name, say("its state_dict does not fit tinyk's {module}: {error}",
                                  module=type(old).__name__, error=err)) from None


@functools.cache
def smollm2() -> tuple[Transformer, Any, Any]:
    """SmolLM2-135M-Instruct as ``(model, info, tokenizer)``, loaded once per process (05.10).

    ``tinyk.interop.gguf.load_gguf(smollm2_path())`` and ``load_tokenizer``; the notebook and its
    self-contained exercise cells share one copy instead of loading the file again. Do not
    change the returned model in place (:func:`build_model` never does).
    """
    from tinyk.interop.gguf import load_gguf, load_tokenizer, smollm2_path

    path = smollm2_path()
    model, info = load_gguf(path)
    return model, info, load_tokenizer(path)


# ---------------------------------------------------------------------------
# from_notebooks and the checkpoint
# ---------------------------------------------------------------------------

_MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.M)


class _QuietShell:
    """What a cell's magic and ``!`` lines call when :func:`from_notebooks` reads its parts:
    nothing (they ran in the learner's notebook; reading a part does not run them again)."""

    def __getattr__(self, name: str) -> Callable[..., None]:  # run_line_magic, system, ...
        return lambda *args, **kwargs: None


_QUIET_SHELL = _QuietShell()


class Parts(dict):
    """``{name: part}``, plus ``origin``: ``{name: notebook file it was read from}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origin: dict[str, str] = {}


def from_notebooks(folder: str | Path = ".", pattern: str = "05_[2-6]_*.ipynb") -> Parts:
    """The parts the learner defined in their notebooks of 05.2 to 05.6 in ``folder``.

    Reads each notebook matching ``pattern`` as saved on disk, takes its solution cells
    (nbgrader ``solution: true``) that define a part's name, and runs each such cell in a
    fresh namespace (exercise cells carry their own imports).
    Returns the parts found (:class:`Parts`, a dict that also records each one's notebook).
    A cell that fails to run gives a stand-in for its parts that raises :class:`PartError`
    with the cell's error, so the checkpoint reports it like any other wrong part.
    Missing notebooks are skipped.
    """
    found = Parts()
    for path in sorted(Path(folder).glob(pattern)):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or not meta.get("solution"):
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            source = _MARKER.sub("", source)
            names = [n for n in defined_names(source) if n in SECTIONS]
            if not names:
                continue
            namespace: dict[str, Any] = {"get_ipython": lambda: _QUIET_SHELL}
            try:
                exec(compile(python_source(source) or source, f"<{path.name}>", "exec"), namespace)
            except Exception as err:
                namespace = {n: _broken(n, path.name, err) for n in names}
            for n in names:
                if n in namespace:
                    found[n] = namespace[n]
                    found.origin[n] = path.name
    return found


def defined_here(namespace: Mapping[str, Any], where: str | None = None) -> Parts:
    """The parts defined in a notebook's own cells: ``defined_here(globals())``; ``where``
    names their origin in the checkpoint's table ("this notebook" by default).

    Only objects whose ``__module__`` is the namespace's own (``__main__`` in a kernel)
    count, so a name imported from ``tinyk`` is never taken for the learner's. This is how
    a notebook opened alone (Colab) gets the parts of earlier notebooks: they are pasted in.
    """
    found = Parts()
    home = namespace.get("__name__", "__main__")
    for name in PART_NAMES:
        if name in namespace and getattr(namespace[name], "__module__", None) == home:
            found[name], found.origin[name] = namespace[name], where or say("this notebook")
    return found


def _broken(name: str, notebook: str, err: Exception) -> Callable[..., Any]:
    def fails(*args: Any, **kwargs: Any) -> Any:
        raise PartError(name, say("its cell in {notebook} fails to run: {error}: {text}", notebook=notebook,
                                  error=type(err).__name__, text=err))
    return fails


def _substituted(given: Mapping[str, Any], passing: Mapping[str, Any]) -> str:
    """", with tinyk's RMSNorm in place of yours" (and the parts not found), or '' when
    every part is the learner's: what the checkpoint's model comparison ran (05.6)."""
    wrong = [name for name in PART_NAMES if name in given and name not in passing]
    missing = [name for name in PART_NAMES if name not in given]
    said = []
    if wrong:
        said.append(say("tinyk's {names} in place of yours", names=say(", ").join(wrong)))
    if missing:
        said.append(say("tinyk's {names} where yours were not found", names=say(", ").join(missing)))
    return say(", with {what}", what=say("; ").join(said)) if said else ""


def _passing_parts(given: Mapping[str, Any], origin: Mapping[str, str], seed: int) -> dict[str, Any]:
    """Print, part by part, where it comes from and whether it passes alone; return the
    passing ones (:func:`checkpoint`'s table)."""
    passing: dict[str, Any] = {}
    print(say("part                  section  status"))
    for name in PART_NAMES:
        where = say(" (from {notebook})", notebook=origin[name]) if name in origin else ""
        if name not in given:
            status = say("not found: tinyk's own is used")
        else:
            try:
                check_parts({name: given[name]}, seed=seed)
                passing[name] = given[name]
                status = say("yours, agrees with tinyk{where}", where=where)
            except PartError as err:
                status = say("yours{where}, NOT used: {detail}", where=where, detail=err.detail)
        print(f"{name:21s} {SECTIONS[name]:8s} {status}")
    missing = [name for name in PART_NAMES if name not in given]
    if missing:
        print("\n" + say("{missing} of {total} parts not found ({names}): the notebooks that define them "
                         "were not beside this one (a notebook run alone, as on the course's site or in "
                         "Colab, sees only its own parts), so tinyk's own stand in and checkpoint returns "
                         "False. Paste your parts into this notebook, or keep your notebooks in its folder, "
                         "to check yours", missing=len(missing), total=len(PART_NAMES),
                         names=say(", ").join(missing)))
    return passing


def _built(base: Transformer, passing: dict[str, Any]) -> Transformer:
    """:func:`build_model` with the passing parts; a part that passes alone but does not fit
    tinyk's model (its state dict) is reported and dropped from ``passing``, not raised."""
    while True:
        try:
            return build_model(base, passing)
        except PartError as err:
            if err.part not in passing:
                raise
            print(say("{part}: NOT used, it does not fit the model: {detail}", part=err.part,
                      detail=err.detail))
            del passing[err.part]


def checkpoint(parts: Mapping[str, object], base: Transformer | None = None, *, seed: int = 0) -> bool:
    """Print where each part comes from and whether it passes; compare the assembled model.

    Each part is checked alone (:func:`check_parts`); a stub or a wrong part is reported
    and replaced by ``tinyk``'s own. Then the model built from the passing parts
    (:func:`build_model`, on ``base`` or a seeded tiny model) runs a left-padded batch and
    a cached greedy generation, compared with ``tinyk``'s (each model runs the batch once);
    the comparison names the parts that were ``tinyk``'s. Returns True when every part
    of :data:`PART_NAMES` is the learner's, passes, and the model agrees; never raises
    for a stub or a wrong part.
    """
    origin: dict[str, str] = getattr(parts, "origin", {})
    given = dict(parts)
    reject_unknown(given)
    passing = _passing_parts(given, origin, seed)
    if base is None:
        torch.manual_seed(seed)
        base = Transformer(ModelConfig.tiny())
    base = base.eval()
    model = _built(base, passing)
    g = torch.Generator().manual_seed(seed)
    V = base.config.vocab_size
    ids = torch.randint(1, V, (2, 9), generator=g)
    valid = torch.ones(2, 9, dtype=torch.bool)
    valid[0, :4] = False  # the first row is left-padded
    with torch.no_grad():  # each model runs the batch once
        mine, theirs = model(ids, valid, labels=ids), base(ids, valid, labels=ids)
        gap = (mine.logits - theirs.logits)[valid].abs().max()
        loss_gap = (mine.loss - theirs.loss).abs()
    same_tokens = torch.equal(generate(model, ids, valid, max_new_tokens=5, temperature=0),
                              generate(base, ids, valid, max_new_tokens=5, temperature=0))
    print("\n" + say("assembled model ({yours} of {total} parts yours{substituted}), left-padded batch: max "
                     "|logit difference| {gap:.1e}, loss difference {loss_gap:.1e}; greedy tokens with a KV "
                     "cache {tokens}", yours=len(passing), total=len(PART_NAMES),
                     substituted=_substituted(given, passing), gap=float(gap), loss_gap=float(loss_gap),
                     tokens=say("the same") if same_tokens else say("DIFFERENT")))
    agrees = float(gap) < 1e-4 and float(loss_gap) < 1e-4 and same_tokens
    if not agrees:
        where = first_divergence(model, base, ids, valid, labels=ids)
        print(say("first difference: {where}", where=where) if where else
              say("first difference: none in one pass over the batch (it is in the cached generation)"))
    return agrees and len(passing) == len(PART_NAMES)
