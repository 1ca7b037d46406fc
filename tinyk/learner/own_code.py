"""The learner's own code, checked by what runs (course sections 05.2 to 05.10, the build track).

A build exercise asks for a part written in plain torch. :func:`run_own` calls the
learner's part and watches what it calls while it runs, whatever the route to it (an
import, an alias, ``getattr``, a copied function object, ``importlib``):

- **the course's reference code**: any Python function defined in the ``tinyk`` package
  (``tinyk.RMSNorm``, ``tinyk.repeat_kv``, the attention helper, ...), found by the file of
  the code object that runs (a call trace, ``sys.settrace``), and by what it computes: a
  function of the package in memory whose code object a part reuses under another file name
  (``code.replace(co_filename=...)``), or whose exact text it runs anew with the package's
  names, is the course's too (:func:`_course_code`; but for the part watched, whose own
  reference a learner may well write the same way);
- **Hugging Face's implementation**: any Python function of the ``transformers`` package's
  models and losses (``ForCausalLMLoss``);
- **the gguf package's dequantisation** (05.10): any function of ``gguf.quants`` but its
  dunder methods (``__init_subclass__`` runs when the module is imported), named as the
  function called from outside that module (``gguf.quants.dequantize``);
- **PyTorch's fused versions of a part**: ``scaled_dot_product_attention``, ``rms_norm``,
  ``nn.RMSNorm``, ``multi_head_attention_forward`` and their ATen operators, seen by a
  :class:`~torch.overrides.TorchFunctionMode` (which sees ``torch.ops`` calls too).

Plain torch operations (``matmul``, ``softmax``, ``repeat_interleave``, ``silu``, ...) are
allowed, except those an exercise asks to rebuild: ``forbid=`` (of :func:`watching` and
:func:`watched`) names torch functions the part may not call, e.g.
``watched("per_target_loss", per_target_loss, forbid=(F.cross_entropy, F.nll_loss))``, caught
by the same torch function mode, by identity or, on a route below it (``nn.CrossEntropyLoss``,
``torch._C._nn``, ``torch.ops``), by name. A forbidden call raises :class:`BorrowedCall`, an
``AssertionError``, so a test cell that finds one loses its points, with a message that names
the call and the part.
Callables the test itself hands to the part (e.g. the attention and MLP of a decoder
block) are wrapped with :func:`trusted` and may run anything.

A part whose body is written may still fail inside torch on a tensor of the wrong kind: a
float mask given to ``&`` (torch's own ``NotImplementedError``, ``"bitwise_and_cpu" not
implemented for 'Float'``, which is no stub: :func:`is_stub` tells the student version's
``raise NotImplementedError()`` from it), ``~`` on a float mask, ``-`` on booleans, a tensor
used as a truth value (``if not mask:``). The watch names these as :class:`DtypeSlip`, an
``AssertionError``, so that a test cell fails with what to write instead of a traceback.

What this cannot see: code of ``tinyk`` copied as text into the answer and changed on the way
(another docstring, another name for an import: the bytecode then differs), or copied from a
function no longer in memory (in the grader's run, the parts the notebook asks for are withheld
there: :mod:`tinyk.grading.learner_process`), code too short to tell from a learner's own (under
:data:`_COMPARED_BYTES` of bytecode), and a part that switches the watch off from inside
(``sys.settrace``, leaving the modes): that is detected afterwards and reported as tampering.
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from tinyk.translations.package_catalogue import noted, say

__all__ = ["BorrowedCall", "DtypeSlip", "is_stub", "run_own", "trusted", "watched", "watching"]

_TINYK = str(Path(__file__).resolve().parents[1]) + "/"
_TORCH = str(Path(torch.__file__).resolve().parent) + "/"
# The grader's transport to the learner's process (tinyk.grading.verdict and the modules it runs
# on) is never the learner's code: a module says so with this marker, this one included.
GRADER_TRANSPORT = True
_FUSED_API: dict[object, str] = {
    F.scaled_dot_product_attention: "torch.nn.functional.scaled_dot_product_attention",
    F.rms_norm: "torch.nn.functional.rms_norm",
    torch.rms_norm: "torch.rms_norm",
    F.multi_head_attention_forward: "torch.nn.functional.multi_head_attention_forward",
}
_FUSED_NAMES = ("scaled_dot_product", "rms_norm", "multi_head_attention")


def _transport(module_globals: dict[str, Any]) -> bool:
    """True for a module of the grader's transport (its :data:`GRADER_TRANSPORT` marker)."""
    return module_globals.get("GRADER_TRANSPORT") is True


def _package_folders(name: str) -> list[Path]:
    """The folder of the installed package ``name``, as the import system names its files and
    with symbolic links resolved (one entry when they agree; none without the package). Found
    without importing it, which takes seconds in a fresh kernel for ``transformers``."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # pragma: no cover: a broken install
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    return list(dict.fromkeys([root, root.resolve()]))


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Where Hugging Face's model code lives (its import machinery elsewhere is not a part)."""
    return tuple(f"{folder / name}" for folder in _package_folders("transformers")
                 for name in ("models/", "modeling_", "activations.py", "pytorch_utils.py", "loss/"))


@functools.cache
def _gguf_quants() -> frozenset[str]:
    """The file of ``gguf.quants`` (the gguf package's dequantisation)."""
    return frozenset(str(folder / "quants.py") for folder in _package_folders("gguf"))


# Why a call is not the learner's own: said in the learner's language when it is raised, never
# while the watch runs (a call into the package there would be watched too).
_OWN = noted("it is the course's own implementation")
_HUGGING_FACE = noted("it is Hugging Face's implementation")
_GGUF = noted("it is the gguf package's implementation")
_FUSED = noted("it is PyTorch's fused version of the part")
_ASKED = noted("this exercise asks you to write it yourself")
_SWITCHED_OFF = noted("the part switched off the check of its own calls")
# What to write instead: the dequantisation (05.10) is bit work on bytes, in NumPy or torch.
_PLAIN_TORCH = noted("Write it with plain torch operations (matmul, softmax, ...)")
_ADVICE = {_GGUF: noted("Write it with NumPy or plain torch operations (bit shifts, masks, ...)")}
# What to write instead, for a part whose ready-made version is no torch operation (05.6).
_PART_ADVICE = {
    "unique_parameters": noted("Count them from the sizes with arithmetic (d·H_q·d_h for wq, ...), "
                               "without building a model"),
    "shifted_loss": noted("Shift the logits and the labels yourself, then use F.cross_entropy (plain "
                          "torch)"),
}


def is_stub(error: BaseException) -> bool:
    """Whether ``error`` is an exercise not answered yet: a ``NotImplementedError`` raised by the
    learner's own code (the student version's ``raise NotImplementedError()``), not one raised by
    torch for an operation it lacks on these tensors (``"bitwise_and_cpu" not implemented for
    'Float'``: a body written, with a dtype slip), whose last frame is torch's or the watch's."""
    if not isinstance(error, NotImplementedError):
        return False
    if "not implemented for" in str(error):  # torch's words, wherever its C code raised them
        return False
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    return last is None or not last.tb_frame.f_code.co_filename.startswith((_TINYK, _TORCH))


class DtypeSlip(AssertionError):
    """A part whose body is written failed on a tensor of the wrong kind (a float mask given to
    ``&`` or ``~``, arithmetic on booleans, a tensor used as a truth value); ``detail``: what
    went wrong and what to write, in the learner's language, without the part's name."""

    def __init__(self, part: str, detail: str) -> None:
        super().__init__(f"{part}: {detail}")
        self.part, self.detail = part, detail


def _slip(error: BaseException) -> str | None:
    """What a torch error raised inside a written part says about the part (:class:`DtypeSlip`),
    or None for an error that is not one of these slips (a stub's own error included)."""
    text, kind = str(error), type(error).__name__
    if isinstance(error, NotImplementedError):
        if is_stub(error):
            return None
        if "bitwise_" in text:
            return _raised(kind, text, say("& needs bool tensors, and a float tensor came in: make the mask "
                                           "with dtype=torch.bool (or from a comparison), or convert it "
                                           "with .bool()"))
        if 'missing the required "forward" function' in text:  # torch's nn.Module.forward
            return _raised(kind, text, say("the module has no method named forward, which torch calls: the "
                                           "method is misspelt (def foward) or missing; name it forward"))
        return say("raised {error} inside torch ({text}), not the stub's own: the body is written, but torch "
                   "has no such operation for these tensors; check their dtype", error=kind, text=text)
    if isinstance(error, TypeError) and "operator.invert" in text:
        return _raised(kind, text, say("~ needs a bool tensor, and a float tensor came in: make the mask "
                                       "with dtype=torch.bool (or from a comparison), or convert it with "
                                       ".bool()"))
    if isinstance(error, RuntimeError) and "Boolean value of Tensor" in text:
        return _raised(kind, text, say("a tensor was used as a truth value (if mask:, not mask, and, or); to "
                                       "ask whether an argument was given, write if mask is None:, and "
                                       "combine masks with & and |"))
    if isinstance(error, RuntimeError) and "with a bool tensor is not supported" in text:
        return _raised(kind, text, say("arithmetic on a bool tensor; - is not defined on booleans: convert "
                                       "it to integers first, .long()"))
    return None


def _raised(kind: str, text: str, advice: str) -> str:
    """A :class:`DtypeSlip`'s detail: the error torch raised, then what to write instead."""
    return say("raised {error} ({text}): {advice}", error=kind, text=text, advice=advice)


class BorrowedCall(AssertionError):
    """A part called a reference implementation instead of computing the thing itself;
    ``detail``: the message without the part's name, in the learner's language."""

    def __init__(self, part: str, call: str, why: str) -> None:
        advice = _PART_ADVICE.get(part) or _ADVICE.get(why, _PLAIN_TORCH)
        self.detail = say("calls {call}, which is not allowed here: {why}. {advice}", call=call,
                          why=say(why), advice=say(advice))
        super().__init__(f"{part}: {self.detail}")
        self.part, self.call = part, call


def _called_name(frame: FrameType) -> str:
    """The name a function was called by: a method's class is that of its first argument
    (``Q4_1.dequantize``, not the base class that defines it). The class's name is read by
    ``type``'s own descriptor: a metaclass of the learner's that defines ``__name__`` does not
    run inside the watch."""
    code = frame.f_code
    qualname: str = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
    if code.co_argcount and "." in qualname and "<locals>" not in qualname:
        first = frame.f_locals.get(code.co_varnames[0])
        owner = first if isinstance(first, type) else type(first)
        return f"{_TYPE_NAME.__get__(owner, type(owner))}.{code.co_name}"
    return qualname


_TYPE_NAME = type.__dict__["__name__"]


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


# Each part of the build track (tinyk.learner.part_compare.PART_NAMES) and the names of the package's own
# versions of it, withheld in every tinyk module in the grader's run of a notebook that asks for it
# (tinyk.grading.withheld.withhold); a part watched may match its own references (_course_code_for).
REFERENCES: dict[str, tuple[str, ...]] = {
    "RMSNorm": ("RMSNorm",),
    "rope_tables": ("precompute_freqs_cis",),
    "apply_rope": ("apply_rotary_emb", "_rotate_adjacent", "apply_rotary_emb_half", "rotate_half"),
    "repeat_kv": ("repeat_kv",),
    "gqa_attention": ("Attention", "reference_gqa_attention"),
    "SwiGLU": ("MLP",),
    "decoder_block": ("DecoderLayer", "reference_decoder_block"),
    "token_positions": ("token_positions", "reference_token_positions"),
    "causal_padding_mask": ("padding_to_attention",),
    "shifted_loss": ("causal_lm_loss",),
}
# Helpers of the package a part may call: they only line a table up with a tensor, and the notebook
# that asks for the part imports them and shows them in its walk-through (the part still computes by itself).
HELPERS: dict[str, tuple[str, ...]] = {
    "apply_rope": ("reshape_for_broadcast",),
}
# Code objects with fewer bytes of bytecode than this are not compared by what they compute: a
# few instructions (``return x``, unpacking a tuple) a learner may well write as the course does.
_COMPARED_BYTES = 48


@functools.cache  # each code object is looked at once, whatever the number of watches
def _code_key(code: types.CodeType) -> tuple:
    """What a code object computes, without its names and places: its bytecode, the names and
    constants it uses (a nested function's by its own key) and its arguments."""
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, code.co_names, consts, code.co_argcount, code.co_kwonlyargcount)


# The index of the course's code (_course_code), made again when another module of the package
# has been imported since (``size``: len(sys.modules) when last looked at, the cheap test first),
# and its part of each part watched (_course_code_for): a watch starts at every call of a part.
_INDEX: dict[str, Any] = {"size": -1, "modules": None, "code": {}, "parts": {}}


def _course_code() -> dict[tuple, str]:
    """The code of every function of the package that the garbage collector holds (a class
    that only a loaded model still holds counts too), by :func:`_code_key`, with its name."""
    if _INDEX["size"] != len(sys.modules):
        _INDEX["size"] = len(sys.modules)
        modules = tuple(sorted(n for n in sys.modules if n == "tinyk" or n.startswith("tinyk.")))
        if _INDEX["modules"] != modules:
            index: dict[tuple, str] = {}
            for obj in gc.get_objects():
                if type(obj) is types.FunctionType:
                    code = obj.__code__
                    filename = code.co_filename
                    if (filename.startswith(_TINYK) and not _transport(obj.__globals__)
                            and len(code.co_code) >= _COMPARED_BYTES):
                        name = getattr(code, "co_qualname", code.co_name)
                        index.setdefault(_code_key(code), f"{obj.__module__}.{name}")
            _INDEX.update(modules=modules, code=index, parts={})
    return _INDEX["code"]


def _course_code_for(part: str) -> dict[tuple, str]:
    """:func:`_course_code` but the part's own references (:data:`REFERENCES`), which a learner
    may well write the same way."""
    index = _course_code()
    if part not in _INDEX["parts"]:
        own = frozenset(REFERENCES.get(part, ()))
        _INDEX["parts"][part] = {key: name for key, name in index.items()
                                 if not any(name.endswith(f".{ref}") or f".{ref}." in name for ref in own)}
    return _INDEX["parts"][part]


class _Watch:
    """The state of one watch: what was seen, and how deep inside trusted callables."""

    def __init__(self, part: str, forbid: tuple[Callable[..., Any], ...] = ()) -> None:
        self.part = part
        self.forbid = {fn: f"{fn.__module__}.{fn.__name__}" for fn in forbid}
        # a forbidden Python function (torch.autograd.functional.jacobian), seen by its code when
        # called from outside torch: the torch function mode does not see it
        self.forbid_code = {fn.__code__: name for fn, name in self.forbid.items()
                            if isinstance(getattr(fn, "__code__", None), types.CodeType)}
        self.trusted_depth = 0
        self.seen: list[tuple[str, str]] = []
        self.libraries = _library_roots()
        self.gguf = _gguf_quants()
        self.course = _course_code_for(part)
        self.helpers = frozenset(HELPERS.get(part, ()))

    def copied(self, code: types.CodeType) -> str | None:
        """The course's function whose code ``code`` is, under whatever file name."""
        if len(code.co_code) < _COMPARED_BYTES:
            return None
        return self.course.get(_code_key(code))

    def flag(self, call: str, why: str) -> None:
        if self.trusted_depth == 0 and not any(c == call for c, _ in self.seen):
            self.seen.append((call, why))

    def trace(self, frame: FrameType, event: str, arg: object) -> Any:
        """The global trace function: called for each Python function that starts (C
        functions, such as torch's operators, cost nothing here: the mode sees those)."""
        code = frame.f_code
        if code is _TRUSTED_CODE:
            self.trusted_depth += 1
            return self.trusted_frame  # to see that call's return
        if self.trusted_depth == 0 and code in self.forbid_code:
            caller = frame.f_back
            if caller is None or not caller.f_code.co_filename.startswith(_TORCH):
                self.flag(self.forbid_code[code], _ASKED)
            return None
        if self.trusted_depth == 0 and code.co_flags & inspect.CO_NEWLOCALS:
            filename = code.co_filename  # a function's (a module or class body runs on import)
            if filename.startswith(_TINYK) and code.co_name in self.helpers:
                return None  # a helper the part may call (HELPERS)
            if filename.startswith(_TINYK) and not _transport(frame.f_globals):
                # the function the learner called, not its helpers (padding_to_attention, not the
                # causal_triangle it calls; count_parameters, not its generator expression)
                caller = frame.f_back
                if caller is None or not caller.f_code.co_filename.startswith(_TINYK) or _transport(
                        caller.f_globals):
                    module = frame.f_globals.get("__name__", "tinyk")
                    name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
                    self.flag(f"{module}.{name}", _OWN)
            elif not filename.startswith(_TINYK) and (copy := self.copied(code)) is not None:
                self.flag(copy, _OWN)
            elif filename.startswith(self.libraries) and (
                    frame.f_back is None or not frame.f_back.f_code.co_filename.startswith(self.libraries)):
                # the function called from outside the library (ForCausalLMLoss, not its helpers)
                self.flag(f"transformers ({code.co_name})", _HUGGING_FACE)
            elif (filename in self.gguf and not _dunder(code.co_name)
                  and (frame.f_back is None or frame.f_back.f_code.co_filename not in self.gguf)):
                # the function called from outside the module, not the ones it calls
                self.flag(f"gguf.quants.{_called_name(frame)}", _GGUF)
        return None  # no line events for this frame

    def trusted_frame(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "return":
            self.trusted_depth -= 1
        return self.trusted_frame


_ACTIVE: list[_Watch] = []


def _describe(func: Any) -> tuple[str, str]:
    """``(label, full name)`` of a torch function: its name, or an operator's ``aten.x``."""
    if type(func).__module__ == "torch._ops":
        return str(func), f"torch.ops.{func}"
    label = getattr(func, "__name__", "") if callable(func) else ""
    return label, f"torch.{label}"


_FUSED_SEEN: dict[Any, str | None] = {}  # a torch function -> its fused name, or None


def _fused_name(func: Any) -> str | None:
    try:
        return _FUSED_SEEN[func]
    except (KeyError, TypeError):
        label, full = _describe(func)
        name = _FUSED_API.get(func) or next((full for fused in _FUSED_NAMES if fused in label), None)
        try:
            _FUSED_SEEN[func] = name
        except TypeError:  # an unhashable callable: not cached
            pass
        return name


class _FusedFunctions(TorchFunctionMode):
    """Sees every torch function called, by the Python API or by ``torch.ops``."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if _ACTIVE:
            watch = _ACTIVE[-1]
            name = _fused_name(func)
            if name is not None:
                watch.flag(name, _FUSED)
            if watch.forbid:
                label, full = _describe(func)
                for fn, fn_name in watch.forbid.items():
                    if func is fn or fn.__name__ in label:
                        watch.flag(fn_name if func is fn else full, _ASKED)
        return func(*args, **(kwargs or {}))


def _trusted_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


_TRUSTED_CODE = _trusted_call.__code__


def trusted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, callable from a watched part without being counted as the part's own call."""
    return functools.partial(_trusted_call, fn)


@contextmanager
def watching(part: str, forbid: tuple[Callable[..., Any], ...] = ()) -> Iterator[_Watch]:
    """Watch everything that runs inside the ``with`` block; raise :class:`BorrowedCall` at
    its end for a forbidden call seen (the last one), or if the watch was switched off inside,
    and :class:`DtypeSlip` for a torch error that a slip of the tensors' kind explains.
    ``forbid``: torch functions that are forbidden too, for this part only."""
    watch = _Watch(part, tuple(forbid))
    previous = sys.gettrace()
    _ACTIVE.append(watch)
    try:
        with _FusedFunctions():
            sys.settrace(watch.trace)
            try:
                yield watch
            except (NotImplementedError, TypeError, RuntimeError) as error:
                sys.settrace(previous)  # the words below are the package's, not the part's
                detail = _slip(error)
                if detail is None:
                    raise
                raise DtypeSlip(part, detail) from None
            finally:
                still_ours = sys.gettrace() == watch.trace
                sys.settrace(previous)
    finally:
        _ACTIVE.remove(watch)
    if not still_ours:
        raise BorrowedCall(part, "sys.settrace", _SWITCHED_OFF)
    if watch.seen:
        call, why = watch.seen[-1]  # the last: calls made while importing come first
        raise BorrowedCall(part, call, why)


def run_own(part: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, the learner's ``part``, watched (:func:`watching`)."""
    with watching(part):
        return fn(*args, **kwargs)


def watched(part: str, fn: Any, forbid: tuple[Callable[..., Any], ...] = ()) -> Any:
    """``fn`` with every later call watched, for a test cell to rebind the learner's name:
    ``repeat_kv = watched("repeat_kv", repeat_kv)``. For a class (an ``nn.Module``), a
    subclass of the same name whose ``__init__`` and ``forward`` run watched. ``forbid``:
    torch functions forbidden too (see :func:`watching`). Idempotent.
    """
    key = (part, tuple(forbid))
    if getattr(fn, "__watched_part__", None) == key:
        return fn
    if isinstance(fn, type):
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            with watching(part, forbid):
                fn.__init__(self, *args, **kwargs)

        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            with watching(part, forbid):
                return fn.forward(self, *args, **kwargs)

        return type(fn.__name__, (fn,), {"__init__": __init__, "forward": forward, "__watched_part__": key,
                                         "__doc__": fn.__doc__, "__module__": fn.__module__})

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with watching(part, forbid):
            return fn(*args, **kwargs)

    wrapper.__watched_part__ = key  # type: ignore[attr-defined]
    return wrapper
