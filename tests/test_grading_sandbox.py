"""Submissions written to attack the grader, graded in the sandbox and with --no-sandbox.

Each attack answers exercise A only if the attack worked (a read, a connection), or leaves
a trace outside (a file, a process) that the test looks for on the host. In the sandbox
every attack fails while the honest student keeps full marks; without it, the same batch
shows what gets through. The instructors' page states these results.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import tinyk
from tests.helpers import processes_left, processes_running
from tests.test_grading import SOLUTION_A, SOLUTION_B, _answer, _drill
from tinyk.grading import assignment, runner
from tinyk.grading import batch as grading_batch
from tinyk.grading import sandbox as grading_sandbox
from tinyk.grading.sandbox import prepare_shared, sandbox_argv, shared_read_only

SANDBOX_BATCH = pytest.mark.xdist_group("grading-sandbox")
pytestmark = pytest.mark.slow  # the verdict starts a learner's process per student
ROOT = Path(tinyk.__file__).resolve().parent.parent  # the checkout the grader runs from
# The process the "survive" attack leaves behind: its duration names this test run, so that
# another run of the suite on the same machine neither finds nor kills it.
MARKER = ["sleep", f"3021.{os.getpid()}"]
PLANTED = [ROOT / "planted_by_student.txt", Path(tinyk.__file__).parent / "planted_by_student.py"]


def _attack(code: str) -> str:
    """Exercise A's answer: the attack, then ``double`` that is right only if ``GOT`` is set."""
    return ("GOT = False\ntry:\n" + textwrap.indent(code, "    ") +
            "\nexcept Exception as err:\n    print('attack failed:', type(err).__name__, err)\n"
            "def double(x):\n    return 2 * x if GOT else 0")


def _attacks(source: Path, subs: Path, port: int) -> dict[str, str]:
    return {
        "read_sources": f"GOT = 'HIDDEN TESTS' in open({str(source)!r}).read()",
        "read_hidden_tests": (  # the gradebook and the course copies of the grader
            "import glob\n"
            "def peek(path):\n"
            "    try:\n"
            "        return open(path, 'rb').read()\n"
            "    except OSError:\n"
            "        return b''\n"
            "found = glob.glob('/tmp/tinyk-*/course/**', recursive=True) + glob.glob('../../../*')\n"
            "GOT = any(b'for x in (5, -3, 0)' in peek(p) for p in found if p.endswith(('.db', '.ipynb')))"),
        "read_others": (f"import glob\nGOT = any('def shout' in open(p).read() for p in "
                        f"glob.glob({str(subs)!r} + '/*/drill.ipynb') if 'read_others' not in p)"),
        "network": (f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)"
                    ".sendall(b'hi')\nGOT = True"),
        "write_outside": (f"open({str(subs / 'planted.txt')!r}, 'w').write('x')\n"
                          f"open({str(PLANTED[0])!r}, 'w').write('x')\nGOT = True"),
        "tamper_package": f"open({str(PLANTED[1])!r}, 'w').write('pwned = True')\nGOT = True",
        "survive": ("import subprocess\n"
                    f"subprocess.Popen({MARKER!r}, cwd='/', start_new_session=True)\n"
                    "GOT = True"),
    }


def _clean_up() -> None:
    for path in PLANTED:
        path.unlink(missing_ok=True)
    for pid in processes_running(MARKER):
        os.kill(pid, signal.SIGKILL)


def _run(tmp: Path, sandbox: bool) -> dict:
    """Grade the batch; return the points on A per student and what reached the host."""
    source = tmp / "instructor" / "source"
    source.mkdir(parents=True)
    (source / "drill.ipynb").write_text(json.dumps(_drill()))
    release = json.loads(assignment.release(tmp / "release", [source / "drill.ipynb"])[0].read_text())
    server = socket.create_server(("127.0.0.1", 0))
    connections: list[bytes] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed
                return
            connections.append(conn.recv(16))
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    subs = tmp / "instructor" / "submissions"
    students = {"honest": _answer(release, SOLUTION_A, SOLUTION_B)}
    for name, code in _attacks(source / "drill.ipynb", subs, server.getsockname()[1]).items():
        students[name] = _answer(release, _attack(code), SOLUTION_B)
    for name, nb in students.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(nb))
    _clean_up()
    try:
        limits = runner.Limits(cell_timeout=120, total_timeout=900, memory_mb=16384)
        rows = grading_batch.grade(subs, tmp / "grades.csv", [source / "drill.ipynb"], limits=limits, jobs=2,
                             progress=False, sandbox=sandbox)
        return {"points": {(r.student, r.exercise): r.points for r in rows},
                "statuses": {r.status for r in rows},
                "planted": [p.name for p in [subs / "planted.txt", *PLANTED] if p.exists()],
                "connections": list(connections),
                "survivors": processes_left(MARKER) if sandbox else processes_running(MARKER)}
    finally:
        server.close()
        _clean_up()


@pytest.fixture(scope="session")
def sandboxed(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("sandboxed"), sandbox=True)


@pytest.fixture(scope="session")
def unsandboxed(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("unsandboxed"), sandbox=False)


READS = ["read_sources", "read_hidden_tests", "read_others", "network"]


@SANDBOX_BATCH
def test_the_sandbox_stops_every_attack_and_keeps_honest_marks(sandboxed):
    points = sandboxed["points"]
    assert points[("honest", "a_test")] == 2 and points[("honest", "b_test")] == 1
    assert {s: points[(s, "a_test")] for s in READS} == dict.fromkeys(READS, 0.0)  # nothing read, no network
    assert sandboxed["connections"] == []
    assert sandboxed["planted"] == []  # no file written outside: submissions, checkout, package
    assert sandboxed["survivors"] == []  # nothing left running
    assert sandboxed["statuses"] == {"ok"}
    # each attacker still answered B: the sandbox costs an honest answer nothing
    assert all(points[(s, "b_test")] == 1 for s, _ in points)


@SANDBOX_BATCH
def test_without_the_sandbox_the_attacks_get_through(unsandboxed, capfd):
    points = unsandboxed["points"]
    assert points[("honest", "a_test")] == 2
    assert {s: points[(s, "a_test")] for s in READS} == dict.fromkeys(READS, 2.0)
    # once: the notebook runs once, in the verdict (tinyk.grading.verdict)
    assert unsandboxed["connections"] == [b"hi"]
    assert unsandboxed["planted"] == ["planted.txt", *(p.name for p in PLANTED)]
    assert len(unsandboxed["survivors"]) >= 1  # outlived its grading (killed by this test)


def test_no_sandbox_is_logged(tmp_path, capsys):
    with pytest.raises(SystemExit):  # no notebooks: stops right after the warning
        grading_batch.grade(tmp_path, tmp_path / "g.csv", [], source=tmp_path, sandbox=False, progress=False)
    assert "WARNING: grading with --no-sandbox" in capsys.readouterr().err


PROBE = """
import json, os, socket, sys, sysconfig
result = {}
for name, folder in [("usr", "/usr"), ("etc", "/etc"), ("venv", sysconfig.get_paths()["purelib"]),
                     ("python", sys.base_prefix), ("package", PACKAGE)]:
    path = folder + "/tinyk-sandbox-probe"
    try:
        open(path, "w").write("x")
        result[name] = "written"
    except OSError as err:
        result[name] = type(err).__name__
result["checkout"] = sorted(os.listdir(CHECKOUT))
result["tmp"] = sorted(os.listdir("/tmp"))
open("/tmp/scratch-ok", "w").write("x")
open("own-file", "w").write("x")
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=5)
    result["network"] = "connected"
except OSError as err:
    result["network"] = type(err).__name__
import tinyk, torch
result["imports"] = [tinyk.__name__, torch.__name__]
print(json.dumps(result))
"""


def test_the_sandbox_is_read_only_outside_its_folders(tmp_path):
    """The sandbox a kernel starts in, probed with a plain Python command: the system, the
    Python installation, the environment and tinyk are read-only; the course checkout shows
    only the package; /tmp is private; the host's loopback is out of reach.

    The sandbox's /tmp is a tmpfs: it lists only the way down to the folders bound into it,
    the scratch and runtime folders and, where the checkout or its environment lives under
    /tmp, those too, never anything else of the host's /tmp (a file this test leaves there
    for the time of the probe would show if the host's /tmp were bound)."""
    grading_sandbox.check_sandbox()
    scratch, runtime = tmp_path / "scratch", tmp_path / "run"
    scratch.mkdir()
    runtime.mkdir()
    host_only = Path(tempfile.mkstemp(dir="/tmp", prefix="tinyk-host-only-")[1])
    server = socket.create_server(("127.0.0.1", 0))
    code = (PROBE.replace("PACKAGE", repr(str(Path(tinyk.__file__).parent)))
            .replace("CHECKOUT", repr(str(ROOT))).replace("PORT", str(server.getsockname()[1])))
    folders = ("/usr", "/etc", sysconfig.get_paths()["purelib"], sys.base_prefix, Path(tinyk.__file__).parent)
    probes = [Path(folder) / "tinyk-sandbox-probe" for folder in folders]
    argv = sandbox_argv(scratch, runtime)
    try:
        done = subprocess.run([*argv, sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=600)
    finally:
        server.close()
        host_only.unlink()
        leaked = [p for p in probes if p.exists()]
        for path in leaked:  # only if the sandbox failed: leave nothing behind on the host
            path.unlink()
    assert leaked == []
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    for name in ("usr", "etc", "venv", "python", "package"):
        assert result[name] in ("OSError", "PermissionError"), (name, result[name])
    # No notebooks, no submissions, no .git: only the package, and the Python environment
    # where it lives inside the checkout (a .venv made by make), both read-only.
    environment = Path(sys.prefix).resolve()
    inside = [environment.relative_to(ROOT).parts[0]] if environment.is_relative_to(ROOT) else []
    assert result["checkout"] == sorted(["tinyk", *inside])
    # not the host's /tmp: only the way down to its own two folders, and to the package and
    # the Python environment when they live under /tmp
    shared = [Path(argv[i + 2]) for i, arg in enumerate(argv) if arg == "--ro-bind-try"]  # grader's copies
    bound = (scratch, runtime, Path(tinyk.__file__).resolve().parent, Path(sys.prefix), Path(sys.base_prefix),
             *shared)
    assert result["tmp"] == sorted({p.relative_to("/tmp").parts[0] for p in bound
                                    if p.is_relative_to("/tmp")})
    assert host_only.name not in result["tmp"]
    assert result["network"] in ("ConnectionRefusedError", "OSError"), result["network"]
    assert result["imports"] == ["tinyk", "torch"]
    assert [p.name for p in scratch.iterdir()] == ["own-file"]  # its working folder is the scratch folder
    assert not (Path("/tmp") / "scratch-ok").exists()


FILL_PROBE = """
import errno, importlib.util, json, os
def fill(folder):
    chunk, written = bytes(2**20), 0
    try:
        with open(os.path.join(folder, "fill"), "wb") as f:
            for _ in range(BOUND // 2**20 + 4):
                f.write(chunk)
                written += 1
    except OSError as err:
        return [errno.errorcode[err.errno], written]
    finally:
        if os.path.exists(os.path.join(folder, "fill")):
            os.unlink(os.path.join(folder, "fill"))
    return ["written", written]
result = {"tmp": fill("/tmp"), "shm": fill("/dev/shm"), "dev": fill("/dev")}
spec = importlib.util.spec_from_file_location("namespaces", NAMESPACES)  # by path: no torch
spaces = importlib.util.module_from_spec(spec)
spec.loader.exec_module(spaces)
spaces.new_namespaces()
from pathlib import Path
# a notebook's run's, in the learner's process (tinyk.grading.learner_process)
spaces.private_folders(empty=[Path(SCRATCH)])
result.update(private_tmp=fill("/tmp"), private_shm=fill("/dev/shm"), private_empty=fill(SCRATCH))
print(json.dumps(result))
"""


def test_a_sandboxs_tmpfs_hold_a_share_of_its_memory_limit(tmp_path):
    """/tmp and /dev/shm are tmpfs, in memory outside the address-space limit: each holds
    tmpfs_bytes(memory_mb) (4 MiB for a limit of 64 MB), and so do the private ones that a
    notebook's run mounts in its own namespaces (tinyk.grading.namespaces);
    past it a write fails with ENOSPC. /dev itself is read-only."""
    from tinyk.grading.sandbox import tmpfs_bytes

    grading_sandbox.check_sandbox()
    (scratch := tmp_path / "scratch").mkdir()
    (runtime := tmp_path / "run").mkdir()
    bound = tmpfs_bytes(64)
    code = (FILL_PROBE.replace("BOUND", str(bound)).replace("SCRATCH", repr(str(scratch)))
            .replace("NAMESPACES", repr(str(Path(tinyk.__file__).parent / "grading" / "namespaces.py"))))
    done = subprocess.run([*sandbox_argv(scratch, runtime, memory_mb=64), sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    full = ["ENOSPC", bound // 2**20]  # every whole MiB under the bound written, the next refused
    assert result == {"tmp": full, "shm": full, "dev": ["EROFS", 0], "private_tmp": full,
                      "private_shm": full, "private_empty": full}
    # the grader's own sandboxes take the submission's limit: the learner's process's, and
    # that of the sandbox's kernelspec
    from tinyk.grading.runner import Limits
    from tinyk.grading.sandbox import Sandbox
    from tinyk.grading.scoring import answers_prefix

    box = Sandbox.create(tmp_path / "box", memory_mb=2048)
    kernel = json.loads((box.jupyter / "kernels" / "python3" / "kernel.json").read_text())["argv"]
    for argv in (answers_prefix(box, Limits(memory_mb=2048)), kernel):
        assert [argv[i - 2:i + 2] for i, a in enumerate(argv) if a == "--tmpfs"] == \
            [["--size", str(2**27), "--tmpfs", "/dev/shm"], ["--size", str(2**27), "--tmpfs", "/tmp"]]


SHARED_PROBE = """
import json
from pathlib import Path
import tinyk.interop.gguf as g
def built(path):
    raise AssertionError("built from the GGUF file again")
g._convert_tokenizer = built
path = g.smollm2_path()
kept = g.tokenizer_cache(path)
result = {"kept": str(kept), "chat": g.load_tokenizer(path).apply_chat_template(
    [{"role": "user", "content": "Hi"}], tokenize=False)}
for name in ("tokenizer.json", "planted"):
    try:
        open(kept / name, "a").write("x")
        result[name] = "written"
    except OSError as err:
        result[name] = type(err).__name__
print(json.dumps(result))
"""


def test_a_kernel_reads_smollm2s_tokenizer_from_the_graders_copy_and_cannot_change_it(tmp_path):
    """05.10's kernels load SmolLM2's tokenizer: in the sandbox's empty cache it would be built
    from the GGUF file again for every student (seconds each); the grader builds it once
    (prepare_shared) and binds its copy read-only where the kernel's tokenizer_cache looks."""
    from tests.optional import smollm2_file
    from tinyk.interop.gguf import load_tokenizer, tokenizer_cache

    grading_sandbox.check_sandbox()
    kept = tokenizer_cache(smollm2_file())
    prepare_shared(["tinyk.learner.parts"])
    before = {p.name: p.read_bytes() for p in kept.iterdir()}
    (scratch := tmp_path / "scratch").mkdir()
    (runtime := tmp_path / "run").mkdir()
    done = subprocess.run([*sandbox_argv(scratch, runtime), sys.executable, "-c", SHARED_PROBE],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]  # read, never built (that raises)
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["kept"] == f"/tmp/.cache/tinyk/tokenizers/{kept.name}"
    assert result["chat"] == load_tokenizer(smollm2_file()).apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False)
    assert result["tokenizer.json"] in ("OSError", "PermissionError")
    assert result["planted"] in ("OSError", "PermissionError")
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == before
    assert shared_read_only() == [(kept, Path(result["kept"]))]


def test_a_shared_copy_is_bound_only_as_a_plain_folder_of_the_graders(tmp_path, monkeypatch):
    """The grader's tokenizer is bound into every sandbox only as a real folder of regular
    files owned by the grader: a symbolic link (to the course folder, say), at the folder or
    inside it, would make the bind show what it points to."""
    from tests.optional import smollm2_file
    from tinyk.interop.gguf import tokenizer_cache

    smollm2_file()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kept = tokenizer_cache(smollm2_file())
    elsewhere = tmp_path / "course"
    elsewhere.mkdir()
    (elsewhere / "tokenizer.json").write_text("{}")
    kept.parent.mkdir(parents=True)
    kept.symlink_to(elsewhere)
    assert shared_read_only() == []
    kept.unlink()
    kept.mkdir()
    (kept / "tokenizer.json").write_text("{}")
    assert shared_read_only() == [(kept, Path("/tmp/.cache/tinyk/tokenizers") / kept.name)]
    (kept / "gradebook.db").symlink_to(elsewhere / "tokenizer.json")
    assert shared_read_only() == []
