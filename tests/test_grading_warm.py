"""Warm kernels (tinyk.warm_kernel): each notebook's kernel forked from the student's warm
server starts as clean as a cold one, whatever the student's previous notebook did, and
grading falls back to cold kernels, saying so, when the server cannot serve.

A student's first notebook attacks: it patches ``torch.allclose`` and a tinyk function,
writes /tmp, /dev/shm and its working folder, leaves a process running, and tries to kill,
trace and read the memory of the warm server, which it can see in /proc, and to reach its
socket. Their second notebook checks, in its kernel, that none of it is there, and its answer
is wrong in the verdict's run of the answers (tinyk.answers, in the same sandbox) if any of
it is there, or anything in that run's working folder; its rows must equal those of a student
who submitted the same second notebook after an honest first one. Speed is measured in
``benchmarks/bench_grading.py --compare-cold``, not here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from unittest import mock

import pytest

from tests.helpers import processes_running, processes_running_source
from tests.test_grading import SOLUTION_A, SOLUTION_B, _answer, _cell, _drill
from tinyk import course, grading, warm_kernel
from tinyk.grading import runner
from tinyk.grading.sandbox import Sandbox
from tinyk.warm_kernel import imported_modules

pytestmark = pytest.mark.slow  # nbgrader starts a kernel per notebook graded
MARKER = ["sleep", f"3031.{os.getpid()}"]  # names this run's leftover, as in test_grading_sandbox

ATTACK = f"""
import ctypes, glob, os, signal, subprocess, sys
import torch, tinyk
vars(torch).update(allclose=lambda *args, **kwargs: True)  # past the grader's screen of patches
vars(tinyk).update(apply_rotary_emb=lambda *args, **kwargs: 'planted')
assert torch.allclose(torch.zeros(1), torch.ones(1))
for planted in ['/tmp/planted-by-the-first-notebook', '/dev/shm/planted-by-the-first-notebook',
                'planted-by-the-first-notebook']:  # the last in its working folder
    open(planted, 'w').write('x')
subprocess.Popen({MARKER!r}, start_new_session=True)
WARM_KERNEL = {str(Path(warm_kernel.__file__).resolve()).encode()!r}
def cmdline(pid):
    try:
        return open(f'/proc/{{pid}}/cmdline', 'rb').read()
    except OSError:
        return b''
# the server and the kernels' monitors (forks of it, as this kernel and its parent are)
OWN = [os.readlink('/proc/self'), open('/proc/self/stat').read().rsplit(')', 1)[1].split()[1]]
SERVER = [pid for pid in os.listdir('/proc') if pid.isdigit() and pid not in OWN
          and cmdline(pid).split(b'\\0')[2:3] == [WARM_KERNEL]]
REACHED = glob.glob(os.path.join(os.getcwd(), '..', 'warm', '*'))  # its socket
libc = ctypes.CDLL(None, use_errno=True)
for pid in SERVER:
    try:
        with open(f'/proc/{{pid}}/mem', 'rb') as mem:
            REACHED.append(('mem', pid))
    except OSError:
        pass
    try:
        signal.pidfd_send_signal(os.open(f'/proc/{{pid}}', os.O_RDONLY | os.O_DIRECTORY), signal.SIGKILL)
        REACHED.append(('signal', pid))
    except OSError:
        pass
    if libc.ptrace(16, int(pid), 0, 0) == 0:  # PTRACE_ATTACH, by the number it can see
        REACHED.append(('ptrace', pid))
SHARED = glob.glob('/tmp/.cache/tinyk/tokenizers/*/tokenizer.json')  # the grader's copy, read-only
for path in SHARED:
    try:
        open(path, 'a').write('x')
        REACHED.append(('shared', path))
    except OSError:
        pass
if 'ZMQ' in type(get_ipython()).__name__:  # in nbgrader's kernel (the verdict runs the cells again)
    assert SERVER and len(SHARED) == SHARED_BY_THE_GRADER and not REACHED, (SERVER, SHARED, REACHED)
""" + SOLUTION_A

CHECK = f"""
import os, sys
import torch, tinyk
{processes_running_source()}
LEFT = [name for name, found in [
    ('allclose', torch.allclose(torch.zeros(1), torch.ones(1))),
    ('tinyk', tinyk.apply_rotary_emb.__name__ != 'apply_rotary_emb'),
    ('tmp', os.path.exists('/tmp/planted-by-the-first-notebook')),
    ('shm', os.path.exists('/dev/shm/planted-by-the-first-notebook')),
    ('process', processes_running({MARKER!r})),
] if found]
if 'ZMQ' in type(get_ipython()).__name__:  # in nbgrader's kernel
    assert not LEFT, LEFT
""" + SOLUTION_A + """
if 'ZMQ' not in type(get_ipython()).__name__ and (LEFT or os.listdir('.')):  # in the verdict's run,
    def double(x):  # whose working folder starts empty too: a wrong answer if anything is left
        return 0
"""


_RENAMED = [("a_solution", "c_solution"), ("a_test", "c_test"), ("b_solution", "d_solution"),
            ("b_test", "d_test")]


def _second(nb: dict, back: bool = False) -> dict:
    """The drill with other grade ids (c, d): a second notebook of the same assignment
    (``back``: the ids of the drill again)."""
    text = json.dumps(nb)
    for old, new in _RENAMED:
        text = text.replace(*((new, old) if back else (old, new)))
    return json.loads(text)


def _importing(nb: dict) -> dict:
    """The drill with a first code cell that imports torch and tinyk: the warm server imports
    them too (it imports what the released notebooks import), so the attack patches modules
    that the next kernel inherits from the server."""
    nb["cells"].insert(1, {**_cell("code", "import torch\nimport tinyk"), "id": "imports"})
    return nb


@pytest.fixture(scope="session")
def warm_course(tmp_path_factory):
    """Two notebooks and two students: one whose first notebook attacks, one honest. The
    grader shares SmolLM2's tokenizer (read-only) with the kernels, as for 05.10, where the
    weights are installed."""
    from tinyk.grading.sandbox import prepare_shared, shared_read_only

    prepare_shared(["tinyk.parts"])
    shared = shared_read_only()
    base = tmp_path_factory.mktemp("warm")
    for index, (folder, _) in enumerate(shared):  # to compare after the run
        shutil.copytree(folder, base / "shared-before" / str(index))
    (base / "shared.json").write_text(json.dumps([str(folder) for folder, _ in shared]))
    source = base / "source"
    source.mkdir()
    (source / "n1_first.ipynb").write_text(json.dumps(_importing(_drill())))
    (source / "n2_second.ipynb").write_text(json.dumps(_second(_importing(_drill()))))
    notebooks = [source / "n1_first.ipynb", source / "n2_second.ipynb"]
    first, second = (json.loads(p.read_text()) for p in grading.release(base / "release", notebooks))
    subs = base / "submissions"
    for student, attack in [("attacker", ATTACK), ("alone", SOLUTION_A)]:
        (subs / student).mkdir(parents=True)
        attack = attack.replace("SHARED_BY_THE_GRADER", str(len(shared)))
        (subs / student / "n1_first.ipynb").write_text(json.dumps(_answer(first, attack, SOLUTION_B)))
        (subs / student / "n2_second.ipynb").write_text(json.dumps(_second(_answer(_second(second, back=True),
                                                                                     CHECK, SOLUTION_B))))
    return base, subs, notebooks


def _grade(base: Path, subs: Path, notebooks: list[Path], out: str, **kwargs) -> tuple[dict, str]:
    """Rows by (student, notebook, exercise) and what the run said on stderr."""
    said = io.StringIO()
    limits = grading.Limits(cell_timeout=120, total_timeout=900, memory_mb=16384)
    with mock.patch.object(runner, "_SAID", set()), contextlib.redirect_stderr(said):
        rows = grading.grade(subs, base / out, notebooks, limits=limits, jobs=2, progress=False, **kwargs)
    found = {(r.student, r.notebook, r.exercise): (r.points, r.status, r.detail) for r in rows}
    return found, said.getvalue()


@pytest.fixture(scope="session")
def warm_run(warm_course):
    base, subs, notebooks = warm_course
    try:
        return _grade(base, subs, notebooks, "warm.csv")
    finally:
        left = processes_running(MARKER)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        (base / "left").write_text(json.dumps(left))


def test_a_notebook_after_an_attack_starts_as_clean_as_alone(warm_course, warm_run):
    rows, said = warm_run
    assert "warm kernel" not in said  # every kernel was forked from a live warm server
    full = {"a_test": 2.0, "b_test": 1.0, "c_test": 2.0, "d_test": 1.0}
    assert len(rows) == 2 * len(full)  # both students, every exercise
    for (_, _, exercise), (points, status, detail) in rows.items():
        # the attacker's kernel found the server and reached nothing (else its answer raised
        # there, and the detail says so); the second notebook found nothing of the first
        assert (points, status, detail) == (full[exercise], "ok", ""), (exercise, detail)
    assert {k[1:]: v for k, v in rows.items() if k[0] == "attacker"} == \
        {k[1:]: v for k, v in rows.items() if k[0] == "alone"}
    assert json.loads((warm_course[0] / "left").read_text()) == []  # nothing left running
    shared = [Path(folder) for folder in json.loads((warm_course[0] / "shared.json").read_text())]
    after = [{p.name: p.read_bytes() for p in folder.iterdir()} for folder in shared]
    before = [{p.name: p.read_bytes() for p in (warm_course[0] / "shared-before" / str(i)).iterdir()}
              for i in range(len(shared))]
    assert after == before  # the grader's shared copies, unchanged by the attack


def test_without_a_warm_server_kernels_start_cold_and_it_is_said(warm_course, warm_run, monkeypatch):
    base, subs, notebooks = warm_course
    alone = base / "alone-only"
    alone.mkdir()
    shutil.copytree(subs / "alone", alone / "alone")
    fake = [sys.executable, "-c", "print('cold: simulated, no server')"]
    monkeypatch.setattr(Sandbox, "server_argv", lambda self, fd, modules: fake)
    rows, said = _grade(base, alone, notebooks[1:], "cold.csv")
    assert said.count("warm kernels unavailable (simulated, no server): kernels start cold") == 1
    assert rows == {k: v for k, v in warm_run[0].items() if k[0] == "alone" and k[1] == "n2_second"}


def test_the_cold_kernels_switch_writes_a_kernelspec_without_the_launcher(tmp_path):
    def argv(box: Sandbox) -> list[str]:
        return json.loads((box.jupyter / "kernels" / "python3" / "kernel.json").read_text())["argv"]

    cold, warm = argv(Sandbox.create(tmp_path / "a")), argv(Sandbox.create(tmp_path / "b", warm=True))
    assert cold[0].endswith("bwrap") and cold[-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    # the launcher, then the cold kernel's command line it falls back to
    assert warm[1:4] == ["-I", "-S", str(Path(runner.__file__).with_name("kernel_launcher.py"))]
    assert warm[4:7] == [str(tmp_path / "b" / "warm" / "kernels.sock"), "{connection_file}", "--"]
    assert [a.replace(str(tmp_path / "b"), str(tmp_path / "a")) for a in warm[7:]] == cold
    # the server imports what the released notebooks import: here, what the warm batch's import
    magic = {"cells": [_cell("code", "%time x = 1\nfrom a.b import c")]}
    assert imported_modules([_importing(_drill()), magic]) == ["torch", "tinyk", "a.b"]


def test_the_server_imports_only_what_runs_when_graded(tmp_path):
    """A cell emptied before grading (tagged skip-when-grading, no exercise) imports nothing into
    the warm server; an exercise cell runs whatever its tags, and so do its imports. The
    chapter's own skipped cells are the only ones that import transformers."""
    skipped = {"tags": [grading.SKIP_TAG]}
    exercise = {"tags": [grading.SKIP_TAG], "nbgrader": {"grade_id": "e", "solution": True, "grade": False}}
    notebook = {"cells": [_cell("code", "import figures.only", skipped), _cell("code", "import kept", {}),
                          _cell("code", "from exercise import part", exercise)]}
    (tmp_path / "a.ipynb").write_text(json.dumps(notebook))
    assert runner.server_modules(tmp_path) == ["kept", "exercise"]
    student = course.ROOT / "student"
    chapter = [m for m in runner.server_modules(student) if m.split(".")[0] == "transformers"]
    everything = imported_modules([json.loads(p.read_text()) for p in sorted(student.glob("*.ipynb"))])
    assert chapter == [] and "transformers" in everything
