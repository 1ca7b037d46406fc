"""The words a code cell draws, in Chinese in the code the Chinese pages show (the book's
*For instructors* page; :mod:`tinyk.translations.pages`).

A figure's title, axis labels, legend and word ticks, a slider's labels and the text of an
HTML calculator are drawn in Chinese on the Chinese pages: the book's run draws each a second
time from the figures' catalogue, ``tinyk/locale/figures_zh_CN.po``
(:mod:`tinyk.figure_text`). The code above them on the page says the same words, from the
same catalogue, so that a reader sees in the code what the figure shows:

- a call's ``label=`` (a plotted line's legend, a slider's ``Choice``);
- :func:`tinyk.plotting.label`'s title and axis labels, an axis's ``set_title``,
  ``set_xlabel``, ``set_ylabel``, a figure's ``suptitle``, the words of
  :func:`tinyk.plotting.word_ticks` and the title of :func:`tinyk.plotting.plot_attention_mask`,
  given as literals or through a loop over literals (``for ax, title in panels``,
  ``zip(axes, ("cos", "sin"))``);
- the strings a function passed to :func:`tinyk.widgets.slider` returns, and those that flow
  only into what it returns (a calculator's rows), unless it returns a figure function's
  result (a mask's key labels are data).

A loop's labels that a legend shows at the start of an f-string (``for name in ["format
only", ...]`` with ``label=f"{name}: {value:.2f}"``) are read in the legend's catalogue
message, ``"format only: {0}"``: what all the labels' legends end with in Chinese is the
f-string's own text after ``{name}`` (``"：{value:.2f}"``), and what each begins with, the
label's (:func:`_legend_loops`).

An f-string's placeholders stay as they are: each stands for a number while the catalogue is
read (a figure's message is keyed with its numbers taken out). The Chinese student notebooks
keep these words English: their kernel draws them in Chinese only where it finds a font that
draws Chinese (:func:`tinyk.figure_text.for_the_learner`), and English words are what it
falls back to.
"""

from __future__ import annotations

import ast
import re

from tinyk.chinese_notebooks import PLACEHOLDER, literal_text
from tinyk.message_flow import flowing_names, string_nodes

__all__ = ["figure_word_nodes", "translate_figure_words"]

_TITLED = {"set_title": 0, "set_xlabel": 0, "set_ylabel": 0, "suptitle": 0, "plot_attention_mask": 1}
_CJK = re.compile(r"[\u3400-\u9fff]")
_SENTINEL = 987650  # a placeholder stands for this number, plus its place, while the catalogue is read


def _name(call: ast.Call) -> str | None:
    return getattr(call.func, "id", None) or getattr(call.func, "attr", None)


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _looped(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """name -> the literals a loop's target takes: ``for a, title in [(x, "...")]``, over a
    name bound to such a list, or ``zip(axes, ("...", "..."))``."""
    literals = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, (ast.List, ast.Tuple))}
    found: dict[str, list[ast.AST]] = {}
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
        source = literals.get(loop.iter.id) if isinstance(loop.iter, ast.Name) else loop.iter
        if isinstance(source, ast.Call) and _name(source) == "zip" and len(source.args) == len(targets):
            columns = [a.elts if isinstance(a, (ast.List, ast.Tuple)) else [] for a in source.args]
        elif isinstance(source, (ast.List, ast.Tuple)):
            rows = [r.elts if isinstance(r, ast.Tuple) and len(targets) > 1 else [r] for r in source.elts]
            columns = [[r[i] for r in rows if i < len(r)] for i in range(len(targets))]
        else:
            continue
        for target, column in zip(targets, columns, strict=True):
            if isinstance(target, ast.Name) and column and all(_is_str(c) for c in column):
                found.setdefault(target.id, []).extend(column)
    return found


def _panel_strings(tree: ast.Module) -> list[ast.AST]:
    """The strings each function given to ``slider`` returns, or that flow only into them."""
    drawn = {c.args[0].id for c in ast.walk(tree) if isinstance(c, ast.Call) and _name(c) == "slider"
             and c.args and isinstance(c.args[0], ast.Name)}
    found: list[ast.AST] = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in drawn):
        nodes = list(ast.walk(function))
        # What a figure function is given (a mask's key labels: data) is not what it draws: its
        # title is taken with the other figures' words (figure_word_nodes).
        roots: list[ast.AST] = [n.value for n in nodes if isinstance(n, ast.Return) and n.value is not None
                                and not (isinstance(n.value, ast.Call) and _name(n.value) != "join")]
        assigns = [n for n in nodes if isinstance(n, ast.Assign)
                   and all(isinstance(t, ast.Name) for t in n.targets)]
        flowing = flowing_names(nodes, roots, assigns)
        context = roots + [a.value for a in assigns if {t.id for t in a.targets} <= flowing]
        found += [s for c in context for s in string_nodes(c)]
    return found


def figure_word_nodes(tree: ast.Module) -> list[ast.AST]:
    """The string literals of a cell whose words a figure, a slider or a calculator draws."""
    looped = _looped(tree)
    found: list[ast.AST] = []

    def take(node: ast.AST) -> None:
        if _is_str(node):
            found.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for element in node.elts:
                take(element)
        elif isinstance(node, ast.Name):
            found.extend(looped.get(node.id, []))

    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = _name(call)
        for keyword in call.keywords:
            if keyword.arg == "label":
                take(keyword.value)
        if name == "label" and isinstance(call.func, ast.Name):
            for arg in call.args[1:4]:
                take(arg)
        elif name == "word_ticks" and len(call.args) > 2:
            take(call.args[2])
        elif name in _TITLED and len(call.args) > _TITLED[name]:
            take(call.args[_TITLED[name]])
    found += _panel_strings(tree)
    unique = {id(n): n for n in found}
    return sorted(unique.values(), key=lambda n: (n.lineno, n.col_offset))


def _key(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _legend_loops(tree: ast.Module, source: str) -> dict[tuple[int, int], tuple[ast.AST, str]]:
    """place -> (literal, its Chinese) for the labels of loops that a legend's f-string shows
    first, and for that f-string (the module's docstring); nothing for a loop whose every
    label's legend the catalogue lacks."""
    from tinyk.chinese_notebooks import literal_text

    looped, found = _looped(tree), {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        template = next((k.value for k in call.keywords if k.arg == "label"), None)
        if not (isinstance(template, ast.JoinedStr) and template.values
                and isinstance(template.values[0], ast.FormattedValue)
                and isinstance(template.values[0].value, ast.Name)
                and template.values[0].format_spec is None and template.values[0].conversion == -1):
            continue
        name = template.values[0].value.id
        labels = [n for n in looped.get(name, []) if isinstance(n, ast.Constant)]
        text = literal_text(source, template)
        if not labels or text is None or not text.msgid.startswith("{" + name + "}"):
            continue
        rest = text.msgid[len(name) + 2:]
        legends = [_chinese(label.value.replace("{", "{{").replace("}", "}}") + rest) for label in labels]
        if any(legend is None for legend in legends):
            continue
        common = 0
        while common < min(map(len, legends)) and \
                len({legend[len(legend) - common - 1] for legend in legends}) == 1:
            common += 1
        if common == 0 or any(len(legend) == common for legend in legends):
            continue
        for label, legend in zip(labels, legends, strict=True):
            found[_key(label)] = (label, legend[: len(legend) - common])
        found[_key(template)] = (template, "{" + name + "}" + legends[0][len(legends[0]) - common:])
    return found


def _chinese(msgid: str) -> str | None:
    """``msgid`` (a literal's text, an f-string's placeholders in it) in Chinese from the
    figures' catalogue, as the run draws it; None when the catalogue lacks it."""
    from tinyk.figure_text import collecting, translate_html

    shown = PLACEHOLDER.findall(msgid)
    text = PLACEHOLDER.sub(lambda m: str(_SENTINEL + shown.index(m[0])), msgid)
    with collecting() as missing:
        chinese = translate_html(text)
    if missing:
        return None
    for k, placeholder in enumerate(shown):
        chinese = chinese.replace(str(_SENTINEL + k), placeholder)
    return chinese


def translate_figure_words(source: str, missing: list[str], where: str = "") -> str:
    """``source`` with the words of each literal of :func:`figure_word_nodes` in Chinese
    (the figures' catalogue); those it lacks are appended to ``missing``. A literal that
    already has Chinese (a message the code catalogue translated) stays as it is."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.split("\n")
    legends = _legend_loops(tree, source)
    nodes = {_key(n): n for n in figure_word_nodes(tree)} | {key: n for key, (n, _) in legends.items()}
    for key in sorted(nodes, reverse=True):
        node = nodes[key]
        text = literal_text(source, node)
        words = re.search(r"[A-Za-z]{2,}", PLACEHOLDER.sub(" ", text.msgid)) if text else None
        if text is None or _CJK.search(text.msgid) or not (words or key in legends):
            continue
        chinese = legends[key][1] if key in legends else _chinese(text.msgid)
        if chinese is None:
            missing.append(f"{where}: figure words {text.msgid[:70]!r} (tinyk/locale/figures_zh_CN.po)")
            continue
        (l1, c1), (l2, c2) = text.start, text.end
        replaced = lines[l1 - 1][:c1] + text.render(chinese) + lines[l2 - 1][c2:]
        lines[l1 - 1: l2] = replaced.split("\n")
    return "\n".join(lines)
