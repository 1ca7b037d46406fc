"""Shared by the tests: a random model whose continuations depend on the whole prompt, the
processes a hostile submission leaves running, and notebook clients whose kernels listen on
Unix sockets."""

from __future__ import annotations

import inspect
import math
import os
import time
from pathlib import Path

import torch

from tinyk import Transformer


def varied_weights(model: Transformer) -> Transformer:
    """Give the layers unit-variance weights (std 1/sqrt(fan_in)), in eval mode.

    With the default 0.02 init the embedding's identity path decides the next token and
    greedy text just repeats the prompt's last token; with these, attention and the MLP
    decide, so continuations differ by prompt. Seed before calling for reproducible weights.
    """
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2 and not name.startswith("tok_embeddings"):
                p.normal_(0, 1 / math.sqrt(p.shape[1]))
    return model.eval()


def processes_running(argv: list[str]) -> list[int]:
    """Live processes whose command line starts with ``argv`` (the marked ``sleep`` a hostile
    submission leaves behind: its argument names the test run)."""
    wanted = [a.encode() for a in argv]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:len(wanted)] == wanted:
                found.append(int(pid))
        except OSError:  # gone meanwhile, or not ours to read
            pass
    return found


def processes_running_source() -> str:
    """:func:`processes_running`'s own source with its imports, for a submission to define and
    call where it runs (in the sandbox, where ``tests`` cannot be imported)."""
    return "import os\nfrom pathlib import Path\n" + inspect.getsource(processes_running)


def processes_left(argv: list[str]) -> list[int]:
    """:func:`processes_running` once a kill or a sandbox's teardown had time to land: it
    reaches the processes within microseconds, but not synchronously; 60 s is a margin of
    many thousand times."""
    deadline = time.monotonic() + 60
    while processes_running(argv) and time.monotonic() < deadline:
        time.sleep(0.1)
    return processes_running(argv)


def ipc_client(nb, folder: Path, **options):
    """An ``nbclient.NotebookClient`` of ``nb`` (``options``: the client's) whose kernel runs in
    ``folder`` and listens on Unix sockets there, not on TCP ports: a port the client picks as
    free can be taken by another process before the kernel binds it (with two test workers
    starting kernels at once, a kernel died with "Address already in use")."""
    from nbclient import NotebookClient

    client = NotebookClient(nb, resources={"metadata": {"path": str(folder)}}, **options)
    km = client.create_kernel_manager()
    km.transport, km.ip = "ipc", str(Path(folder) / "kernel")
    return client
