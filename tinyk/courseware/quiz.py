"""Concept checks: a multiple-choice question at the end of a chapter section (05.2 onward), each
choice with the explanation of why it is right or wrong.

A notebook writes one question as a MyST directive in a Markdown cell::

    :::{quiz}
    :answer: 2
    What does RMSNorm divide a vector by?

    - Its standard deviation.

      Not quite: that is LayerNorm, which subtracts the mean first.
    - Its root mean square.

      Yes: ...
    :::

The question is one paragraph; the choices are a bullet list, each item a paragraph (the choice)
followed by one or more blocks (its explanation); ``:answer:`` is the number of the right choice,
from 1. Every piece is page prose: Sphinx's gettext builder extracts each paragraph as a message
of the page's catalogue, and the Chinese edition translates it like any other.

Three readers, one source (:func:`parse_quiz` reads it for all three):

- the site: the book's extension (``book/_ext/tinyk_book.py``) renders a fieldset of radio
  buttons, a button and a feedback region that shows the chosen answer's explanation, in the
  page, with no kernel;
- Jupyter and Colab (the student notebooks): :func:`quiz_markdown` writes it as plain Markdown,
  the choices numbered and their explanations in a collapsed ``<details>`` block;
- the Chinese student notebooks: the same, after the question, choices and explanations are
  translated from the page's catalogue.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["QUIZ_DIRECTIVE", "SHOW_ANSWERS", "VERDICTS", "Choice", "Quiz", "parse_quiz", "quiz_markdown",
           "split_options"]

# A quiz in a notebook's Markdown: ``:::{quiz}`` ... ``:::`` (group 1: the body, options included).
QUIZ_DIRECTIVE = re.compile(r"^:::\{quiz\}[ \t]*\n(.*?)^:::[ \t]*$", re.M | re.S)
# What a reader is told after choosing: the same words on the site and in the student notebooks
# (the Chinese ones from locale/zh_CN/interface.po).
VERDICTS = {"right": "Correct.", "wrong": "Not quite."}
SHOW_ANSWERS = "Show the answers"  # the student notebooks' <details> summary
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*?)[ \t]*$")


@dataclass(frozen=True)
class Choice:
    """One choice: its text (one Markdown paragraph) and its explanation (Markdown blocks), each
    with the line of the quiz's body it starts on (from 0), for the page's line numbers."""

    text: str
    explanation: str
    line: int
    explanation_line: int


@dataclass(frozen=True)
class Quiz:
    """A parsed quiz: the question (one Markdown paragraph), the choices, the right one's number
    (from 1)."""

    question: str
    choices: tuple[Choice, ...]
    answer: int


def split_options(body: str) -> tuple[dict[str, str], str, int]:
    """A directive body's leading ``:name: value`` lines as a dict, the rest of the body, and how
    many lines the options took (MyST reads the same lines as the directive's options)."""
    lines = body.split("\n")
    options: dict[str, str] = {}
    n = 0
    while n < len(lines) and (m := _OPTION.match(lines[n])):
        options[m[1]] = m[2]
        n += 1
    return options, "\n".join(lines[n:]), n


def parse_quiz(body: str, answer: int | str | None, where: str = "quiz") -> Quiz:
    """The quiz whose body (without its options) is ``body`` and whose right choice is number
    ``answer`` (the ``:answer:`` option). A ``ValueError`` names ``where``, the part and the rule
    it breaks."""
    try:
        right = int(str(answer).strip())
    except ValueError:
        raise ValueError(f"{where}: :answer: is {answer!r}; it must be the number of the right choice "
                         f"(1 for the first)") from None
    from tinyk.courseware.myst import myst_parser

    lines = body.split("\n")
    tokens = myst_parser().parse(body)
    top = [t for t in tokens if t.level == 0 and t.nesting >= 0]
    if len(top) != 2 or top[0].type != "paragraph_open" or top[1].type != "bullet_list_open":
        found = ", ".join(t.type.removesuffix("_open") for t in top) or "nothing"
        raise ValueError(f"{where}: a quiz is one paragraph (the question) then one bullet list "
                         f"(the choices); found {found}")
    question = tokens[tokens.index(top[0]) + 1].content
    choices = []
    items = [i for i, t in enumerate(tokens) if t.type == "list_item_open" and t.level == 1]
    for number, i in enumerate(items, 1):
        item = tokens[i]
        blocks = _item_blocks(tokens, i)
        if not blocks or blocks[0].type != "paragraph_open":
            raise ValueError(f"{where}: choice {number} does not start with a paragraph (the choice's text)")
        if len(blocks) < 2:
            text = tokens[tokens.index(blocks[0]) + 1].content
            raise ValueError(f"{where}: choice {number} ({text[:40]!r}) has no explanation: after the "
                             f"choice's paragraph, a blank line and why it is right or wrong")
        text = tokens[tokens.index(blocks[0]) + 1].content
        start, end = blocks[1].map[0], item.map[1]
        explanation = textwrap.dedent("\n".join(lines[start:end])).strip("\n")
        choices.append(Choice(text, explanation, item.map[0], start))
    if len(choices) < 2:
        raise ValueError(f"{where}: a quiz needs at least two choices; found {len(choices)}")
    if not 1 <= right <= len(choices):
        raise ValueError(f"{where}: :answer: is {right}, but there are {len(choices)} choices "
                         f"(it is the number of the right choice, 1 to {len(choices)})")
    return Quiz(question, tuple(choices), right)


def _item_blocks(tokens, i: int) -> list:
    """The opening tokens of the blocks of the list item opened at ``tokens[i]``."""
    blocks = []
    for t in tokens[i + 1:]:
        if t.type == "list_item_close" and t.level == 1:
            break
        if t.level == 2 and t.nesting >= 0:
            blocks.append(t)
    return blocks


def _indented(text: str, indent: str) -> str:
    return "\n".join(indent + ln if ln and k else ln for k, ln in enumerate(text.split("\n")))


def quiz_markdown(body: str, words: Callable[[str], str] | None = None, where: str = "quiz") -> str:
    """A quiz's directive body (options included) as plain Markdown for Jupyter and Colab: the
    question, the choices numbered, and a collapsed ``<details>`` block that gives each choice's
    verdict and explanation. ``words(english)``: the verdicts and the block's summary in the
    notebook's language (by default, the English)."""
    words = words or str
    options, rest, _ = split_options(body)
    quiz = parse_quiz(rest, options.get("answer"), where)
    out = [quiz.question, ""]
    out += [f"{n}. {_indented(c.text, '   ')}" for n, c in enumerate(quiz.choices, 1)]
    out += ["", "<details>", f"<summary>{words(SHOW_ANSWERS)}</summary>", ""]
    for n, c in enumerate(quiz.choices, 1):
        verdict = words(VERDICTS["right" if n == quiz.answer else "wrong"])
        out.append(f"{n}. **{verdict}** {_indented(c.explanation, '   ')}")
    return "\n".join([*out, "", "</details>"])
