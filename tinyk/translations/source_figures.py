"""The package's code shown on a Chinese page (the book's *For instructors* page): the figures
of :func:`tinyk.lessons.shown_code.show_source` (05.2 to 05.6's comparisons with the upstream code).

The code is shown as the package has it, its docstrings and comments in English (the code
that runs is the same in both editions). On a Chinese page, the figure's caption
(``tinyk/model.py, lines 215–237``) is translated, and a one-line Chinese note follows it:
the translation of what the shown code's docstring says first (its first paragraph), with
a clause for what the rest of it tells a learner (05.2: a float64 input stays float64, unlike
the upstream and Hugging Face), or, for code without a docstring, of its first line. Both are
messages of the printed outputs' catalogue, ``locale/zh_CN/outputs.po`` (with the numbers
taken out, as a printed line's), found by ``python -m tinyk.translations update`` like the
lines a page prints.
"""

from __future__ import annotations

import ast
import html
import re
import textwrap
from collections.abc import Mapping

from tinyk.courseware.figure_text import fill, message_key

__all__ = ["NOTE_CLASS", "figure_messages", "is_source_figure", "translate_source_figure"]

NOTE_CLASS = "tinyk-source-note"
_CAPTION = re.compile(r"(<figcaption><code>)(.*?)(</code></figcaption>)", re.S)
_NUMBERED = re.compile(r"^\s*\d+  ?", re.M)  # a line number of the plain-text view


def is_source_figure(data: Mapping[str, object]) -> bool:
    """Whether an output's ``data`` is a figure of :func:`tinyk.lessons.shown_code.show_source`."""
    shown = data.get("text/html")
    text = "".join(shown) if isinstance(shown, list) else shown
    return isinstance(text, str) and '<figure class="tinyk-source">' in text


def _summary(plain: str) -> str:
    """What the shown code's docstring says first (its first paragraph, on one line), or the
    code's first line when it has none; ``plain`` is the figure's text view."""
    code = _NUMBERED.sub("", plain.split("\n", 1)[1] if "\n" in plain else "")
    try:
        body = ast.parse(textwrap.dedent(code)).body
    except SyntaxError:
        body = []
    node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))), None)
    doc = ast.get_docstring(node) if node else None
    if doc:
        return f"{node.name}: {' '.join(doc.split(chr(10) * 2)[0].split())}"
    return " ".join(code.strip().split("\n")[0].split())


def figure_messages(data: Mapping[str, object]) -> tuple[str, str]:
    """(the caption's message, the note's message) of a source figure's output ``data``."""
    shown, plain = (data[k] for k in ("text/html", "text/plain"))
    shown = "".join(shown) if isinstance(shown, list) else shown
    plain = "".join(plain) if isinstance(plain, list) else plain
    return html.unescape(_CAPTION.search(shown)[2]), _summary(plain)


def translate_source_figure(data: dict, catalogue: Mapping[str, str]) -> list[str]:
    """Translate, in place, a source figure's caption in ``data`` and add its note after it;
    returns the messages ``catalogue`` lacks (the figure is then left as it is)."""
    caption, note = figure_messages(data)
    keys = [message_key(caption), message_key(note)]
    missing = [key for key, _ in keys if key not in catalogue]
    if missing:
        return missing
    (caption_key, caption_numbers), (note_key, note_numbers) = keys
    chinese = html.escape(fill(catalogue[caption_key], caption_numbers))
    gloss = html.escape(fill(catalogue[note_key], note_numbers))
    shown = data["text/html"]
    shown = "".join(shown) if isinstance(shown, list) else shown
    data["text/html"] = _CAPTION.sub(
        lambda m: f'{m[1]}{chinese}{m[3]}<p class="{NOTE_CLASS}" lang="zh-CN">{gloss}</p>', shown, count=1)
    return []
