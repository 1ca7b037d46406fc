"""On the Chinese chapter pages, each printed line is what the translated code above it prints.

A code cell of a Chinese page is translated from the notebook's code catalogue
(:mod:`tinyk.translations.pages`), and its printed output, from the same English run, line by
line from ``outputs.po`` (:mod:`tinyk.translations.outputs`): two catalogues, so a
translation can drift from the other (a comma the code does not print, a column padded
otherwise). Here every ``print`` of a shown cell whose literal text has words is read as a
pattern, its literals as they are and each placeholder or argument a field
(:func:`print_pattern`); each English line it printed (found by the English pattern in the
English output) must be matched, at the same place of the Chinese output, by the translated
``print``'s pattern, and each field must hold what the English run printed there, except a
field that shows a translated label, which must be padded as the code pads it
(:func:`print_problems`).

The data is the book's execution cache (what both editions render) and the catalogues the
Chinese build reads; the build itself is not needed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import pytest

from tinyk.courseware import checkout

_LETTERS = re.compile(r"[A-Za-z]{2,}|[\u3400-\u9fff]")
_HIDDEN = {"remove-cell", "remove_cell", "remove-input", "remove_input"}


@dataclass
class Field:
    source: str  # the placeholder's or argument's expression
    pad: tuple[str, int] | None  # ("display", W) for column(x, W), ("chars", W) for {x:W} or {x:<W}


@dataclass
class Pattern:
    regex: re.Pattern[str]
    fields: list[Field]
    text: str  # the literals, for the messages


def _field(node: ast.expr, spec: ast.expr | None = None) -> Field:
    pad = None
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "column" and len(node.args) == 2 \
            and isinstance(node.args[1], ast.Constant):
        pad = ("display", int(node.args[1].value))
    elif isinstance(spec, ast.JoinedStr) and [type(v) for v in spec.values] == [ast.Constant]:
        width = re.fullmatch(r"<?(\d+)s?", spec.values[0].value)
        pad = ("chars", int(width[1])) if width else None
    return Field(ast.unparse(node), pad)


def _pieces(node: ast.expr) -> list[str | Field]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.Constant) else _field(v.value, v.format_spec)
                for v in node.values]
    return [_field(node)]


def print_pattern(call: ast.Call) -> Pattern | None:
    """A ``print`` call's lines as a regular expression (literals as they are, a group for each
    field), or None for a print with a computed ``sep``/``end``, another stream, or no words."""
    keywords = {k.arg: k.value for k in call.keywords}
    if set(keywords) - {"sep", "end"} or any(not isinstance(v, ast.Constant) for v in keywords.values()):
        return None
    sep = keywords["sep"].value if "sep" in keywords else " "
    end = keywords["end"].value if "end" in keywords else "\n"
    if end != "\n" or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    pieces: list[str | Field] = []
    for n, arg in enumerate(call.args):
        pieces += ([sep] if n else []) + _pieces(arg)
    text = "".join(p for p in pieces if isinstance(p, str))
    if not _LETTERS.search(text):
        return None
    regex = "".join(re.escape(p) if isinstance(p, str) else "([^\n]*?)" for p in pieces)
    return Pattern(re.compile(f"^{regex}$", re.M), [p for p in pieces if isinstance(p, Field)], text)


def _prints(source: str) -> list[ast.Call]:
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _padded(text: str, pad: tuple[str, int]) -> bool:
    from tinyk.courseware.chinese_notebooks import display_width

    kind, width = pad
    measure = display_width if kind == "display" else len
    return measure(text) == max(width, measure(text.rstrip(" ")))


def _splits(pieces: list, line: str, at: int = 0) -> list[list[str]]:
    """Every way ``line`` (from ``at``) is the pattern's ``pieces`` (literals as they are, a
    field any text without a line break): each a list of the fields' values, in order."""
    if not pieces:
        return [[]] if at == len(line) else []
    first, rest = pieces[0], pieces[1:]
    if isinstance(first, str):
        return _splits(rest, line, at + len(first)) if line.startswith(first, at) else []
    found = []
    for end in range(at, len(line) + 1):
        if "\n" in line[at:end]:
            break
        found += [[line[at:end], *tail] for tail in _splits(rest, line, end)]
    return found


def _pieces_of(call: ast.Call) -> list[str | Field]:
    keywords = {k.arg: k.value.value for k in call.keywords}
    sep = keywords.get("sep", " ")
    pieces: list[str | Field] = []
    for n, arg in enumerate(call.args):
        pieces += ([sep] if n else []) + _pieces(arg)
    return pieces


def _same(english: str, chinese: str, field: Field, words: dict[str, str]) -> bool:
    """Whether a field shows ``chinese`` where the English run showed ``english``: the same
    text, or a label's translation in ``words`` padded as the field pads it."""
    label = english.strip(" ")
    if chinese == english:
        return True
    return label in words and chinese.strip(" ") == words[label] and \
        (not field.pad or _padded(chinese, field.pad))


def _fits(en_pieces: list, zh_pieces: list, english: str, chinese: str, words: dict[str, str]) -> str | None:
    """None when the translated print's ``zh_pieces`` write ``chinese`` with the values the
    English print wrote in ``english`` (a label: its translation in ``words``, padded as the
    code pads it), else what departs."""
    en_fields = [p for p in en_pieces if isinstance(p, Field)]
    zh_fields = [p for p in zh_pieces if isinstance(p, Field)]
    order: list[int] = []  # the English field each Chinese one shows (a translation may reorder them)
    for field in zh_fields:
        same = [k for k, f in enumerate(en_fields) if f.source == field.source and k not in order]
        if not same:
            return f"{{{field.source}}} is not a field of the English print"
        order.append(same[0])
    zh_splits = _splits(zh_pieces, chinese)
    if not zh_splits:
        return "the code cannot print it"
    for en_values in _splits(en_pieces, english):
        for zh_values in zh_splits:
            if all(_same(en_values[k], value, field, words) for value, field, k in
                   zip(zh_values, zh_fields, order, strict=True)):
                return None
    return "not the English run's values, or not padded as the code pads them"


def print_problems(english_code: str, chinese_code: str, english: str, chinese: str,
                   words: dict[str, str] | None = None) -> tuple[list[str], int]:
    """(how the Chinese output departs from what the translated code prints, how many printed
    lines were compared) for one cell: its code and its printed text in each language.
    ``words``: the notebook's code catalogue (a label printed in a field, such as a loop's
    ``name``, is its translation there)."""
    en_calls, zh_calls = _prints(english_code), _prints(chinese_code)
    if len(en_calls) != len(zh_calls):
        return [f"{len(en_calls)} prints in the English code, {len(zh_calls)} in the Chinese"], 0
    zh_lines, starts = chinese.split("\n"), [0]
    for line in english.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    problems, compared = [], 0
    for en_call, zh_call in zip(en_calls, zh_calls, strict=True):
        en, zh = print_pattern(en_call), print_pattern(zh_call)
        if en is None or zh is None:
            continue
        for match in en.regex.finditer(english):
            if match.start() not in starts:
                continue
            first = starts.index(match.start())
            shown = "\n".join(zh_lines[first:first + match[0].count("\n") + 1])
            compared += 1
            wrong = _fits(_pieces_of(en_call), _pieces_of(zh_call), match[0], shown, words or {})
            if wrong:
                problems.append(f"{wrong}: the code prints {zh.text!r}, the page shows {shown!r} "
                                f"(English {match[0]!r})")
    return problems, compared


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def page_cells():
    """(stem, cell index, English code, Chinese code, English output, Chinese output, the code
    catalogue) of each shown code cell of each chapter page that prints, from the execution cache."""
    from tinyk.courseware.catalogues import outputs_catalogue, read_catalogue
    from tinyk.courseware.chinese_notebooks import (
        code_catalogue_path,
        load_messages,
        translate_code,
        translate_figure_words,
    )
    from tinyk.translations.outputs import _executed_notebooks, merged_streams, translated_outputs
    from tinyk.translations.pages import SHOWN_KINDS

    catalogue = {str(m.id): str(m.string) for m in read_catalogue(outputs_catalogue()) if m.id and m.string}
    notebooks = _executed_notebooks(checkout.ROOT)
    for stem, nb in notebooks.items():
        messages = load_messages(code_catalogue_path(checkout.ROOT, stem), code=True)
        for n, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or _HIDDEN & set(cell.get("metadata", {}).get("tags", [])):
                continue
            english = [o for o in merged_streams(cell.get("outputs", [])) if o.get("name") == "stdout"]
            chinese = [o for o in translated_outputs(cell, catalogue)[0] if o.get("name") == "stdout"]
            if not english:
                continue
            code = cell.source
            shown = translate_figure_words(translate_code(code, messages, [], kinds=SHOWN_KINDS), [])
            yield (stem, n, code, shown,
                   _text(english[0]["text"]), _text(chinese[0]["text"]), messages)


@pytest.mark.site
def test_every_print_on_a_chinese_page_shows_what_its_translated_code_prints():
    found = list(page_cells()) if (checkout.ROOT / "_build" / ".jupyter_cache").is_dir() else []
    if not found:
        from tests.optional import missing

        missing("no execution cache in _build/.jupyter_cache: build the book first (make book)")
    assert len({stem for stem, *_ in found}) == len(checkout.notebook_paths())
    problems, compared = {}, 0
    for stem, n, en_code, zh_code, en, zh, words in found:
        wrong, count = print_problems(en_code, zh_code, en, zh, words)
        compared += count
        if wrong:
            problems[f"{stem} cell {n}"] = wrong
    assert problems == {}
    assert compared >= 100, compared


ENGLISH = ('for name, n in [("tiny", 1), ("upstream default", 12)]:\n'
           '    print(f"{column(name, 17)} layers: {n:3d}")\n')
CHINESE = ('for name, n in [("小实验", 1), ("上游默认配置", 12)]:\n'
           '    print(f"{column(name, 17)} 层数：{n:3d}")\n')
WORDS = {"tiny": "小实验", "upstream default": "上游默认配置"}
PRINTED = "tiny              layers:   1\nupstream default  layers:  12\n"


@pytest.mark.parametrize(("shown", "problem"), [
    ("小实验            层数：  1\n上游默认配置      层数： 12\n", None),
    ("小实验            层数：  1\n上游默认配置    层数： 12\n", "padded as the code"),  # by characters
    ("小实验            层数：  1\n上游默认配置      层数：12\n", "English run's values"),  # padding lost
    ("小实验            层数：  1\n上游默认配置      层数  12\n", "cannot print"),  # no colon
])
def test_a_chinese_line_that_the_translated_print_cannot_write_is_named(shown, problem):
    problems, compared = print_problems(ENGLISH, CHINESE, PRINTED, shown, WORDS)
    assert compared == 2
    assert (problems == []) if problem is None else (len(problems) == 1 and problem in problems[0]), problems


def test_a_print_with_two_arguments_is_joined_by_its_separator():
    code_en, code_zh = 'print(name, "from", path)\n', 'print(name, "读自", path)\n'
    assert print_problems(code_en, code_zh, "model from a.gguf", "model 读自 a.gguf") == ([], 1)
    problems, _ = print_problems(code_en, code_zh, "model from a.gguf", "model，读自 a.gguf")
    assert len(problems) == 1 and "cannot print" in problems[0]
