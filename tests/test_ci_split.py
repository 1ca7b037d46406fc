"""CI's three parallel jobs run every check of ``make test``, each once.

The GitHub workflow runs ``make ci-unit``, ``make ci-site`` and ``make ci-lab`` at once; ``make
test`` (the README's command, ``.ci/run``) runs the stages one after another. Both are read
as make would run them (``make -n``): the pytest runs each starts, with their marker
expressions, are compared over every combination of the suite's markers, so a test that
one of them would leave out, or run twice, fails this test.
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
from collections import Counter
from pathlib import Path

import yaml
from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("site", "notebook", "lab", "slow")
CI_TARGETS = ["ci-unit", "ci-site", "ci-lab"]


def _pytest_runs(*targets: str) -> list[tuple[str, str]]:
    """(marker expression, test path) of each pytest run that ``make TARGETS`` starts."""
    out = subprocess.run(["make", "-n", "--no-print-directory", *targets], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    runs = []
    for line in out.splitlines():
        if " -m pytest " not in line:
            continue
        words = shlex.split(line[line.index(" -m pytest ") + len(" -m pytest "):])
        runs.append((words[words.index("-m") + 1], words[-1]))
    return runs


def _selected(runs: list[tuple[str, str]]) -> Counter:
    """How many of the runs select a test with each combination of markers, per test path."""
    count: Counter = Counter()
    for expression, path in runs:
        compiled = Expression.compile(expression)
        for n in range(len(MARKERS) + 1):
            for marks in itertools.combinations(MARKERS, n):
                if compiled.evaluate(lambda name, marks=marks: name in marks):
                    count[path, marks] += 1
    return count


def test_the_workflow_runs_the_three_ci_targets():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["target"] == CI_TARGETS
    assert job["steps"][-2]["run"] == "make ${{ matrix.target }}"


def test_the_ci_jobs_run_each_check_of_make_test_once():
    local, ci = _pytest_runs("test"), _pytest_runs(*CI_TARGETS)
    assert len(local) == 3 and len(ci) == 4, (local, ci)
    assert _selected(ci) == _selected(local)
    assert max(_selected(ci).values()) == 1
    # tests/: every combination but notebook-and-not-site (12 of 16); the notebook stage: the 8 with notebook
    assert len(_selected(local)) == 12 + 8


def test_a_job_that_left_tests_out_would_be_caught():
    runs = _pytest_runs(*CI_TARGETS)
    dropped = [(e, p) for e, p in runs if not e.startswith("lab")]  # CI without its third job
    assert len(dropped) == len(runs) - 1
    assert _selected(dropped) != _selected(_pytest_runs("test"))


def test_lint_runs_in_the_unit_job():
    out = subprocess.run(["make", "-n", "--no-print-directory", "ci-unit"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert re.search(r"ruff check", out) and "tinyk.courseware.course check" in out
    assert "tinyk.translations check" in out
