"""Shared pytest set-up: the notebook stage prints how long each notebook took."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tests import test_notebooks

    if not test_notebooks.TIMES:
        return
    terminalreporter.section("notebook execution times (s)")
    for name, seconds in sorted(test_notebooks.TIMES.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:6.1f}  {name}")
    terminalreporter.write_line(f"{sum(test_notebooks.TIMES.values()):6.1f}  total")
