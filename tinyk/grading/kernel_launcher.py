"""The command a warm kernelspec starts (course section "For instructors", the sandbox).

    python -I -S kernel_launcher.py SOCKET CONNECTION_FILE -- COLD_COMMAND ...

Standard library only, no import of torch: it asks the warm server (:mod:`tinyk.grading.warm_kernel`)
listening on ``SOCKET`` for a kernel on ``CONNECTION_FILE``, waits for that kernel's end and
exits with its status. When Jupyter kills it (a shutdown that timed out) or ends, its
connection closes and the server kills the kernel and everything the kernel started. When the server
cannot give a kernel, it runs ``COLD_COMMAND`` instead (the sandboxed cold kernel), after a
line on stderr saying why.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys

__all__ = ["main"]


def _cold(command: list[str], why: str) -> None:
    print(f"warm kernel unavailable ({why.strip()[:300]}): starting a cold one", file=sys.stderr, flush=True)
    os.execvp(command[0], command)


def main(argv: list[str]) -> int:
    """Ask for a warm kernel and wait for its end; the cold command if there is none."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: ends with Jupyter, as bwrap does
    split = argv.index("--")
    (path, connection_file), command = argv[:split], argv[split + 1:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        conn.sendall(json.dumps({"connection_file": connection_file}).encode() + b"\n")
        replies = conn.makefile("rb")
        first = replies.readline(4096).decode(errors="replace")
    except OSError as err:
        first = f"cold {err}"
    if not first.startswith("started"):
        conn.close()
        _cold(command, first.removeprefix("cold ") or "the server closed the connection")
    last = replies.readline(4096).decode(errors="replace")
    return int(last.split()[1]) if last.startswith("exit ") else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
