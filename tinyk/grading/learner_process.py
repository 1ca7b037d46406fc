"""The learner's notebook, run away from the verdict (course: the instructors' page, grading).

Run by the grader as a script (``python -I answers.py``) inside the grading sandbox. For each
run of a notebook it forks a fresh child that runs the notebook's cells the grader sends, one
at a time, through IPython's own shell (:func:`_shell`: its input transformations, magics and
display hook, as a Jupyter kernel runs them), each within the per-cell time limit; a cell's
error is said and the run goes on. Between cells it serves what the trusted process
(:mod:`tinyk.grading.verdict`) asks for: a name's value, an attribute, a call on the tests' inputs,
or, for a test that puts the learner's parts into a model (05.10's capstone), that model's
forward passes, assembled here from weights loaded before the notebook's cells run
(:data:`PREPARED`). No test cell is ever sent here. Everything it sends back is plain data
(numbers, strings, lists, dicts, plain tensors rebuilt from bytes by
``torch.load(weights_only=True)``), or a handle that stands for an object that stays here (a
module, a function). The comparisons, the hidden checks and the points are decided on the
other side, where no code of the student's runs.

The course's reference code of a part is out of the learner's reach here: under the grader's
sandbox the ``tinyk`` package's files are hidden and this script runs from a copy of them (its
first argument), whose modules that hold the parts (:data:`HIDDEN`) it imports and then
deletes; and in the child of a run, the package's objects of every part the run asks for
(``RMSNorm``, ``repeat_kv``, ... of :data:`tinyk.learner.own_code.REFERENCES`) are replaced in every
``tinyk`` module by a :class:`~tinyk.grading.withheld.Withheld` before the first cell runs, then freed
(:func:`~tinyk.grading.withheld.withhold`): no class, function or code object of theirs is left for the
collector to
find, and no source of them to read or run as text (``inspect`` reads the rest of those
modules' text, :mod:`tinyk.grading.kept_source`). Using a stand-in, or reading it as a function
(``inspect.getsource``, ``__code__``), sets :data:`~tinyk.grading.withheld.TOUCHED`, so that the grader
judges an
exercise that then fails again in a run that withholds only its own parts.

Each notebook starts clean, under the grader's sandbox: its runs fork from a process of its
own, in new user, mount, process and IPC namespaces, with a private /tmp and /dev/shm, new
empty writable folders and the package's copy read-only; when the grader moves on to the next
notebook, that process ends, and every process the notebook's cells left running ends with it
(:func:`_notebook`). Where a sandbox cannot make namespaces within it, the notebooks share
this process's, and the first reply says why.

The wire (frames, markers, replies) is :mod:`tinyk.grading.answer_wire`; the objects of a run and the
requests on them, :mod:`tinyk.grading.learner_objects`. They are imported once the package is on the
path (:func:`_load`): this script imports nothing of it before. A cell's prints, displays
and errors are its outputs (:mod:`tinyk.grading.cell_outputs`); what else the student's code prints
(on the file descriptors, or while a test calls it) goes to stderr; a child that corrupts its
replies only fails its own run.
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
# copy, Hugging Face's half-split RoPE, the parts' checks and the model built from them), each
# marked ``HOLDS_PARTS = True``: imported once, then their files deleted. The package's other
# modules stay on disk, to be imported when an answer asks for one.
MARKER = re.compile(r"^HOLDS_PARTS = True\b", re.M)


def holding_parts(package: str) -> tuple[str, ...]:
    """The dotted names of the modules under the folder ``package`` (``tinyk``'s) marked as
    holding the parts, found in their text (nothing is imported)."""
    found = []
    for path in sorted(glob.glob(os.path.join(package, "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as file:
            if MARKER.search(file.read()):
                relative = os.path.relpath(path, os.path.dirname(package))[:-3]
                found.append(relative.replace(os.sep, ".").removesuffix(".__init__"))
    return tuple(found)


HIDDEN = holding_parts(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRELOADED = ("tinyk", "tinyk.generation", "tinyk.learner.own_code", *HIDDEN)

def _smollm2() -> Any:
    """SmolLM2's config and weights, plain tensors: no model of the package's is built here
    (only the test's side uses the tokenizer, which takes seconds to build)."""
    from tinyk.interop.gguf import gguf_weights, smollm2_path

    return gguf_weights(smollm2_path())[:2]


# The models a test may assemble from the learner's parts here (``build_model``), by name: the
# call in the test that loads it (on the grader's side), and how its weights are loaded here. The
# test's run over there hands this side the parts, the model is made of those weights and the
# parts alone (tinyk.learner.learners_model), and each of its forward passes runs here, on the grader's
# inputs (05.10's capstone, SmolLM2).
PREPARED: dict[str, tuple[str, Callable[[], Any]]] = {"smollm2": ("tinyk.learner.parts.smollm2", _smollm2)}


def _prepare(names: list[str]) -> dict[str, Any]:
    """The weights of the models of :data:`PREPARED` an exercise's test assembles from the
    learner's parts (a config and plain tensors each)."""
    return {name: PREPARED[name][1]() for name in names if name in PREPARED}


def _shell() -> Any:
    """An IPython shell for the notebook's cells, as a Jupyter kernel runs them: IPython's input
    transformations (magics, ``!`` lines), its display hook and its tracebacks (plain), each
    cell's prints, displays, result and error kept as its outputs (:mod:`tinyk.grading.cell_outputs`,
    sent to the grader on ``("outputs",)``); no history file, no GUI event loop
    (``%matplotlib inline`` draws with Agg)."""
    import tempfile

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets import Type
    from traitlets.config import Config

    from tinyk.grading.cell_outputs import CAPTURED, shell_classes

    results, displays = shell_classes()

    class Shell(InteractiveShell):
        displayhook_class = Type(results)  # the cell's results and displays kept as its outputs
        display_pub_class = Type(displays)

        def enable_gui(self, gui: str | None = None) -> None:  # a kernel's inline figures need none
            return None

        def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
            CAPTURED.error(etype.__name__, str(evalue), list(stb))  # the cell's error output

    os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="ipython-")
    os.environ["MPLBACKEND"] = "Agg"
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Plain"
    shell = Shell.instance(config=config)
    shell.user_ns["__name__"] = "__main__"
    return shell


def _cell(shell: Any, source: str, timeout: float) -> tuple:
    """Run one of the notebook's cells within ``timeout`` seconds; return, as the reply's value,
    its error ("" when none), as a kernel's run goes on past a cell's error, and whether it used
    a withheld part (:data:`~tinyk.grading.withheld.TOUCHED`: what it showed is then not what Colab shows)."""

    def late(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the cell ran past the per-cell time limit ({timeout:g} s)")

    from tinyk.grading.cell_outputs import capturing
    from tinyk.grading.withheld import TOUCHED

    before, TOUCHED[0] = TOUCHED[0], False
    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with capturing():  # its outputs, kept for the grader (tinyk.grading.cell_outputs)
            result = shell.run_cell(source, store_history=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        used = bool(TOUCHED[0])
        TOUCHED[0] = before or used
    error = result.error_before_exec or result.error_in_exec
    return ("u", [("v", "" if error is None else f"{type(error).__name__}: {error}"[:300]), ("v", used)])


def _value(objects: Any, value: Any) -> tuple:
    """``value`` for the grader: as data, or as a handle when it cannot be sent as data (nested
    too deep, say): the test's calls reach it over there as they reach a function."""
    try:
        return objects.encode(value)
    except Exception:
        return objects.handle(value)


def _run(parts: list[str], prepare: Sequence[str], requests: BinaryIO, out: BinaryIO) -> None:
    """In the child of one run of a notebook: load the models its tests assemble
    (``prepare``), withhold the package's versions of ``parts``, then serve the grader: each of
    the notebook's cells to run in turn (``("cell", source, timeout)``), the values of names
    (``("names", [...])``), whether a withheld part was used (``("touched",)``), and the test
    cells' requests on the learner's objects, until ``("end",)``."""
    from tinyk.grading.answer_wire import error, read_frame, reply
    from tinyk.grading.learner_objects import Objects, serve
    from tinyk.grading.withheld import TOUCHED, withhold

    try:
        models = _prepare(list(prepare))
    except Exception as exc:  # the grader's own set-up failed, not the learner's answer
        reply(out, ("err", "RuntimeError", f"the grader could not load {', '.join(prepare)} for this "
                                           f"exercise's test: {type(exc).__name__}: {exc}"[:300]))
        return
    withhold(parts)
    objects = Objects(requests, out)
    objects.models = models
    try:
        shell = _shell()
    except Exception as exc:
        reply(out, ("err", "RuntimeError", f"the grader could not start IPython: {type(exc).__name__}: "
                                           f"{exc}"[:300]))
        return
    reply(out, ("ok", ("v", None)))
    space = shell.user_ns
    while (frame := read_frame(requests)) is not None:
        request = pickle.loads(frame)
        if request[0] == "end":
            return
        try:
            if request[0] == "cell":
                answer = ("ok", _cell(shell, request[1], float(request[2])))
            elif request[0] == "names":
                answer = ("ok", ("d", [(name, _value(objects, space[name])) for name in request[1]
                                       if type(name) is str and name in space]))
            elif request[0] == "touched":
                answer = ("ok", ("v", bool(TOUCHED[0])))
            elif request[0] == "outputs":  # the outputs of the cells run since the last ask
                import torch

                from tinyk.grading.cell_outputs import CAPTURED

                answer = ("ok", ("t", torch.frombuffer(bytearray(CAPTURED.take()), dtype=torch.uint8)))
            else:
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

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))  # the sandbox's --threads
    for name in PRELOADED:
        importlib.import_module(name)
    importlib.import_module("IPython.core.interactiveshell")  # each run's shell (_shell)
    if not library:
        return
    from tinyk.grading.kept_source import keep

    keep(sys.modules[name] for name in HIDDEN)  # for inspect, without a run's withheld parts
    for name in HIDDEN:
        os.remove(sys.modules[name].__file__)
    for folder in glob.glob(os.path.join(library, "tinyk", "**", "__pycache__"), recursive=True):
        shutil.rmtree(folder)  # no compiled copy of them either


def _serve_run(request: tuple, requests: BinaryIO, out: BinaryIO) -> None:
    """Fork the child of one run of the notebook (``("run", parts, prepare)``), wait until it
    ends, then say so (``("done",)``)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _run(list(request[1]), list(request[2]), requests, out)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.waitpid(pid, 0)
    from tinyk.grading.answer_wire import reply

    reply(out, ("done",))


def _fresh(library: str, writable: list[str]) -> Callable[[], None]:
    """A notebook's folders, in its new mount namespace: a private /tmp and /dev/shm, each of
    the sandbox's ``writable`` folders a new empty one, the package's copy (``library``)
    bound back read-only (:func:`tinyk.grading.namespaces.private_folders`)."""
    from pathlib import Path

    from tinyk.grading.namespaces import private_folders

    return lambda: private_folders(empty=[Path(f) for f in writable], read_only=[Path(library)])


def _notebook(requests: BinaryIO, out: BinaryIO, folders: Callable[[], None]) -> None:
    """In a fork of the main process: new user, mount, process and IPC namespaces for one
    notebook's answers, with its ``folders``, no capability left, and a process 1 that only
    waits (``sleep``, started without copying this process); says so (or why not), then
    forks the child of each of the notebook's runs, until the grader asks it to leave.
    Then it kills that process 1, and with it the kernel kills every process left in the
    namespace; its end waits for them."""
    from tinyk.grading.answer_wire import read_frame, reply
    from tinyk.grading.namespaces import drop_capabilities, new_namespaces

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
            if request[0] == "run":
                _serve_run(request, requests, out)
    finally:
        os.kill(first, signal.SIGKILL)
        os.waitpid(first, 0)


def main() -> None:
    """Serve the notebooks' runs until the grader closes the pipe (arguments: the package's
    copy, then the sandbox's writable folders, made new and empty for each notebook)."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)  # unbuffered: parent and child share it
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # the student's prints go to stderr, never into a reply
    sys.stdin = open(os.devnull)  # the learner's input() reads nothing
    library, writable = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else (None, [])
    _load(library)
    from tinyk.grading.answer_wire import read_frame, reply

    folders = None
    if library is None:
        why = "no sandbox"
    else:
        from tinyk.grading.namespaces import probe

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
        elif request[0] == "run":
            _serve_run(request, requests, out)


if __name__ == "__main__":
    main()
