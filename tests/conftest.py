"""Shared pytest set-up: the notebook stage prints how long each notebook took."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # Read from the test reports, which pytest-xdist's workers send back with their
    # user_properties (test_notebooks records each notebook's execution time there).
    times = {report.nodeid.rsplit("[", 1)[-1].rstrip("]"): dict(report.user_properties)["execution_seconds"]
             for report in terminalreporter.stats.get("passed", [])
             if report.when == "call" and "execution_seconds" in dict(report.user_properties)}
    if not times:
        return
    terminalreporter.section("notebook execution times (s)")
    for name, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:6.1f}  {name}")
    terminalreporter.write_line(f"{sum(times.values()):6.1f}  total")


def _poll_in_short_waits() -> None:
    """Make the kernel clients of this test process wait for a message in polls of at most a
    second. zmq.asyncio's poll can miss the edge of a message that is already there, and then
    returns it only at its timeout: a notebook run waited out its whole per-cell timeout (300 s
    and 600 s, in about one full run in two) before going on as if nothing had happened. A
    short poll ends with the same final check, so a missed edge costs at most a second."""
    import time
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    whole_wait = AsyncZMQSocketChannel.get_msg
    if getattr(whole_wait, "in_short_waits", False):
        return

    async def get_msg(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = 1.0 if left is None else min(1.0, left)
            try:
                return await whole_wait(self, timeout=step)
            except Empty:
                if left is not None and left <= step:
                    raise

    get_msg.in_short_waits = True
    AsyncZMQSocketChannel.get_msg = get_msg


_poll_in_short_waits()
