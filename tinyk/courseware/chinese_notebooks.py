"""The Chinese student notebooks, ``student/zh/`` (the *Chinese edition* of the book's
*For instructors* page): what every Colab button of the Chinese site opens.

They are made with the English student versions, by the same command
(``python -m tinyk.courseware.course students``), from the same sources, and checked by
``python -m tinyk.courseware.course check`` in the same way. Each is the English student version with
its words replaced, never its code:

- **Markdown** cells are parsed as the book parses them (MyST, with the book's extensions),
  and each block that Sphinx's gettext builder makes a message of (a paragraph, a heading,
  a list item, the body and title of an admonition or a hint) is replaced by its translation
  in the page's catalogue, ``locale/zh_CN/LC_MESSAGES/notebooks/<stem>.po``; maths blocks and
  code fences stay as they are. A block without a translation is a problem that names it,
  never English left silently.
- **Pseudocode**: a fence with no language (or ``text``) in a hint's dropdown is read, not run:
  one message of the code catalogue each (:func:`pseudocode_blocks`); other fences stay English.
- **Code** cells keep every token but string literals and comments. What a learner reads
  there is translated from ``locale/zh_CN/LC_MESSAGES/code/<stem>.po``: comments, docstrings
  (every one: a docstring of symbols only still takes Chinese punctuation), the messages of
  assertions, of raised errors and of ``print`` calls (a run prints Chinese), and the strings
  that only flow into those (a dictionary of hints, a loop's printed labels:
  :mod:`tinyk.courseware.message_flow`). :func:`code_messages` extracts them from the English student
  version (``python -m tinyk.translations update`` writes the catalogue); an f-string's
  placeholders come through unchanged (``python -m tinyk.translations check`` says so when
  one does not). nbgrader's metadata stays the English student version's. The Chinese site's
  code cells are translated by :func:`translate_code` from the same catalogue, so that they
  read as these notebooks do (:mod:`tinyk.translations.pages`).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tinyk.courseware.message_flow import SEPARATORS, flowing_names, message_nodes, string_nodes
from tinyk.courseware.myst import myst_parser
from tinyk.courseware.quiz import split_options

__all__ = ["CODE_FOLDER", "KINDS", "PLACEHOLDER", "PSEUDOCODE", "code_catalogue_path", "code_messages",
           "display_width", "figure_word_nodes", "translate_figure_words", "literal_text", "load_messages",
           "placeholders", "pseudocode_blocks", "same_code", "stripped", "translate_code",
           "translate_markdown", "translate_pseudocode"]

CODE_FOLDER = "code"  # under locale/zh_CN/LC_MESSAGES/, one catalogue per notebook
KINDS = ("comment", "docstring", "message")  # the kinds of code text (:func:`code_messages`)
PSEUDOCODE = "pseudocode"  # the kind of a hint's pseudocode block (fenced as ``` or ```text)
_WORDS = re.compile(r"[A-Za-z]{2,}")
# An f-string's placeholder, ``{got!r}`` or ``{x[0, 0]:.3g}`` (one level of nested braces).
PLACEHOLDER = re.compile(r"(?<!\{)\{(?!\{)[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")
_LINE = 100  # the width a long translated message is wrapped to, where its English was wrapped


def code_catalogue_path(root: Path, stem: str) -> Path:
    """The catalogue of a notebook's code text: ``locale/zh_CN/LC_MESSAGES/code/<stem>.po``."""
    return root / "locale" / "zh_CN" / "LC_MESSAGES" / CODE_FOLDER / f"{stem}.po"


def _key(text: str) -> str:
    """A page message as Sphinx extracts it: lines joined, spaces collapsed."""
    return " ".join(text.split())


def load_messages(path: Path, *, code: bool = False) -> dict[str, str]:
    """``msgid -> msgstr`` of a catalogue's translated, not fuzzy messages
    (:func:`tinyk.courseware.catalogues.translated`; an absent file: none). Page messages are keyed with
    their spaces collapsed; code messages exactly."""
    from tinyk.courseware.catalogues import translated

    return {(msgid if code else _key(msgid)): msgstr for msgid, msgstr in translated(path).items()}


def translate_markdown(text: str, messages: dict[str, str], missing: list[str], where: str = "") -> str:
    """``text`` (MyST) with each translatable block replaced by its translation in
    ``messages`` (:func:`load_messages`); blocks without one are appended to ``missing``
    and left as they are."""
    lines = text.split("\n")
    tokens = myst_parser().parse(text)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, end line, new lines)

    def translated(content: str) -> str:
        found = messages.get(_key(content))
        if found is None:
            missing.append(f"{where}: {_key(content)[:70]!r}")
            return content
        return found

    for i, token in enumerate(tokens):
        if token.type == "inline":
            if tokens[i - 1].map is None:  # a table cell, say: no line of its own to replace
                raise ValueError(f"{where}: the Chinese notebooks cannot place the block {token.content!r} "
                                 f"(in a {tokens[i - 1].type}); write it as a paragraph or a list")
            start, end = tokens[i - 1].map
            first = token.content.split("\n")[0]
            column = lines[start].find(first)
            if column < 0:
                raise ValueError(f"{where}: cannot find the block {first!r} on its line {lines[start]!r}")
            prefix = lines[start][:column]
            new = translated(token.content).split("\n")
            indent = " " * len(prefix) if prefix.strip(" -*+0123456789.)") == "" else prefix
            edits.append((start, end, [prefix + new[0]] + [indent + ln for ln in new[1:]]))
        elif token.type in ("fence", "colon_fence") and token.info.startswith("{") and token.map:
            start, end = token.map
            title = token.info.partition("}")[2]
            opening = lines[start]
            if title.strip():
                opening = opening[: opening.rindex(title.strip())] + translated(title.strip())
            # A directive's options (``:answer: 2``) are not prose: they stay as they are.
            _, content, n_options = split_options(token.content.rstrip("\n"))
            options = token.content.split("\n")[:n_options]
            body = translate_markdown(content, messages, missing, where)
            closed = end - start >= 2 and lines[end - 1].strip().startswith(("```", ":::"))
            indent = opening[: len(opening) - len(opening.lstrip())]
            body_lines = [indent + ln if ln else ln for ln in [*options, *body.split("\n")]]
            edits.append((start, end - 1 if closed else end, [opening, *body_lines]))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def pseudocode_blocks(text: str, where: str = "") -> list[tuple[int, str, str]]:
    """``(first line from 0, indent, text)`` of each pseudocode block of a Markdown cell's MyST:
    a fenced block with no language or ``text`` inside a hint's dropdown (``:::{dropdown}``)."""
    lines, found = text.split("\n"), []
    dropdowns = [t for t in myst_parser().parse(text) if t.type in ("fence", "colon_fence") and t.map
                 and t.info.strip().startswith("{dropdown}")]
    for token in dropdowns:
        for inner in myst_parser().parse(token.content):
            if inner.type == "fence" and inner.info.strip() in ("", "text") and inner.map:
                first = token.map[0] + 1 + inner.map[0] + 1  # the dropdown's and the fence's opening lines
                indent = re.match(r"\s*", lines[first - 1])[0]
                body = inner.content.rstrip("\n")
                if lines[first: first + body.count("\n") + 1] != _indented(body, indent):
                    raise ValueError(f"{where}: cannot place the pseudocode block {body[:40]!r} on its lines")
                found.append((first, indent, body))
    return found


def _indented(text: str, indent: str) -> list[str]:
    return [indent + ln if ln else ln for ln in text.split("\n")]


def translate_pseudocode(text: str, messages: dict[str, str], missing: list[str], where: str = "") -> str:
    """``text`` (MyST) with each pseudocode block (:func:`pseudocode_blocks`) replaced by its
    translation in ``messages`` (a code catalogue's); one without is appended to ``missing``."""
    lines = text.split("\n")
    for first, indent, body in reversed(pseudocode_blocks(text, where)):
        if body not in messages:
            missing.append(f"{where}: {body[:70]!r}")
        else:
            lines[first: first + body.count("\n") + 1] = _indented(messages[body], indent)
    return "\n".join(lines)


@dataclass
class _Text:
    """One message of a code cell: where it is, its text, and how a translation is written."""

    start: tuple[int, int]  # (line, column) from 1 and 0, in characters, as tokenize counts
    end: tuple[int, int]
    msgid: str
    kind: str  # "comment", "docstring" or "message"
    render: Callable[[str], str]


def _columns(source_lines: list[str], line: int, byte_col: int) -> int:
    """ast's byte offset on a line as a character offset (tokenize's)."""
    return len(source_lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8"))


_FORM_TITLE = re.compile(r"^@title\s+(.*?)(\s*\{[^{}]*\})?$")
_PREFIX = re.compile(r"^([A-Za-z]*)('''|\"\"\"|'|\")")


# A line of a long message breaks preferably after a full-width comma, semicolon, colon, full
# stop, enumeration comma or closing bracket, or after an ASCII comma, semicolon, colon or space.
_AFTER = "\uff0c\uff1b\uff1a\u3002\u3001\uff09,;: "


def display_width(text: str) -> int:
    """The columns a terminal gives ``text``: a wide (Chinese) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _split(text: str, width: int) -> list[str]:
    """``text`` in pieces of about equal width, each at most about ``width`` (a CJK character
    counts two), broken after punctuation where one is near, never inside an f-string
    placeholder, ASCII brackets (a list, a shape), an escape sequence, a word or a number
    (``14,563``)."""
    total = display_width(text)
    if total <= width:
        return [text]
    allowed, depth, at, widths = {}, 0, 0, []  # break position -> width before it; preferred?
    for i, ch in enumerate(text):
        if i and depth == 0 and text[i - 1] != "\\" and ch not in "{}" and \
                not (re.match(r"[\w.]", text[i - 1], re.A) and re.match(r"[\w.]", ch, re.A)) and \
                not re.match(r"\d,\d", text[i - 2: i + 1]):
            allowed[i] = text[i - 1] in _AFTER
        depth = max(0, depth + (ch in "{[(") - (ch in "}])"))
        at += display_width(ch)
        widths.append(at)
    pieces, start, done = [], 0, 0
    count = -(-total // width)
    for k in range(1, count):
        target = done + (total - done) / (count - k + 1)
        best = min((i for i in allowed if i > start and widths[i - 1] - done <= width),
                   key=lambda i: abs(widths[i - 1] - target) - (10 if allowed[i] else 0), default=None)
        if best is None:
            break
        pieces.append(text[start:best])
        start, done = best, widths[best - 1]
    return [*pieces, text[start:]]


def code_texts(source: str) -> list[_Text]:
    """Every translatable text of a code cell's ``source`` (see the module's docstring)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    tree = ast.parse(source)
    source_lines = source.split("\n")
    texts: list[_Text] = []
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            body = tok.string[1:].strip()
            form = _FORM_TITLE.match(body)
            if form:  # a Colab form's title: # @title Words { display-mode: "form" }
                texts.append(_Text(tok.start, tok.end, form[1], "comment",
                                   lambda s, rest=form[2]: f"# @title {s}{rest}"))
            elif _WORDS.search(body) and not body.startswith(("noqa", "type:")):
                texts.append(_Text(tok.start, tok.end, body, "comment", lambda s: f"# {s}"))
    strings = [t for t in tokens if t.type == tokenize.STRING]
    docstrings, messages = message_nodes(tree)
    for node, kind in [*((n, "docstring") for n in docstrings), *((n, "message") for n in messages)]:
        start = (node.lineno, _columns(source_lines, node.lineno, node.col_offset))
        end = (node.end_lineno, _columns(source_lines, node.end_lineno, node.end_col_offset))
        parts = [t for t in strings if start <= t.start and t.end <= end]
        texts.append(_string_text(parts, start, end, kind, isinstance(node, ast.JoinedStr), source_lines))
    # Words to translate; a separator; a docstring, even one of symbols only (its punctuation).
    return [t for t in texts if t is not None and (_WORDS.search(PLACEHOLDER.sub(" ", t.msgid))
                                                   or t.msgid in SEPARATORS or t.kind == "docstring")]


def _string_text(parts: list[tokenize.TokenInfo], start, end, kind: str, formatted: bool,
                 source_lines: list[str]) -> _Text | None:
    bodies, quotes = [], set()
    for part in parts:
        prefix, quote = _PREFIX.match(part.string).groups()
        if set(prefix.lower()) - {"f", "u"}:
            return None  # raw and byte strings are not messages to translate
        body = part.string[len(prefix) + len(quote): -len(quote)]
        if formatted and "f" not in prefix.lower():
            body = body.replace("{", "{{").replace("}", "}}")
        bodies.append(body)
        quotes.add(quote)
    if len(quotes) != 1:
        return None
    quote = quotes.pop()
    f = "f" if formatted else ""
    if kind == "docstring":
        lines = bodies[0].split("\n")
        indent = " " * min((len(ln) - len(ln.lstrip()) for ln in lines[1:] if ln.strip()), default=0)
        msgid = "\n".join([lines[0], *(ln[len(indent):] for ln in lines[1:])])

        def render(s: str) -> str:
            first, *rest = s.split("\n")  # the last line, empty, puts the closing quotes in place
            rest = [indent + ln if ln or k == len(rest) - 1 else ln for k, ln in enumerate(rest)]
            return quote + "\n".join([first, *rest]) + quote

        return _Text(start, end, msgid, kind, render)
    msgid = "".join(bodies)
    if len(parts) == 1:
        return _Text(start, end, msgid, kind, lambda s: f"{f}{quote}{s}{quote}")
    line, column = parts[0].end
    between = source_lines[line - 1][column:] if parts[1].start[0] > line else ""
    joiner = (" \\\n" if "\\" in between else "\n") + " " * parts[1].start[1]

    def render_pieces(s: str) -> str:
        pieces = _split(s, max(40, _LINE - parts[1].start[1]))
        return joiner.join(f"{f if ('{' in p or '}' in p) else ''}{quote}{p}{quote}" for p in pieces)

    return _Text(start, end, msgid, kind, render_pieces)


def literal_text(source: str, node: ast.AST) -> _Text | None:
    """The text of one string literal ``node`` of ``source`` (a cell), as :func:`code_texts`
    gives a message's: its msgid and how a translation is written in its place (None for a
    raw or bytes string)."""
    lines = source.split("\n")
    strings = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.STRING]
    start = (node.lineno, _columns(lines, node.lineno, node.col_offset))
    end = (node.end_lineno, _columns(lines, node.end_lineno, node.end_col_offset))
    parts = [t for t in strings if start <= t.start and t.end <= end]
    return _string_text(parts, start, end, "message", isinstance(node, ast.JoinedStr), lines)


def code_messages(source: str) -> list[tuple[str, str]]:
    """``(msgid, kind)`` of every text of a code cell to translate, in order."""
    return [(t.msgid, t.kind) for t in sorted(code_texts(source), key=lambda t: t.start)]


def translate_code(source: str, messages: dict[str, str], missing: list[str], where: str = "",
                   kinds: tuple[str, ...] = KINDS) -> str:
    """``source`` with each text of :func:`code_texts` of one of ``kinds`` replaced by its
    translation in ``messages``; texts without one are appended to ``missing`` and left as
    they are."""
    lines = source.split("\n")
    for text in sorted(code_texts(source), key=lambda t: t.start, reverse=True):
        if text.kind not in kinds:
            continue
        new = messages.get(text.msgid)
        if new is None:
            missing.append(f"{where}: {text.msgid[:70]!r}")
            continue
        _replace(lines, text, new)
    return "\n".join(lines)


def _replace(lines: list[str], text: _Text, new: str) -> None:
    """Put ``new``, rendered as ``text``'s literal, in place of ``text`` in ``lines`` (a source's
    lines; ``text.start`` and ``text.end`` are 1-based lines and 0-based columns). Callers go from
    the end of the source backwards, so that the positions of the texts before it still hold."""
    (l1, c1), (l2, c2) = text.start, text.end
    replaced = lines[l1 - 1][:c1] + text.render(new) + lines[l2 - 1][c2:]
    lines[l1 - 1: l2] = replaced.split("\n")


def placeholders(text: str) -> list[str]:
    """An f-string message's placeholders (``{got!r}``, ``{x:.3g}``), sorted."""
    return sorted(PLACEHOLDER.findall(text.replace("{{", "").replace("}}", "")))


def stripped(source: str) -> str:
    """A cell's code with every string literal emptied and its comments gone (an f-string
    keeps its placeholders, sorted: a translation may reorder them), as an AST dump: what
    the two languages' versions of a cell must share."""

    class Strip(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

        def visit_JoinedStr(self, node):
            values = sorted((v for v in node.values if isinstance(v, ast.FormattedValue)), key=ast.dump)
            return ast.JoinedStr(values=values) if values else ast.Constant("")

    return ast.dump(Strip().visit(ast.parse(textwrap.dedent(source))))


def same_code(translated: str, english: str) -> bool:
    """Whether a translated cell parses and is the English cell but for its words (:func:`stripped`):
    string literals set aside too, unlike :func:`tinyk.courseware.cell_names.same_code`."""
    try:
        return stripped(translated) == stripped(english)
    except SyntaxError:
        return False


# The words a code cell draws: a figure's title, axis labels, legend and word ticks, a
# slider's labels and the text of an HTML calculator. The book's run draws them in Chinese from
# the figures' catalogue, tinyk/locale/figures_zh_CN.po (tinyk.courseware.figure_text); the code of the
# Chinese pages and of the Chinese notebooks gives the same words from the same catalogue, so
# that the code says what the figure shows (translate_figure_words): a call's label=; the
# title and axis labels of tinyk.lessons.plotting.label, set_title, set_xlabel, set_ylabel, suptitle,
# the words of word_ticks and the title of plot_attention_mask, as literals or through a loop
# over literals; the strings a function given to slider returns, or that flow only into what it
# returns (unless it returns a figure function's result: a mask's key labels are data). A
# loop's labels that a legend shows at the start of an f-string are read in the legend's
# catalogue message (_legend_loops). An f-string's placeholders stay: each stands for a number
# while the catalogue is read. A Chinese kernel without a font that draws Chinese draws these
# words in English again (tinyk.courseware.figure_text.drawable).


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


def _place(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _legend_loops(tree: ast.Module, source: str) -> dict[tuple[int, int], tuple[ast.AST, str]]:
    """place -> (literal, its Chinese) for the labels of loops that a legend's f-string shows
    first, and for that f-string (the module's docstring); nothing for a loop whose every
    label's legend the catalogue lacks."""
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
            found[_place(label)] = (label, legend[: len(legend) - common])
        found[_place(template)] = (template, "{" + name + "}" + legends[0][len(legends[0]) - common:])
    return found


def _chinese(msgid: str) -> str | None:
    """``msgid`` (a literal's text, an f-string's placeholders in it) in Chinese from the
    figures' catalogue, as the run draws it; None when the catalogue lacks it."""
    from tinyk.courseware.figure_text import collecting, translate_html

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
    nodes = {_place(n): n for n in figure_word_nodes(tree)} | {key: n for key, (n, _) in legends.items()}
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
        _replace(lines, text, chinese)
    return "\n".join(lines)
