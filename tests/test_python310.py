"""The package runs on Python 3.10 (pyproject's ``requires-python``), while the course's own
set-up and CI run 3.11: nothing in ``tinyk/`` may need what 3.11 added, unless behind a
version check or an ``ImportError`` fallback (``tinyk.translations.terms`` reads TOML with ``tomllib`` on
3.11, with the package ``tomli`` on 3.10).

What 3.11 added is ``tests/fixtures/python311_additions.json``: the standard-library modules,
the builtins and each module's public names that CPython 3.11.7 has and 3.10.13 has not
(``sys.stdlib_module_names``, ``dir()``). Syntax is parsed as 3.10's (``except*``).
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

import pytest

from tinyk.courseware.checkout import ROOT

ADDED = json.loads((Path(__file__).parent / "fixtures" / "python311_additions.json").read_text())
NEW_MODULES, NEW_BUILTINS = set(ADDED["modules"]), set(ADDED["builtins"])
NEW_NAMES: dict[str, set[str]] = {module: set(names) for module, names in ADDED["names"].items()}
PACKAGE = ROOT / "tinyk"
_MISSING_MODULE = {"ImportError", "ModuleNotFoundError"}


def _is_version_check(test: ast.expr) -> tuple[bool, bool] | None:
    """For ``sys.version_info >= (3, 11)`` (or ``< (3, 11)``): whether its body, and whether
    its ``else``, runs on 3.11 and newer only; None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Attribute) and test.left.attr == "version_info"):
        return None
    try:
        version = tuple(ast.literal_eval(test.comparators[0]))
    except ValueError:
        return None
    newer = version >= (3, 11)
    if isinstance(test.ops[0], ast.GtE | ast.Gt):
        return newer, False
    if isinstance(test.ops[0], ast.Lt | ast.LtE):
        return False, newer
    return None


def _catches_a_missing_module(node: ast.Try) -> bool:
    names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
    names |= {ast.unparse(e) for h in node.handlers if isinstance(h.type, ast.Tuple) for e in h.type.elts}
    return bool(names & _MISSING_MODULE)


def python311_uses(source: str, name: str = "<source>") -> list[str]:
    """What ``source`` needs of Python 3.11 outside a version check or a missing-module
    fallback, as ``name:line: what``."""
    try:
        tree = ast.parse(source, name, feature_version=(3, 10))
    except SyntaxError as error:
        return [f"{name}:{error.lineno}: syntax of a newer Python ({error.msg})"]
    modules: dict[str, str] = {}  # a local name bound to a standard-library module
    found: list[str] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.If) and (check := _is_version_check(node.test)) is not None:
            visit(node.test, guarded)
            for child in node.body:
                visit(child, guarded or check[0])
            for child in node.orelse:
                visit(child, guarded or check[1])
            return
        if isinstance(node, ast.Try) and _catches_a_missing_module(node):
            for child in node.body:
                visit(child, True)
            for child in (*node.handlers, *node.orelse, *node.finalbody):
                visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                modules[alias.asname or top] = alias.name if alias.asname else top
                if top in NEW_MODULES and not guarded:
                    found.append(f"{where}: import {alias.name} (new in 3.11)")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and not guarded:
            top = node.module.split(".")[0]
            if top in NEW_MODULES:
                found.append(f"{where}: from {node.module} import ... (new in 3.11)")
            for alias in node.names:
                if alias.name in NEW_NAMES.get(node.module, ()):
                    found.append(f"{where}: from {node.module} import {alias.name} (new in 3.11)")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and not guarded
              and node.attr in NEW_NAMES.get(modules.get(node.value.id, ""), ())):
            found.append(f"{where}: {node.value.id}.{node.attr} (new in 3.11)")
        elif (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not guarded
              and node.id in NEW_BUILTINS):
            found.append(f"{where}: {node.id} (a builtin new in 3.11)")
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def test_the_package_needs_nothing_python_3_11_added():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50 and PACKAGE / "translations" / "terms.py" in files
    found = [use for path in files
             for use in python311_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == []


@pytest.mark.parametrize("source", [
    "import tomllib",
    "import tomllib as toml",
    "from tomllib import loads",
    "from typing import Any, Self",
    "import datetime as dt\nnow = dt.UTC",
    "import hashlib\n\ndef f(file):\n    return hashlib.file_digest(file, 'sha256')",
    "import enum\nclass Kind(enum.StrEnum):\n    A = 'a'",
    "raise ExceptionGroup('two', [ValueError(), KeyError()])",
    "try:\n    pass\nexcept* ValueError:\n    pass",
    "if sys.version_info < (3, 11):\n    import tomllib",  # the check the wrong way round
    "try:\n    import tomllib\nexcept KeyError:\n    tomllib = None",  # not a missing module
])
def test_a_planted_use_of_python_3_11_is_found(source):
    assert len(python311_uses(source)) == 1, source


@pytest.mark.parametrize("source", [
    "import sys\nif sys.version_info >= (3, 11):\n    import tomllib\nelse:\n    import tomli as tomllib",
    "import sys\nif sys.version_info < (3, 11):\n    import tomli as tomllib\nelse:\n    import tomllib",
    "try:\n    import tomllib\nexcept ModuleNotFoundError:\n    import tomli as tomllib",
    "try:\n    from typing import Self\nexcept ImportError:\n    Self = object",
    "import datetime\nutc = datetime.timezone.utc",
    "import tomli\nUTC = 1\nprint(UTC)",
])
def test_a_guarded_or_older_use_is_not_reported(source):
    assert python311_uses(source) == []


def test_the_table_holds_names_this_python_has():
    """Every module and name of the table is in this Python (3.11 or newer): the table is of
    real names, spelled as the standard library spells them."""
    assert NEW_MODULES <= sys.stdlib_module_names and "tomllib" in NEW_MODULES
    assert NEW_BUILTINS == {"ExceptionGroup", "BaseExceptionGroup"}
    for module in ("typing", "datetime", "enum", "hashlib", "contextlib", "asyncio", "re", "math"):
        lacking = {n for n in NEW_NAMES[module] if not hasattr(importlib.import_module(module), n)}
        assert lacking == set(), module
