"""The package's shape, read with ``ast`` (no import, no kernel): no tinyk module reaches into
another's private names, and no Chinese word is
written in its code or the book's extension (they live in the catalogues, ``locale/`` and
``tinyk/locale/``, and in the term base)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tinyk"
# No cap on a module's or a function's lines: a cap split code by size, not by job (modules that
# re-exported each other, helpers that exist to shorten a function); the layout is by job
# (tests/test_package_layers.py).
# CJK ideographs and punctuation, full-width forms (a full-width colon or bracket included).
CHINESE = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def _module_name(path: Path) -> str:
    """tinyk's dotted name of a module file or a package folder."""
    parts = path.relative_to(PACKAGE).parts
    if path.suffix == ".py":
        parts = (*parts[:-1], path.stem)
    return ".".join(["tinyk", *parts]).removesuffix(".__init__")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of an attribute chain on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def private_crossings(source: str, module: str, package: str, modules: set[str]) -> list[str]:
    """The private names of other tinyk modules that ``module`` (of ``package``) imports
    (``from tinyk.x import _y``, relative or not) or reads on a module it imported
    (``x._y``, ``tinyk.x._y``, ``alias._y``). Attributes of other objects are not seen."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # a local name -> the tinyk module it names
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([package.rsplit(".", node.level - 1)[0], *([base] if base else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif base in modules and base != module and _private(alias.name):
                    found.append(f"from {base} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:  # import tinyk.x binds tinyk
                    bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
    for node in ast.walk(tree):
        owner = _dotted(node.value) if isinstance(node, ast.Attribute) and _private(node.attr) else None
        if owner is None:
            continue
        head, _, rest = owner.partition(".")
        target = ".".join(filter(None, [bound.get(head, ""), rest])) if head in bound else ""
        if target in modules and target != module:
            found.append(f"{owner}.{node.attr}")
    return found


def _sources() -> dict[str, tuple[str, str]]:
    """Module -> (its package, its source), for every module of tinyk."""
    return {_module_name(p): (_module_name(p.parent), p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_chinese_is_written_in_the_packages_code():
    paths = sorted(PACKAGE.rglob("*.py")) + sorted((PACKAGE.parent / "book" / "_ext").glob("*.py"))
    found = {f"{p.relative_to(PACKAGE.parent)}:{i}": line.strip()[:60] for p in paths
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if CHINESE.search(line)}
    assert len(paths) >= 41 and PACKAGE.parent / "book" / "_ext" / "tinyk_book.py" in paths
    assert found == {}, f"Chinese in tinyk's code (put it in a catalogue or the term base): {found}"


@pytest.mark.parametrize(("line", "chinese"), [
    ('"stuck": "卡住了"', True), (r'"{0}\uff1a{1}"', False), ("x = 1  # （", True), ("a: b (c)", False),
])
def test_the_chinese_check_sees_words_and_full_width_punctuation(line, chinese):
    assert bool(CHINESE.search(line)) is chinese


def test_no_tinyk_module_uses_another_ones_private_names():
    sources = _sources()
    assert {"tinyk.model", "tinyk.grading", "tinyk.grading.rules"} <= set(sources)
    found = {name: crossing for name, (package, text) in sources.items()
             if (crossing := private_crossings(text, name, package, set(sources)))}
    assert found == {}, f"private names used across modules (make them public where they live): {found}"


@pytest.mark.parametrize(("source", "expected"), [
    ("from tinyk.courseware.course import _heading, ROOT", ["from tinyk.courseware.course import _heading"]),
    ("from ..courseware.course import _x", ["from tinyk.courseware.course import _x"]),
    ("from . import rules\nrules._where(1)", ["rules._where"]),
    ("from .rules import _where", ["from tinyk.grading.rules import _where"]),
    ("from tinyk.grading import rules as r\nr._where(1)", ["r._where"]),
    ("import tinyk.courseware.course\ntinyk.courseware.course._URL", ["tinyk.courseware.course._URL"]),
    ("import tinyk.courseware.course as c\nc._URL", ["c._URL"]),
    ("from tinyk.courseware import course\ncourse._URL.match('x')", ["course._URL"]),
    ("from tinyk.grading.cli import _add_grade\nfrom . import cli\ncli._COMMANDS", []),  # its own
    ("from tinyk.courseware.course import ROOT\nmodel._kept(1)\nx.__doc__\nfrom tinyk import __version__",
     []),
])
def test_the_private_name_check_sees_every_route(source, expected):
    modules = {"tinyk", "tinyk.courseware", "tinyk.courseware.course", "tinyk.grading", "tinyk.grading.rules",
               "tinyk.grading.cli"}
    assert private_crossings(source, "tinyk.grading.cli", "tinyk.grading", modules) == expected
