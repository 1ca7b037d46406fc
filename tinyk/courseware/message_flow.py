"""Which string literals of a code cell are words a learner reads (the Chinese student
notebooks, :mod:`tinyk.courseware.chinese_notebooks`; the *Chinese edition* of the book's *For
instructors* page): found on the cell's syntax tree, so that everything else a cell holds
(a dictionary key, a compared string, a token to encode) stays the code it is.

A message is a literal that is written out:

- an assertion's message, a raised error's arguments, the literals a ``print`` writes, and
  the strings that only flow into those (a dictionary of hints);
- the separator a printed list is joined with (``", ".join(names)``);
- a warning's text (``warnings.warn("...")``), and what is added to a message's name
  (``why += f"..."``);
- what a **helper of the cell returns** when the helper is only called inside those or as
  a ``print``'s argument (``raise AssertionError(raised(err, m, n))``, ``print(summary())``:
  every string ``raised`` returns, and the strings that only flow into its returns, are
  messages);
- what the cell **gives a helper for a parameter that only flows into a message**
  (``def check(ok, why): assert ok, why`` makes ``"the sum is wrong"`` of
  ``check(total == 6, "the sum is wrong")`` a message);
- the **labels of a loop over a literal list** whose variable is only written out: by a
  ``print`` (as an argument or a placeholder, ``{name}`` or ``{column(name, 17)}``), as a
  figure's ``label=``, or as the key a result is stored under (``losses[name] = loss``,
  unless the cell looks a key up by its words). In
  ``for name, cfg in [("tiny experiment", tiny)]``, ``"tiny experiment"`` is a message when
  ``name`` is read nowhere else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["SEPARATORS", "flowing_names", "is_print", "is_warning", "message_nodes", "string_nodes"]

SEPARATORS = (", ", "; ")  # the joins of a printed list: messages without words


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def string_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The string literals of a message expression, not those it tests or looks up with."""
    if isinstance(node, ast.JoinedStr) or _is_str(node):
        yield node
    elif isinstance(node, ast.Dict):
        for value in node.values:
            yield from string_nodes(value)
    elif isinstance(node, ast.IfExp):
        yield from string_nodes(node.body)
        yield from string_nodes(node.orelse)
    elif isinstance(node, ast.Call):
        if _is_join(node) and _is_str(node.func.value):
            yield node.func.value  # ", ".join(names): the separator a reader sees between names
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            yield from string_nodes(arg)
    elif isinstance(node, (ast.GeneratorExp, ast.ListComp)):  # next((f"..." for ...), "")
        yield from string_nodes(node.elt)
    elif isinstance(node, (ast.BinOp, ast.Tuple, ast.List)):
        for child in ast.iter_child_nodes(node):
            yield from string_nodes(child)


def _is_join(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def is_print(node: ast.AST) -> bool:
    """``print(...)``: its arguments are written out."""
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"


def flowing_names(nodes: list[ast.AST], roots: list[ast.AST], assigns: list[ast.Assign]) -> set[str]:
    """The names read only by ``roots`` or by values assigned to such names, to a fixed point:
    ``hint = hints.get(got, "...")`` read by a message makes ``hints`` a message's too."""
    flowing: set[str] = set()
    while True:
        context = roots + [a.value for a in assigns if {t.id for t in a.targets} <= flowing]
        inside = {id(n) for c in context for n in ast.walk(c)}
        elsewhere = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and id(n) not in inside}
        grown = set().union(*(_loads(c) for c in context)) - elsewhere
        if grown <= flowing:
            return flowing
        flowing |= grown


def _shown(value: ast.AST) -> ast.AST:
    """What a placeholder shows: ``{name}``, ``{name:17s}`` or ``{column(name, 17)}`` show ``name``."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "column" and value.args:
        return value.args[0]
    return value


def _loop_labels(nodes: list[ast.AST]) -> list[ast.AST]:
    """The labels of loops over a literal list whose variable is only written out."""
    written = {id(a) for p in nodes if is_print(p) for a in p.args}
    written |= {id(_shown(v.value)) for p in nodes if is_print(p) for a in p.args for v in ast.walk(a)
                if isinstance(v, ast.FormattedValue)}
    written |= {id(k.value) for c in nodes if isinstance(c, ast.Call) for k in c.keywords if k.arg == "label"}
    # ``results[name] = ...``: a table keyed by its labels, unless the cell looks one up by its words.
    keyed = [n for n in nodes if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)]
    looked_up = {n.value.id for n in nodes if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                 and isinstance(n.value, ast.Name) and _is_str(n.slice)}
    written |= {id(n.slice) for n in keyed if isinstance(n.value, ast.Name) and n.value.id not in looked_up}
    read = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            read.setdefault(n.id, []).append(id(n))
    labels = []
    for loop in (n for n in nodes if isinstance(n, ast.For) and isinstance(n.iter, (ast.List, ast.Tuple))):
        targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
        for i, target in enumerate(targets):
            if not (isinstance(target, ast.Name) and read.get(target.id)
                    and all(r in written for r in read[target.id])):
                continue
            rows = [row.elts if isinstance(loop.target, ast.Tuple) and isinstance(row, ast.Tuple) else [row]
                    for row in loop.iter.elts]
            labels += [row[i] for row in rows if i < len(row) and _is_str(row[i])]
    return labels


def _returns(function: ast.AST) -> list[ast.AST]:
    """The values a function returns, not those of the functions defined inside it."""
    found, todo = [], list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node.value)
        todo += ast.iter_child_nodes(node)
    return found


def _helper_returns(nodes: list[ast.AST], roots: list[ast.AST]) -> list[ast.AST]:
    """The return values of the cell's functions that are called only inside ``roots`` (or
    inside the returns of such a function), to a fixed point: a message built by a helper."""
    functions = {n.name: n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    uses = {name: [n for n in nodes if isinstance(n, ast.Name) and n.id == name] for name in functions}
    inside = {id(n) for c in roots for n in ast.walk(c)}
    taken: list[ast.AST] = []
    taken_ids: set[int] = set()
    while True:
        new = [r for name, function in functions.items()
               if uses[name] and all(id(u) in inside for u in uses[name])
               for r in _returns(function) if id(r) not in taken_ids]
        if not new:
            return taken
        taken += new
        taken_ids |= {id(r) for r in new}
        inside |= {id(n) for c in new for n in ast.walk(c)}


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]]


def _helper_arguments(nodes: list[ast.AST], flowing: set[str]) -> list[ast.AST]:
    """What the cell gives its functions for a parameter that only flows into a message
    (``def check(ok, why): assert ok, why`` makes ``"the sum is wrong"`` of
    ``check(ok, "the sum is wrong")`` a message)."""
    functions = {n.name: n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = []
    for call in (n for n in nodes if isinstance(n, ast.Call) and getattr(n.func, "id", None) in functions):
        parameters = _parameters(functions[call.func.id])
        found += [arg for i, arg in enumerate(call.args)
                  if not isinstance(arg, ast.Starred) and i < len(parameters) and parameters[i] in flowing]
        found += [k.value for k in call.keywords if k.arg in flowing and k.arg in parameters]
    return found


def is_warning(node: ast.AST) -> bool:
    """``warnings.warn(...)`` or ``warn(...)``: its first argument is written out."""
    return isinstance(node, ast.Call) and bool(node.args) and (
        getattr(node.func, "id", None) == "warn"
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "warn"
            and getattr(node.func.value, "id", None) == "warnings"))


def message_nodes(tree: ast.Module) -> tuple[list[ast.AST], list[ast.AST]]:
    """(docstrings, message strings) of a cell (see the module's docstring)."""
    nodes = list(ast.walk(tree))
    docstrings = [n.body[0].value for n in nodes
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and ast.get_docstring(n, clean=False) is not None]
    written: list[ast.AST] = [n.msg for n in nodes if isinstance(n, ast.Assert) and n.msg]
    written += [n.exc for n in nodes if isinstance(n, ast.Raise) and n.exc]
    written += [n.args[0] for n in nodes if is_warning(n)]
    print_args = [arg for n in nodes if is_print(n) for arg in n.args]
    printed = [arg for arg in print_args
               if isinstance(arg, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.IfExp)) or _is_join(arg)]
    assigns = [n for n in nodes if isinstance(n, ast.Assign)
               and all(isinstance(t, ast.Name) for t in n.targets)]
    given: list[ast.AST] = []  # what helpers are given for a parameter that only flows into a message
    while True:
        roots = written + given
        roots += _helper_returns(nodes, roots + print_args)  # print(helper()): every argument
        flowing = flowing_names(nodes, roots, assigns)
        more = [a for a in _helper_arguments(nodes, flowing) if all(a is not g for g in given)]
        if not more:
            break
        given += more
    context = roots + [a.value for a in assigns if {t.id for t in a.targets} <= flowing]
    context += [n.value for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
                and n.target.id in flowing]  # why += f"..."
    strings = [s for c in context + printed for s in string_nodes(c)] + _loop_labels(nodes)
    # A dictionary read only through .items() (``for what, wrong in suspects.items()``): its
    # keys are never looked up, so string keys are messages too.
    for a in assigns:
        names = {t.id for t in a.targets}
        if not (names <= flowing and isinstance(a.value, ast.Dict)):
            continue
        uses = [n for n in nodes if isinstance(n, ast.Name) and n.id in names]
        via_items = [n for n in nodes if isinstance(n, ast.Attribute) and n.attr == "items"
                     and isinstance(n.value, ast.Name) and n.value.id in names]
        if len(uses) == len(a.targets) + len(via_items):  # its own targets, then .items() only
            strings += [k for k in a.value.keys if k is not None and next(string_nodes(k), None) is k]
    return docstrings, strings
