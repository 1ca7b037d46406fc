"""The names a notebook's cells bind and a test cell reads (course: the instructors' page,
grading): what the verdict (:mod:`tinyk.grading.verdict`) fetches from the learner's process for a test
cell, read from the cells' code as Python (and IPython, for the cells' magics) would run it.

:func:`free_names` gives the names a test cell reads from the notebook: those its module level
reads before binding them itself, in the order Python runs its statements, and those its
functions, lambdas and comprehensions read at module level (Python's own scopes, from
:mod:`symtable`) but the cell never binds. :func:`bound_names` gives the names cells bind outside
any function or class body; :func:`defined_names` the names one cell binds, or, when Python cannot
parse it, the names its top-level ``def`` and ``class`` lines mean to bind (so a learner's broken
part is reported broken, not missing). :func:`python_source` is a cell's code as IPython runs it.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence

from tinyk.courseware.exercises import python_tree

__all__ = ["BUILTINS", "bound_names", "defined_names", "free_names", "python_source", "same_code"]

BUILTINS = frozenset(dir(builtins))  # Python's own names: never a notebook's


_DEF_LINE = re.compile(r"^(?:async\s+)?(?:def|class)\s+(\w+)", re.M)


def python_source(source: str) -> str | None:
    """A cell's code as IPython runs it (its magics and ``!`` lines made Python calls), or
    None if IPython cannot read it."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # IPython cannot read it either: the cell's run says why
        return None


def bound_names(sources: Sequence[str]) -> list[str]:
    """The names cells bind outside any function or class body (a ``def`` inside ``try`` or
    ``if`` too, an import, an assignment), in order, read as IPython reads the cell (its magics and ``!``
    lines); a cell that cannot be parsed binds none here (its run says why)."""
    names: list[str] = []
    for source in sources:
        code = python_source(source)
        tree = None if code is None else python_tree(code)
        if tree is not None:
            names += [name for node in tree.body for name in sorted(_bound(node))]
    return list(dict.fromkeys(names))


def _code_tree(source: str) -> str | None:
    """The syntax tree of a cell's code as IPython runs it, its docstrings left out, as text
    (no line numbers); None where it cannot be parsed."""
    code = python_source(source)
    tree = None if code is None else python_tree(code)
    if tree is None:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def same_code(a: str, b: str) -> bool:
    """Whether two cells run the same code: the same syntax tree as IPython reads them,
    comments, docstrings, blank lines and layout aside (the English and Chinese student
    versions of a cell differ in their words only); the same text, line ends and trailing
    spaces aside, where either cannot be parsed. Stricter than
    :func:`tinyk.courseware.chinese_notebooks.same_code`, which also sets every string literal
    aside (a translated message): here a literal that differs is code that differs, as the
    grader's stub rule needs (:func:`tinyk.grading.verdict.still_stubs`)."""
    if a == b:
        return True
    trees = _code_tree(a), _code_tree(b)
    if None not in trees:
        return trees[0] == trees[1]

    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.replace("\r\n", "\n").strip("\n").split("\n")]

    return lines(a) == lines(b)


def defined_names(source: str) -> list[str]:
    """The names one cell binds (:func:`bound_names`); for a cell Python cannot parse, those of
    its lines that start a ``def`` or ``class`` at the cell's top level."""
    code = python_source(source)
    if code is not None and python_tree(code) is not None:
        return bound_names([source])
    return list(dict.fromkeys(_DEF_LINE.findall(source)))


def _bound(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (assignments, imports, defs, loop targets, ``with
    ... as``), anywhere in it but inside a function or class body."""
    found: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(item.name)
            if item is not node:
                continue
            stack += [*item.decorator_list, *getattr(item, "bases", [])]
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            found.add(item.id)
        elif isinstance(item, ast.alias):
            found.add((item.asname or item.name).split(".")[0])
        elif isinstance(item, ast.ExceptHandler) and item.name:
            found.add(item.name)
        stack += list(ast.iter_child_nodes(item))
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


class _Free(ast.NodeVisitor):
    """The names a test cell's module level reads before binding them, in the order Python runs
    its statements (a ``for`` binds its target before its body; an assignment reads its value
    before it binds), and the module-level names its functions, lambdas and comprehensions read
    (Python's own scopes, from :mod:`symtable`) that the cell never binds itself."""

    def __init__(self) -> None:
        self.bound: set[str] = set(BUILTINS)
        self.free: list[str] = []

    def read(self, node: ast.AST | None) -> None:
        """The names an expression reads, but inside a nested scope (seen by :mod:`symtable`)."""
        if node is None:
            return
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, _SCOPES):
                if isinstance(item, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
                    stack.append(item.generators[0].iter)  # evaluated in the enclosing scope
                elif isinstance(item, ast.Lambda):
                    stack += item.args.defaults + [d for d in item.args.kw_defaults if d is not None]
                continue
            if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load) and item.id not in self.bound:
                self.free.append(item.id)
            elif isinstance(item, ast.NamedExpr):
                stack.append(item.value)
                self.bound.add(item.target.id)
                continue
            stack += reversed(list(ast.iter_child_nodes(item)))

    def bind(self, node: ast.AST) -> None:
        self.bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    def body(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.visit(statement)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.read(node.value)
        for target in node.targets:
            self.read_subscripts(target)
            self.bind(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.read(node.value)
        self.read_subscripts(node.target)
        self.bind(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and node.target.id not in self.bound:
            self.free.append(node.target.id)  # ``x += 1`` reads x first
        self.read_subscripts(node.target)
        self.read(node.value)
        self.bind(node.target)

    def read_subscripts(self, target: ast.AST) -> None:
        """``x[i] = ...`` and ``x.a = ...`` read ``x`` (and ``i``)."""
        for item in ast.walk(target):
            if isinstance(item, ast.Subscript | ast.Attribute):
                self.read(item.value)
                if isinstance(item, ast.Subscript):
                    self.read(item.slice)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.read(node.iter)
        self.bind(node.target)
        self.body(node.body)
        self.body(node.orelse)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.read(item.context_expr)
            if item.optional_vars is not None:
                self.bind(item.optional_vars)
        self.body(node.body)

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try) -> None:
        self.body(node.body)
        for handler in node.handlers:
            self.read(handler.type)
            if handler.name:
                self.bound.add(handler.name)
            self.body(handler.body)
        self.body(node.orelse)
        self.body(node.finalbody)

    visit_TryStar = visit_Try

    def visit_If(self, node: ast.If | ast.While) -> None:
        self.read(node.test)
        self.body(node.body)
        self.body(node.orelse)

    visit_While = visit_If

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for item in [*node.decorator_list, *getattr(node, "bases", []),
                     *(kw.value for kw in getattr(node, "keywords", []))]:
            self.read(item)
        if not isinstance(node, ast.ClassDef):
            self.read(node.args)
        self.bound.add(node.name)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.bound |= {(a.asname or a.name).split(".")[0] for a in node.names}

    visit_ImportFrom = visit_Import

    def generic_visit(self, node: ast.AST) -> None:  # any other statement (assert, an expression...)
        self.read(node)


def free_names(test: str) -> list[str]:
    """The names a test cell reads from the notebook, in the order they first appear: those its
    module level reads before binding them itself, and those its functions, lambdas and
    comprehensions read at module level but the cell never binds. A loop's target, a
    function's parameter or a comprehension's variable is the cell's own, never fetched."""
    import symtable

    tree = python_tree(test)
    if tree is None:
        return []
    free = _Free()
    free.body(tree.body)
    top_level = {name for node in tree.body for name in _bound(node)}
    nested: list[str] = []
    tables = list(symtable.symtable(test, "<test>", "exec").get_children())
    while tables:
        table = tables.pop(0)
        nested += [s.get_name() for s in table.get_symbols()
                   if s.is_referenced() and s.is_global() and not s.is_assigned()]
        tables += table.get_children()
    later = [n for n in nested if n not in top_level and n not in BUILTINS]
    return list(dict.fromkeys([*free.free, *later]))
