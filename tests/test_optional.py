"""No test hides behind a skip in ``make test``: every skip of the tests goes through
:func:`tests.optional.missing`, which fails instead under ``TINYK_REQUIRE_ALL``, and each of
make test's pytest stages sets it."""

from __future__ import annotations

import ast
import re

import pytest

from tests import optional
from tinyk.courseware.checkout import ROOT

TESTS = ROOT / "tests"
HELPER = TESTS / "optional.py"
# pytest's and unittest's ways to skip: a call, a mark, an exception, an import of one of them.
SKIPS = {"skip", "skipif", "importorskip", "skipTest", "SkipTest", "Skipped", "skipUnless", "skipIf"}


def skips_around_the_helper(source: str, name: str = "<source>") -> list[str]:
    """Each skip in ``source`` that does not go through :func:`tests.optional.missing`, as
    ``name:line: what``."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute) and node.attr in SKIPS:
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id in SKIPS:
            found.append(f"{name}:{node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"{name}:{node.lineno}: from {node.module} import {alias.name}"
                      for alias in node.names if alias.name in SKIPS]
    return found


def stages_without_require_all(makefile: str) -> list[str]:
    """The pytest commands of make test's stages (``STAGES``) that do not set ``TINYK_REQUIRE_ALL=1``;
    raises ``ValueError`` when no stage runs pytest (nothing to check)."""
    stages = re.search(r"^STAGES := (.+)$", makefile, re.M)
    if stages is None:
        raise ValueError("the Makefile has no 'STAGES := ...' line")
    commands = []
    for stage in stages.group(1).split():
        recipe = re.search(rf"^{re.escape(stage)}:.*\n((?:\t.*\n)*)", makefile, re.M)
        commands += [(stage, line) for line in (recipe.group(1).splitlines() if recipe else ())
                     if "pytest" in line]
    if not commands:
        raise ValueError(f"none of the stages {stages.group(1)!r} runs pytest")
    return [f"{stage}: {line.strip()}" for stage, line in commands if "TINYK_REQUIRE_ALL=1 " not in line]


def test_every_skip_of_the_tests_goes_through_the_helper():
    files = sorted(TESTS.rglob("*.py"))
    assert HELPER in files and TESTS / "test_verdict.py" in files and TESTS / "conftest.py" in files
    found = [use for path in files if path != HELPER
             for use in skips_around_the_helper(path.read_text(encoding="utf-8"), path.name)]
    assert found == []


@pytest.mark.parametrize("source", [
    'import pytest\npytest.skip("bubblewrap is not installed")',
    'import pytest\nnbgrader = pytest.importorskip("nbgrader")',
    '@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")\ndef test_x():\n    pass',
    '@pytest.mark.skip\ndef test_x():\n    pass',
    'from pytest import skip\n',
    'import unittest\nclass T(unittest.TestCase):\n    def test_x(self):\n        self.skipTest("later")',
    'import unittest\nraise unittest.SkipTest("later")',
    'def pytest_collection_modifyitems(items):\n    items[0].add_marker(pytest.mark.skip(reason="x"))',
])
def test_a_planted_skip_is_found(source):
    assert len(skips_around_the_helper(source)) == 1, source


def test_the_helper_and_plain_words_are_not_skips():
    assert skips_around_the_helper(
        'from tests.optional import missing, need\nneed("copydetect")\n'
        'if not found:\n    missing("needs Slurm")\nskipped = "skip"\nrows.skip_blank = True') == []


def test_under_require_all_the_helper_fails_and_otherwise_skips(monkeypatch):
    """The same missing part skips a developer's run and fails make test's, with the reason."""
    monkeypatch.setenv("TINYK_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match=r"needs Slurm .*TINYK_REQUIRE_ALL is set"):
        optional.missing("needs Slurm")
    with pytest.raises(pytest.fail.Exception, match="needs no_such_part: pip install no_such_part"):
        optional.need("no_such_part")
    monkeypatch.delenv("TINYK_REQUIRE_ALL")
    with pytest.raises(BaseException, match="needs Slurm") as outcome:
        optional.missing("needs Slurm")
    assert type(outcome.value).__name__ == "Skipped"
    assert optional.need("json").dumps([1]) == "[1]"


def test_every_pytest_stage_of_make_test_requires_every_part():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert stages_without_require_all(text) == []
    assert len(re.findall(r"TINYK_REQUIRE_ALL=1 \S+ -m pytest", text)) >= 3  # unit, notebooks, site-check
    planted = text.replace('OMP_NUM_THREADS=1 TINYK_REQUIRE_ALL=1 $(BIN)/python -m pytest -m "$(SITE_MARKS)"',
                           'OMP_NUM_THREADS=1 $(BIN)/python -m pytest -m "$(SITE_MARKS)"')
    assert planted != text
    assert [s.split(":")[0] for s in stages_without_require_all(planted)] == ["site-check"]
    with pytest.raises(ValueError, match="STAGES"):
        stages_without_require_all(text.replace("STAGES :=", "STEPS :="))
