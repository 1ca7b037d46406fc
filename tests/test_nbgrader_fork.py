"""nbgrader's runs are forks of a server that imported it once (tinyk.grading.nbgrader_fork):
a forked command sees what the same command started as a subprocess sees (its arguments,
working folder, environment, TMPDIR, session, memory limit, stdin, descriptors), prints the
same and ends with the same status; the grader can end its whole session; and nbgrader's
own output and status come back as from ``python -m nbgrader``."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyk.courseware.checkout import ROOT
from tinyk.grading import nbgrader_fork, runner

MEMORY = 2**35  # 32 GB of address space: a limit the probe can see, far above what it needs


def _command_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "own-tmp").mkdir()
    (tmp_path / "work").mkdir()
    env = dict(os.environ, TINYK_PROBE="from the command", TMPDIR=str(tmp_path / "own-tmp"),
               PYTHONPATH=str(ROOT))  # the subprocess finds tests.fork_probe; the server has it on its path
    return tmp_path / "work", env


def _as_subprocess(cmd: list[str], work: Path, env: dict[str, str]) -> tuple[int, dict, str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    run = subprocess.run(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         preexec_fn=limit, start_new_session=True)
    return run.returncode, json.loads(run.stdout), run.stderr


def _as_fork(cmd: list[str], work: Path, env: dict[str, str], tmp_path: Path) -> tuple[int, dict, str]:
    out, err = tmp_path / "out", tmp_path / "err"
    out.touch()
    err.touch()
    code = nbgrader_fork.fork_run(cmd, str(work), env, MEMORY, str(out), str(err)).wait()
    return code, json.loads(out.read_text()), err.read_text()


@pytest.mark.parametrize("args", [["exit", "3"], ["a b", "ü"]], ids=["exit-3", "odd-arguments"])
def test_a_forked_command_sees_and_does_what_the_subprocess_did(tmp_path, args):
    work, env = _command_env(tmp_path)
    cmd = [sys.executable, "-m", "tests.fork_probe", *args]
    code, seen, said = _as_fork(cmd, work, env, tmp_path)
    expected_code, expected, expected_said = _as_subprocess(cmd, work, env)
    assert (seen.pop("preloaded"), expected.pop("preloaded")) == (True, False)  # forked from the server
    assert seen == expected, (seen, expected)
    assert seen["argv"] == args and seen["cwd"] == str(work) and seen["own_session"]
    assert seen["tmp"] == env["TMPDIR"] and seen["probe"] == "from the command" and seen["memory"] == MEMORY
    assert seen["stdin"] == "" and seen["name"] == "__main__" and seen["descriptors"] == [0, 1, 2, 3]
    assert (code, said) == (expected_code, expected_said) == (3 if args[0] == "exit" else 0, "to stderr\n")


def test_the_grader_ends_a_forked_run_and_everything_in_its_session(tmp_path):
    work, env = _command_env(tmp_path)
    out = tmp_path / "out"
    out.touch()
    run = nbgrader_fork.fork_run([sys.executable, "-m", "tests.fork_probe", "sleep"], str(work), env, None,
                                 str(out), str(out))
    for _ in range(1200):  # its first line says it runs (a status, not a time; 2 min at most)
        if out.read_text().startswith("{"):
            break
        time.sleep(0.1)
    assert run.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        run.wait(0.01)  # it sleeps for 3000 s
    session = _in_session(run.pid)
    assert len(session) == 2, session  # the probe and its child
    os.killpg(run.pid, signal.SIGKILL)  # what run_nbgrader does past the total time limit
    assert run.wait() == -signal.SIGKILL
    for _ in range(1200):
        if not _in_session(run.pid):
            break
        time.sleep(0.1)
    assert _in_session(run.pid) == []


def _in_session(sid: int) -> list[int]:
    """The live processes (not zombies) of session ``sid``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # state, ppid, pgrp, session
            found.append(int(pid))
    return found


@pytest.mark.parametrize("args", [["--version"], ["generate_assignment", "no_such_assignment"]])
def test_run_nbgrader_gives_what_python_m_nbgrader_gives(tmp_path, args):
    got = runner.run_nbgrader(args, tmp_path)
    cmd, env = runner._command(args, tmp_path)
    expected = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert got.returncode == (0 if args == ["--version"] else 1), got


def test_a_command_that_is_not_python_m_module_is_refused():
    with pytest.raises(ValueError, match="python -m MODULE"):
        nbgrader_fork.fork_run(["nbgrader", "autograde"], "/", {}, None, os.devnull, os.devnull)


def test_a_server_that_died_is_replaced_and_its_socket_closed(tmp_path):
    work, env = _command_env(tmp_path)
    cmd = [sys.executable, "-m", "tests.fork_probe", "exit", "3"]
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    assert _as_fork(cmd, work, env, tmp_path / "first")[0] == 3
    proc, ours = nbgrader_fork._server
    proc.kill()
    proc.wait()
    assert _as_fork(cmd, work, env, tmp_path / "second")[0] == 3  # a new server ran it
    assert nbgrader_fork._server[0] is not proc and nbgrader_fork._server[0].poll() is None
    assert ours.fileno() == -1  # the dead server's end is closed, not leaked
