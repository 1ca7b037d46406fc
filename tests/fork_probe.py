"""``python -m tests.fork_probe [exit CODE | sleep]``: prints, as JSON, what a process started
for a command sees (tests/test_nbgrader_fork.py runs it as a subprocess and as a fork of
tinyk.grading.nbgrader_fork's server, and compares)."""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

seen = {"argv": sys.argv[1:], "cwd": os.getcwd(), "probe": os.environ.get("TINYK_PROBE"),
        "tmp": tempfile.gettempdir(), "own_session": os.getsid(0) == os.getpid(),
        "memory": resource.getrlimit(resource.RLIMIT_AS)[0], "stdin": sys.stdin.read(),
        "name": __name__, "preloaded": "nbgrader.apps.nbgraderapp" in sys.modules,
        "descriptors": sorted(int(fd) for fd in os.listdir("/proc/self/fd"))}
print(json.dumps(seen), flush=True)
print("to stderr", file=sys.stderr)
if sys.argv[1:2] == ["sleep"]:  # and a child in its session: a kill of the session ends both
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3000)"])
    time.sleep(3000)
if sys.argv[1:2] == ["exit"]:
    sys.exit(int(sys.argv[2]))
