"""Shared pytest set-up: the notebook stage prints how long each notebook took, and the site
stage imports only the test modules that hold site tests."""

from __future__ import annotations

from pathlib import Path

import pytest

# A module that holds a test marked ``site`` names the marker in its text (``pytest.mark.site``,
# as a module's ``pytestmark`` or a test's decorator). With ``-m site`` alone (make's site
# stage), the other modules are not imported: importing every module (torch, transformers,
# onnxscript) took about 8 s of each worker's start, for tests that -m site then deselects.
SITE_MARK = "mark.site"
_SITE_STAGE = "site"


def names_the_site_marker(path: Path) -> bool:
    """Whether the test module at ``path`` may hold a site test (its text names the marker)."""
    return SITE_MARK in path.read_text(encoding="utf-8")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if (config.getoption("markexpr") == _SITE_STAGE and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_") and not names_the_site_marker(collection_path)):
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before ``-m`` deselects anything: a site test in a module whose text does not name the
    marker (given it some other way) would be left out of the site stage; say so, in every run
    that imports the module (make's unit stage, which runs first, imports them all)."""
    named: dict[Path, bool] = {}
    for item in items:
        if item.get_closest_marker("site") and item.path not in named:
            named[item.path] = names_the_site_marker(item.path)
    unseen = [item.nodeid for item in items if item.get_closest_marker("site") and not named[item.path]]
    if unseen:
        raise pytest.UsageError(f"site tests in modules whose text does not say {SITE_MARK!r} (the "
                                f"site stage would not import them): {unseen[:3]}; "
                                f"mark them with pytest.mark.site")


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
