"""The learner's answers, run away from the verdict (course: the instructors' page, grading).

Run by the grader as a script (``python -I answers.py``) inside the grading sandbox: no
IPython, no notebook, no test code. For each exercise it forks a fresh child that runs only
that exercise's answer cells, in a namespace of their own, then serves what the trusted
process (:mod:`tinyk.verdict`) asks for: a name's value, an attribute, a call on the tests'
inputs, or, for a test that puts the learner's parts into a model (05.10's capstone), that
model's forward passes, assembled here from weights loaded before the answer runs
(:data:`PREPARED`). Everything it sends back is plain data (numbers, strings, lists, dicts, plain
tensors rebuilt from bytes by ``torch.load(weights_only=True)``), or a handle that stands for
an object that stays here (a module, a function). The comparisons, the hidden checks and the
points are decided on the other side, where no code of the student's runs.

The course's reference code of a part is out of the learner's reach here, as far as a
process can put it: under the grader's sandbox the ``tinyk`` package's files are hidden and
this script runs from a copy of them (its first argument), whose modules that hold the parts
(:data:`HIDDEN`) it imports and then deletes, so no source of them is left to read or run
as text; and in the child of an exercise
that asks for a part (``RMSNorm``, ``repeat_kv``, ... of :data:`REFERENCES`), the
package's objects of that part are removed from every ``tinyk`` module before the answer
runs (the parts the instructor's answer defines), so that ``from tinyk import RMSNorm``
fails there. What stays within reach is an object the answer finds in memory through
another (a model's layer, the garbage collector): calling it is what
:mod:`tinyk.own_work`'s watch reports.

Each notebook starts clean, under the grader's sandbox: its exercises' children fork from a
process of its own, in new user, mount, process and IPC namespaces, with a private /tmp and
/dev/shm, new empty writable folders and the package's copy read-only; when the grader moves
on to the next notebook, that process ends, and every process the notebook's answers left
running ends with it (:func:`_notebook`). Where a sandbox cannot make namespaces within it,
the notebooks share this process's, and the first reply says why.

The wire (frames, markers, replies) is :mod:`tinyk.answer_wire`; the objects of an exercise and
the requests on them, :mod:`tinyk.answer_objects`. They are imported once the package is on
the path (:func:`_load`): this script imports nothing of it before. Whatever the student's
code prints goes to stderr; a child that corrupts its replies only fails its own exercises.
"""

from __future__ import annotations

import glob
import os
import pickle
import re
import shutil
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

# The modules of the package that hold its versions of the parts (the model, the upstream's
# copy, the parts' checks and the model built from them): imported once, then their files
# deleted. The package's other modules stay on disk, to be imported when an answer asks for one.
HIDDEN = ("tinyk.model", "tinyk.upstream", "tinyk.part_checks", "tinyk.divergence", "tinyk.parts",
          "tinyk.checks")
PRELOADED = ("tinyk", "tinyk.generation", "tinyk.own_work", *HIDDEN)
# Each part of the build track (tinyk.parts.PART_NAMES) and the names of the package's own
# versions of it, removed from every tinyk module in the child of an exercise that asks for it.
REFERENCES: dict[str, tuple[str, ...]] = {
    "RMSNorm": ("RMSNorm",),
    "rope_tables": ("precompute_freqs_cis",),
    "apply_rope": ("apply_rotary_emb", "apply_rotary_emb_half", "rotate_half"),
    "repeat_kv": ("repeat_kv",),
    "gqa_attention": ("Attention", "reference_gqa_attention"),
    "SwiGLU": ("MLP",),
    "decoder_block": ("DecoderLayer", "reference_decoder_block"),
    "token_positions": ("token_positions", "reference_token_positions"),
    "causal_padding_mask": ("padding_to_attention",),
    "shifted_loss": ("causal_lm_loss",),
}
_DEFINES = re.compile(r"^(?:def|class)\s+(\w+)", re.M)


def defines(source: str) -> list[str]:
    """The parts of the build track (:data:`REFERENCES`) that a cell's ``def``/``class`` lines name."""
    return [name for name in _DEFINES.findall(source) if name in REFERENCES]


def withhold(parts: list[str]) -> list[str]:
    """Remove the package's own versions of ``parts`` (:data:`REFERENCES`) from every loaded
    ``tinyk`` module; return the names removed."""
    names = {ref for part in parts for ref in REFERENCES.get(part, ())}
    if not names:
        return []
    modules = [m for n, m in list(sys.modules.items()) if n == "tinyk" or n.startswith("tinyk.")]
    objects = [vars(m)[n] for m in modules for n in names if n in vars(m)]
    for module in modules:
        for attr, value in list(vars(module).items()):
            if attr in names or any(value is obj for obj in objects):
                delattr(module, attr)
    return sorted(names)


def _smollm2() -> Any:
    """SmolLM2's model alone (only the test's side uses the tokenizer, which takes seconds to build)."""
    from tinyk.gguf import load_gguf, smollm2_path

    return load_gguf(smollm2_path())[0]


# The models a test may assemble from the learner's parts here (``build_model``), by name: the
# call in the test that loads it (on the grader's side), and how it is loaded here. The test's
# run over there hands this side the parts, and each of the model's forward passes runs here,
# on the grader's inputs (05.10's capstone, SmolLM2).
PREPARED: dict[str, tuple[str, Callable[[], Any]]] = {"smollm2": ("tinyk.parts.smollm2", _smollm2)}


def _prepare(names: list[str]) -> dict[str, Any]:
    """The models of :data:`PREPARED` an exercise's test assembles from the learner's parts,
    loaded before the package's versions of the parts are withheld (which they are built from)."""
    return {name: PREPARED[name][1]() for name in names if name in PREPARED}


def _exercise(sources: list[str], names: list[str], parts: list[str], requests: BinaryIO,
              out: BinaryIO, prepare: Sequence[str] = ()) -> None:
    """In the child: load the models the test assembles (``prepare``), withhold the package's
    versions of the parts the exercise asks for, run the answer cells, send the names they
    bound, then serve requests."""
    from tinyk.answer_objects import Objects, serve
    from tinyk.answer_wire import error, read_frame, reply

    try:
        models = _prepare(list(prepare))
    except Exception as exc:  # the grader's own set-up failed, not the learner's answer
        reply(out, ("err", "RuntimeError", f"the grader could not load {', '.join(prepare)} for this "
                                           f"exercise's test: {type(exc).__name__}: {exc}"[:300]))
        return
    withhold(parts)
    objects = Objects(requests, out)
    objects.models = models
    space: dict[str, Any] = {"__name__": "__main__"}
    try:
        for number, source in enumerate(sources):
            exec(compile(source, f"<answer cell {number + 1}>", "exec"), space)
        found = {name: objects.encode(space[name]) for name in names if name in space}
        reply(out, ("ok", ("d", list(found.items()))))
    except BaseException as exc:  # the answer cell itself failed: the tests will say so
        traceback.print_exc()
        reply(out, error(exc))
        return
    while (frame := read_frame(requests)) is not None:
        request = pickle.loads(frame)
        if request[0] == "end":
            return
        try:
            answer = serve(objects, request)
        except BaseException as exc:
            answer = error(exc)
        reply(out, answer)


def _load(library: str | None) -> None:
    """Import torch and :data:`PRELOADED` once, before the children fork. ``library``: a
    folder holding a copy of the package (under the sandbox, where the package's own files
    are hidden), imported from; the files of :data:`HIDDEN` are then deleted from it."""
    import importlib

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no module of it as top-level
    if library:
        sys.path.insert(0, library)
    import torch

    torch.set_num_threads(1)
    for name in PRELOADED:
        importlib.import_module(name)
    if not library:
        return
    for name in HIDDEN:
        os.remove(sys.modules[name].__file__)
    for folder in glob.glob(os.path.join(library, "tinyk", "**", "__pycache__"), recursive=True):
        shutil.rmtree(folder)  # no compiled copy of them either


def _serve_exercise(request: tuple, requests: BinaryIO, out: BinaryIO) -> None:
    """Fork the exercise's child, wait until it ends, then say so (``("done",)``)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            parts = request[3] if len(request) > 3 else []  # the parts whose reference is withheld
            prepare = request[4] if len(request) > 4 else []  # the models the test assembles
            _exercise(request[1], request[2], parts, requests, out, prepare)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.waitpid(pid, 0)
    from tinyk.answer_wire import reply

    reply(out, ("done",))


def _fresh(library: str, writable: list[str]) -> Callable[[], None]:
    """A notebook's folders, in its new mount namespace: a private /tmp and /dev/shm, each of
    the sandbox's ``writable`` folders a new empty one, the package's copy (``library``)
    bound back read-only (:func:`tinyk.warm_kernel.private_folders`)."""
    from pathlib import Path

    from tinyk.warm_kernel import private_folders

    return lambda: private_folders(empty=[Path(f) for f in writable], read_only=[Path(library)])


def _notebook(requests: BinaryIO, out: BinaryIO, folders: Callable[[], None]) -> None:
    """In a fork of the main process: new user, mount, process and IPC namespaces for one
    notebook's answers, with its ``folders``, no capability left, and a process 1 that only
    waits (``sleep``, started without copying this process); says so (or why not), then
    forks the child of each of the notebook's exercises, until the grader asks it to leave.
    Then it kills that process 1, and with it the kernel kills every process left in the
    namespace; its end waits for them."""
    from tinyk.answer_wire import read_frame, reply
    from tinyk.warm_kernel import drop_capabilities, new_namespaces

    try:
        here = os.getcwd()
        new_namespaces(ipc=True)
        folders()
        os.chdir(here)  # the new empty working folder
        drop_capabilities()
        sleep = shutil.which("sleep")
        if sleep is None:
            raise OSError("no 'sleep' program to be the namespace's process 1")
        first = os.posix_spawn(sleep, ["sleep", "infinity"], {})
        if os.waitpid(first, os.WNOHANG) != (0, 0):
            raise OSError(f"the namespace's process 1 ({sleep} infinity) ended at once")
    except Exception as err:  # any failure is said, never a silent end the grader waits out
        reply(out, ("err", "OSError", f"{type(err).__name__}: {err}"[:300]))
        return
    try:
        reply(out, ("ok", ("v", None)))
        while (frame := read_frame(requests)) is not None:
            request = pickle.loads(frame)
            if request[0] == "leave":
                break
            if request[0] == "exercise":
                _serve_exercise(request, requests, out)
    finally:
        os.kill(first, signal.SIGKILL)
        os.waitpid(first, 0)


def main() -> None:
    """Serve exercises until the grader closes the pipe (arguments: the package's copy, then
    the sandbox's writable folders, made new and empty for each notebook)."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)  # unbuffered: parent and child share it
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # the student's prints go to stderr, never into a reply
    sys.stdin = open(os.devnull)  # the learner's input() reads nothing
    library, writable = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else (None, [])
    _load(library)
    from tinyk.answer_wire import read_frame, reply

    folders = None
    if library is None:
        why = "no sandbox"
    else:
        from tinyk.warm_kernel import probe

        folders = _fresh(library, writable)
        why = probe(ipc=True, folders=folders) or ""
    reply(out, ("ready", why))  # "": each notebook can have namespaces of its own
    while (frame := read_frame(requests)) is not None:
        request = pickle.loads(frame)
        if request[0] == "notebook" and (folders is None or why):
            reply(out, ("err", "OSError", why))
        elif request[0] == "notebook":
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    _notebook(requests, out, folders)
                    code = 0
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            os.waitpid(pid, 0)
        elif request[0] == "exercise":
            _serve_exercise(request, requests, out)


if __name__ == "__main__":
    main()
