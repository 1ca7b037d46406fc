"""The student notebooks' Markdown (the book's *For instructors* page): the MyST that Jupyter
and Colab cannot show, written as plain Markdown, and the words the student versions add.

A glossary term becomes a link to its entry on the site, a citation a link to the references
page, an admonition a quoted paragraph under its title, a hint's dropdown a ``<details>``
block. The ids of the site's sections and glossary entries follow Sphinx's rules
(:func:`heading_anchor`, :func:`term_id`), so that each link lands where the site put it.

The words the student versions add to the sources' (the line under an exercise that links
to its solution, the admonitions' titles, the setup cell's, :data:`tinyk.courseware.addresses.SETUP_WORDS`)
are written in English; the Chinese student notebooks take theirs from the interface's
catalogue, ``locale/zh_CN/interface.po``, keyed by the English (:data:`STUDENT_WORDS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tinyk.courseware.addresses import SETUP_WORDS
from tinyk.courseware.quiz import QUIZ_DIRECTIVE, SHOW_ANSWERS, VERDICTS, quiz_markdown

__all__ = ["ADMONITIONS", "CITE", "EXERCISE_HEADING", "LIVE", "LIVE_SMOLLM2", "PLAYGROUND", "SMOLLM2",
           "STUCK", "STUDENT_WORDS", "TERM", "admonition_title",
           "citation_labels", "heading_anchor", "markdown_for_notebooks", "term_id"]

# An exercise's heading in a notebook's markdown; its id on the site: heading_anchor().
EXERCISE_HEADING = re.compile(r"^#{1,6}\s+(Exercise\s+\d.*?)\s*$", re.MULTILINE)
TERM = re.compile(r"\{term\}`([^`<]*?)\s*(?:<([^`>]+)>)?`")  # {term}`shown <target>`: (shown, target)
CITE = re.compile(r"\{cite(?::[pt])?\}`([^`]+)`")
ADMONITIONS = ("warning", "note", "tip", "important", "caution")
_ADMONITION = re.compile(rf"^```\{{({'|'.join(ADMONITIONS)})\}}[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
# A hint (05.x exercises): ``:::{dropdown} Hint 1 of 3: a nudge`` ... ``:::``, a collapsed
# block on the site (sphinx-design); Jupyter and Colab show the same as <details>.
_DROPDOWN = re.compile(r"^:::\{dropdown\}[ \t]*([^\n]*)\n(.*?)^:::[ \t]*$", re.M | re.S)

# The line under an exercise's prompt that links to its solution ({url}: the solution's address).
STUCK = "Stuck? [The solution on the course site]({url}) waits behind a toggle."
# The book's live model (``:::{playground}``, book/_ext/tinyk_playground.py) runs in the site's
# pages only: a notebook links to its page instead ({url}).
PLAYGROUND = re.compile(r"^:::\{playground\}[^\n]*\n(.*?)^:::[ \t]*$", re.M | re.S)
LIVE = ("Live on the course site: [the 05.7 model in your browser]({url}) computes this for any prompt "
        "you type.")
# SmolLM2's chat (``:::{smollm2}``), on the same page.
SMOLLM2 = re.compile(r"^:::\{smollm2\}[^\n]*\n(.*?)^:::[ \t]*$", re.M | re.S)
LIVE_SMOLLM2 = "Live on the course site: [SmolLM2 in your browser]({url}) answers a message you type."


def admonition_title(kind: str) -> str:
    """The English title of an admonition of ``kind`` (``"warning"``: ``"Warning"``), as the
    site shows it; the Chinese site shows Sphinx's own Chinese word."""
    return kind.capitalize()


# Every English text the student versions add, each a message of the interface's catalogue:
# the solution link, the admonitions' titles, the setup cell's words and a quiz's (its verdicts
# are the site's words too).
STUDENT_WORDS = (STUCK, LIVE, LIVE_SMOLLM2, *(admonition_title(kind) for kind in ADMONITIONS), *SETUP_WORDS,
                 SHOW_ANSWERS, *VERDICTS.values())


def heading_anchor(heading: str) -> str:
    """The id Sphinx gives a section titled ``heading``: docutils' ``make_id`` of its visible
    text (the Markdown's code, emphasis and maths marks dropped)."""
    from docutils.nodes import make_id

    return make_id(re.sub(r"[`*$\\]", "", heading))


def term_id(term: str) -> str:
    """The id Sphinx gives the glossary entry ``term`` (``sphinx.util.nodes.make_id``, as
    Sphinx's glossary calls it)."""
    from docutils.utils import new_document
    from sphinx.util.nodes import make_id

    if not re.search(r"[A-Za-z]", term):
        raise ValueError(f"glossary term {term!r} has no Latin letter: Sphinx would number its id")
    return make_id(None, new_document("<glossary>"), "term", term)


def citation_labels(root: Path) -> dict[str, str]:
    """``key -> "Zhang and Sennrich, 2019"`` for each entry of ``book/references.bib`` (a year
    may carry a letter, ``2023a``, as two papers of one first author and year do)."""
    labels = {}
    bib = (root / "book" / "references.bib").read_text(encoding="utf-8")
    for key, body in re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, re.M | re.S):
        authors = re.search(r"author\s*=\s*\{(.*)\},?\s*$", body, re.M).group(1).split(" and ")
        last = [a.split(",")[0].strip().replace("{", "").replace("}", "") for a in authors]
        names = " and ".join(last) if len(last) <= 2 else f"{last[0]} et al."
        year = re.search(r"year\s*=\s*\{(\d+[a-z]?)\}", body).group(1)  # 2023a: a year's second paper
        labels[key] = f"{names}, {year}"
    return labels


def markdown_for_notebooks(text: str, site: str, citations: dict[str, str],
                           words: Callable[[str], str] | None = None) -> str:
    """A source's Markdown as Jupyter and Colab show it, which know no MyST: a glossary
    term becomes a link to its entry on the site, a citation a link to the references
    page, an admonition (```` ```{warning} ````) a quoted paragraph with its title, a
    dropdown (a hint, ``:::{dropdown} Title``) a collapsed ``<details>`` block, a quiz
    (``:::{quiz}``, :mod:`tinyk.courseware.quiz`) numbered choices with their explanations in another, and
    the live model (``:::{playground}``) a link to its page on the site (:data:`LIVE`), and
    SmolLM2's chat (``:::{smollm2}``) a link to the same page (:data:`LIVE_SMOLLM2`).

    ``words(english)``: an admonition's title or a quiz's verdict in the notebook's language
    (by default, the English as it is)."""
    glossary, references = f"{site}book/glossary.html", f"{site}book/references.html"
    words = words or str  # str(english) is the English

    def term(m: re.Match) -> str:
        shown, target = m.group(1), m.group(2) or m.group(1)
        return f"[{shown}]({glossary}#{term_id(target)})"

    def cite(m: re.Match) -> str:
        keys = [k.strip() for k in m.group(1).split(",")]
        unknown = [k for k in keys if k not in citations]
        if unknown:
            raise ValueError(f"citation {unknown[0]!r} is not in book/references.bib")
        return "; ".join(f"[{citations[k]}]({references})" for k in keys)

    def admonition(m: re.Match) -> str:
        body = m.group(2).rstrip("\n").splitlines()
        title = words(admonition_title(m.group(1)))
        return "\n".join([f"> **{title}**", ">"] + [f"> {ln}".rstrip() for ln in body])

    def dropdown(m: re.Match) -> str:
        title, body = m.group(1).strip(), m.group(2).strip("\n")
        return f"<details>\n<summary>{title}</summary>\n\n{body}\n\n</details>"

    text = QUIZ_DIRECTIVE.sub(lambda m: quiz_markdown(m.group(1), words), text)
    text = PLAYGROUND.sub(lambda m: words(LIVE).format(url=f"{site}book/playground.html"), text)
    text = SMOLLM2.sub(lambda m: words(LIVE_SMOLLM2).format(url=f"{site}book/playground.html"), text)
    text = _DROPDOWN.sub(dropdown, text)
    return _ADMONITION.sub(admonition, CITE.sub(cite, TERM.sub(term, text)))
