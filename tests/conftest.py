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
