"""The bubblewrap sandbox a student's kernel starts in (course section "For instructors").

Read-only: the system folders, the Python installation and environment, the tinyk package,
the grader's copy of SmolLM2's tokenizer (:func:`shared_read_only`), /dev. Writable: the
kernel's scratch folder, its runtime folder (connection file and the Unix sockets of its
channels), a private /tmp and /dev/shm, each a tmpfs (in memory) of :func:`tmpfs_bytes`.
Every namespace unshared: no network, its own processes, which all end when
the kernel ends. The course copy, the gradebook and the hidden tests are out of its sight.
Linux only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tinyk.environment import GRADING, LANGUAGE

__all__ = ["INSTALL_BWRAP", "KERNEL_ENV", "MEMORY_MB", "TMPFS_SHARE", "Sandbox", "check_sandbox",
           "prepare_shared", "require_linux", "sandbox_argv", "shared_read_only", "tmpfs_bytes",
           "warn_unsandboxed"]

INSTALL_BWRAP = ("install bubblewrap (Debian/Ubuntu: 'sudo apt-get install bubblewrap'; Fedora: "
                 "'sudo dnf install bubblewrap'), and allow unprivileged user namespaces if your "
                 "system restricts them (Ubuntu 24.04: 'sudo sysctl "
                 "kernel.apparmor_restrict_unprivileged_userns=0'); or grade with --no-sandbox, "
                 "which runs student code with your rights")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
# The environment of every process that runs a student's code, sandboxed or not. TINYK_GRADING:
# sliders render no frames and course figures no PNG (nor their Chinese version, whatever
# TINYK_FIGURES_ZH says); TINYK_LANGUAGE=en: the package's feedback in English, the language
# of the release's tests and of the mistakes' words, whatever language a notebook's setup cell
# asks for (it sets only an unset one); MPLBACKEND=agg: pyplot shows nothing.
KERNEL_ENV = {GRADING: "1", LANGUAGE: "en", "MPLBACKEND": "agg"}
MEMORY_MB = 8192  # the grader's default --memory-mb (tinyk.grading.runner.Limits)
# A tmpfs holds its files in memory, outside the address-space limit of --memory-mb: each one a
# student's code can write (/tmp, /dev/shm and, in a notebook's own namespaces of the verdict,
# its new empty folders: four at most at once, tinyk.grading.namespaces.private_folders) holds a
# sixteenth of it, a quarter in all; past it, a write fails with ENOSPC (an OSError in their code).
TMPFS_SHARE = 16
_HOME = Path("/tmp")  # the sandboxed process's home: its caches, in its private /tmp, start empty
# but for the grader's read-only copies (shared_read_only)


def require_linux() -> None:
    """Stop unless this is Linux: the grader needs rlimits (``resource``), ``/proc`` and
    bubblewrap."""
    if not sys.platform.startswith("linux"):
        raise SystemExit(f"tinyk.grading grades on Linux only (it needs resource limits, /proc and "
                         f"bubblewrap); this is {sys.platform!r}: grade in a Linux machine or container")


def check_sandbox() -> None:
    """Stop with a clear message unless bubblewrap can build the sandbox here (Linux only)."""
    require_linux()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit(f"grading runs each submission in a bubblewrap sandbox, but 'bwrap' is not "
                         f"installed: {INSTALL_BWRAP}")
    # --size and --perms (bubblewrap 0.5 and later) bound the sandbox's /tmp (sandbox_argv)
    probe = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                            "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(2**20),
                            "--tmpfs", "/tmp", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"bubblewrap cannot build a sandbox here ({probe.stderr.strip()[:200]}): "
                         f"{INSTALL_BWRAP}")


def warn_unsandboxed() -> None:
    """Say on stderr what ``--no-sandbox`` lets student code do."""
    print("WARNING: grading with --no-sandbox: student code runs with your rights, can read and "
          "write your files (hidden tests included) and use the network", file=sys.stderr)


def _python_dirs() -> list[Path]:
    """What the kernel needs to run Python and import tinyk, and nothing of the course around it:
    the interpreter's installation, the environment's packages, the tinyk package folder."""
    import site
    import sysconfig

    import tinyk

    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
            Path(os.path.realpath(sys.executable)).parent.parent, Path(tinyk.__file__).resolve().parent}
    dirs |= {Path(p) for p in sysconfig.get_paths().values()}
    user_site = Path(site.getusersitepackages())
    if user_site.is_dir():
        dirs.add(user_site)
    dirs = {d for d in dirs if d.is_dir()}
    return sorted(d for d in dirs if not any(other in d.parents for other in dirs))  # outermost only


def _sandbox_env(threads: int) -> dict[str, str]:
    """The sandboxed process's whole environment (bubblewrap clears the rest)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(_HOME), "TMPDIR": "/tmp",
           "MPLCONFIGDIR": "/tmp/matplotlib", **KERNEL_ENV}
    for name in ("PYTHONPATH", "LANG", "LC_ALL"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def _smollm2_tokenizer() -> Path | None:
    """Where the grader keeps SmolLM2's tokenizer (:func:`tinyk.interop.gguf.tokenizer_cache`), or None
    without the weights."""
    from tinyk.interop.gguf import smollm2_path, tokenizer_cache

    try:
        return tokenizer_cache(smollm2_path())
    except (FileNotFoundError, ImportError):  # no weights, or no transformers to build it with
        return None


def _plain_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real folder of this user's holding only regular files (no
    symbolic link, which the bind would follow on the grader's side)."""
    try:
        if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            return False
        return all(p.is_file() and not p.is_symlink() for p in folder.iterdir())
    except OSError:
        return False


def shared_read_only() -> list[tuple[Path, Path]]:
    """``(grader's folder, where the sandbox sees it)`` of each folder a kernel would otherwise
    build again in its empty cache, bound read-only: SmolLM2's tokenizer (05.10), which
    :func:`tinyk.interop.gguf.load_tokenizer` builds from the GGUF file in seconds and reads from the
    cache in a fraction of one. Only those the grader has (:func:`prepare_shared`), as plain
    folders of regular files."""
    kept = _smollm2_tokenizer()
    if kept is None or not (kept / "tokenizer.json").is_file() or not _plain_folder(kept):
        return []
    from tinyk.interop.gguf import TOKENIZERS

    # tokenizer_cache's place for a process whose HOME is the sandbox's, with no XDG_CACHE_HOME
    return [(kept, _HOME / ".cache" / TOKENIZERS / kept.name)]


def prepare_shared(modules: Sequence[str]) -> None:
    """Before a run whose notebooks import ``modules``: SmolLM2's tokenizer in the grader's
    cache when they may load it (they import ``tinyk.learner.parts`` or ``tinyk.interop.gguf``), built once
    here instead of once in each student's kernel (:func:`shared_read_only`)."""
    if not {"tinyk.learner.parts", "tinyk.interop.gguf"} & set(modules) or shared_read_only():
        return
    from tinyk.interop.gguf import load_tokenizer, smollm2_path

    try:
        load_tokenizer(smollm2_path())
    except (FileNotFoundError, ImportError):  # no weights: the kernels say so themselves
        pass
    except Exception as err:  # only a speed-up: the kernels build their own, as without it
        print(f"SmolLM2's tokenizer could not be prepared for the kernels ({type(err).__name__}: "
              f"{str(err)[:200]}): each kernel that loads it builds it again", file=sys.stderr)


def tmpfs_bytes(memory_mb: int) -> int:
    """Bytes of each tmpfs a student's code can write, for a memory limit of ``memory_mb``
    megabytes: a :data:`TMPFS_SHARE`-th of it (512 MiB at the default 8192)."""
    return memory_mb * 2**20 // TMPFS_SHARE


def sandbox_argv(scratch: Path, runtime: Path, threads: int = 1, also: Sequence[Path] = (),
                 memory_mb: int = MEMORY_MB) -> list[str]:
    """The bubblewrap command line a kernel starts under (its own command follows it).

    Read-only: the system folders, the Python installation and environment, the tinyk package,
    the grader's copies of what a kernel would build again (:func:`shared_read_only`), /dev.
    Writable: ``scratch`` (its working folder), ``runtime`` (its connection file and the Unix
    sockets of its channels), the folders ``also``, a private
    /tmp and /dev/shm of :func:`tmpfs_bytes` of ``memory_mb`` each. Every namespace unshared:
    no network (its own empty loopback), its own processes, which all end when the kernel ends.
    """
    size = str(tmpfs_bytes(memory_mb))
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--clearenv", "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
            "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/tmp"]
    for name in _SYSTEM_DIRS:
        if os.path.islink(name):
            argv += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            argv += ["--ro-bind", name, name]
    for folder in _python_dirs():
        argv += ["--ro-bind", str(folder), str(folder)]
    for folder in (scratch, runtime, *also):
        argv += ["--bind", str(folder), str(folder)]
    for source, target in shared_read_only():  # -try: gone meanwhile, the kernel builds its own
        argv += ["--ro-bind-try", str(source), str(target)]
    for name, value in sorted(_sandbox_env(threads).items()):
        argv += ["--setenv", name, value]
    return [*argv, "--chdir", str(scratch), "--"]


@dataclass
class Sandbox:
    """Where one student's kernels run: a kernelspec (under ``jupyter``) that starts them under
    bubblewrap, their ``scratch`` folder, and the ``runtime`` folder of their connection files
    and channel sockets."""

    jupyter: Path
    scratch: Path
    runtime: Path
    threads: int = 1
    memory_mb: int = MEMORY_MB  # the submission's memory limit, of which its tmpfs take a share

    @classmethod
    def create(cls, base: Path, threads: int = 1, memory_mb: int = MEMORY_MB) -> Sandbox:
        """The folders and kernelspec of a new sandbox under ``base``, whose tmpfs are sized for
        a memory limit of ``memory_mb`` (:func:`tmpfs_bytes`)."""
        box = cls(base / "jupyter", base / "scratch", base / "run", threads, memory_mb)
        for folder in (box.scratch, box.runtime):
            folder.mkdir(parents=True)
        spec = box.jupyter / "kernels" / "python3"
        spec.mkdir(parents=True)
        argv = [*sandbox_argv(box.scratch, box.runtime, threads, memory_mb=memory_mb), sys.executable,
                "-m", "ipykernel_launcher",
                "-f", "{connection_file}"]
        # bwrap does not pass signals on: an interrupt (after a cell timeout) goes as a message
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3 (sandboxed)",
                                                      "language": "python", "interrupt_mode": "message"}))
        return box
