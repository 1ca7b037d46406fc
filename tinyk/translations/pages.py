"""What the Chinese edition changes in a page once Sphinx has read it (the book's *For
instructors* page): the words of its code cells and the order of its glossary. Called by
the book's extension (``book/_ext/tinyk_book.py``, ``doctree-read``) in the Chinese build only.

- **Code cells**: a chapter page shows the book view of its notebook
  (:func:`tinyk.courseware.exercises.book_version`: solutions included). In the Chinese edition, every
  code cell shown is translated from the notebook's code catalogue,
  ``locale/zh_CN/LC_MESSAGES/code/<stem>.po``, by the function that makes the Chinese student
  notebooks (:func:`tinyk.courseware.chinese_notebooks.translate_code`): its comments, docstrings and
  messages (what a ``print`` writes, a visible test's and an error's message, their labels),
  so a cell reads on the Chinese page as it does in the Chinese notebook that Colab opens;
  the words its figures, sliders and calculators draw are then given in Chinese from the
  figures' catalogue, as the figures below it show them
  (:func:`tinyk.courseware.chinese_notebooks.translate_figure_words`).
  Only the source shown changes, after the page is parsed: the notebook myst-nb hashes and
  looks up in its execution cache is the English one, so the Chinese build reuses the
  English execution's outputs, whose printed lines are translated from ``outputs.po``
  (:mod:`tinyk.translations.outputs`), and executes nothing. ``python -m tinyk.translations
  update`` adds the shown texts that no student notebook has (a solution's) to the
  catalogue (:func:`shown_code`). A hint's pseudocode block (a literal block with no
  language in a dropdown) is translated whole from the same catalogue
  (:func:`translate_pseudocode_blocks`).
- **Literal blocks of the book's Markdown pages** (the *For instructors* page's commands): the
  comment of each line of a shell or YAML block, and a drawing (box-drawing characters) whole,
  from ``locale/zh_CN/blocks.po`` (:func:`block_texts`, :func:`translate_blocks`); a command's
  printed output stays as the program prints it.
- **Glossary**: each headword reads Chinese first (its translation,
  :func:`tinyk.courseware.catalogues.chinese_headword`), and the entries are sorted by their
  pinyin (:func:`tinyk.courseware.catalogues.pinyin_key`, from the ``pypinyin`` package), as a
  Chinese dictionary is. The entries' anchors stay the English headwords' ids, so every
  ``{term}`` reference of both editions lands on its entry.
"""

from __future__ import annotations

import re
from pathlib import Path

from tinyk.courseware.catalogues import blocks_catalogue, pinyin_key, translated
from tinyk.courseware.chinese_notebooks import (
    KINDS,
    code_catalogue_path,
    load_messages,
    translate_code,
    translate_figure_words,
)
from tinyk.courseware.exercises import book_version, source_text

__all__ = ["SHOWN_KINDS", "block_texts", "book_block_texts", "shown_code", "sort_glossaries",
           "translate_block", "translate_blocks", "translate_code_cells", "translate_page",
           "translate_pseudocode_blocks"]

SHOWN_KINDS = KINDS  # what the Chinese pages translate in the code shown: all of it, as the notebooks do
# A fence's language on the page when it has none (myst-parser gives it the highlight language)
# or says ``text``: a hint's pseudocode (tinyk.courseware.chinese_notebooks.pseudocode_blocks).
_NO_LANGUAGE = (None, "", "text", "none", "default", "ipython3", "python3")
_HIDDEN = {"remove-cell", "remove_cell", "remove-input", "remove_input"}  # cells whose code is not shown


# A book page's literal blocks: the languages whose comments a reader reads, a comment (``#`` and a
# space after the start of the line or a space: not ``#!/bin/bash`` or ``#SBATCH``, which are
# code) that holds words, and a drawing's characters (U+2500-U+257F, box drawing).
_COMMENTED = ("bash", "sh", "shell", "console", "yaml")
_COMMENT = re.compile(r"(?:^|(?<=\s))# (?=.*[A-Za-z]{2})(?P<text>.*?)\s*$")
_DRAWING = re.compile("[\u2500-\u257f]")


def block_texts(language: str | None, text: str) -> list[str]:
    """What a reader reads in a literal block of a book page, each a message of
    ``blocks.po``: a drawing whole, or the comments of a shell or YAML block (none for
    another block: a command's output, code)."""
    if _DRAWING.search(text):
        return [text.strip("\n")]
    if language not in _COMMENTED:
        return []
    return [m["text"] for line in text.split("\n") if (m := _COMMENT.search(line))]


def book_block_texts(root: Path) -> dict[str, str]:
    """``message -> page``: :func:`block_texts` of every fenced block of the book's Markdown
    pages (``book/*.md``), as the book's parser reads them."""
    from tinyk.courseware.myst import myst_parser

    found: dict[str, str] = {}
    for page in sorted((root / "book").glob("*.md")):
        for token in myst_parser().parse(page.read_text(encoding="utf-8")):
            if token.type == "fence":
                for text in block_texts(token.info.split()[0] if token.info.strip() else None, token.content):
                    found.setdefault(text, page.relative_to(root).as_posix())
    return found


def translate_block(language: str | None, text: str, messages: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with what :func:`block_texts` finds in it translated from ``messages``, and
    the texts without a translation."""
    if _DRAWING.search(text):
        english = text.strip("\n")
        chinese = messages.get(english)
        if chinese is None:
            return text, [english]
        return text.replace(english, chinese), []
    missing: list[str] = []

    def comment(match: re.Match[str]) -> str:
        chinese = messages.get(match["text"])
        if chinese is None:
            missing.append(match["text"])
        return f"# {chinese or match['text']}"

    lines = [_COMMENT.sub(comment, line) if language in _COMMENTED else line for line in text.split("\n")]
    return "\n".join(lines), missing


def translate_blocks(doctree, root: Path, where: str) -> tuple[Path, list[str]]:
    """Translate, in place, the literal blocks of a book page's ``doctree`` (a Markdown page's)
    from ``blocks.po``: returns the catalogue read and the texts it lacks, each naming ``where``."""
    from docutils import nodes

    catalogue = blocks_catalogue(root)
    messages = translated(catalogue)
    missing: list[str] = []
    for block in list(doctree.findall(nodes.literal_block)):
        text = block.astext()
        chinese, lacking = translate_block(block.get("language"), text, messages)
        missing += [f"{where}: {english[:70]!r}" for english in lacking]
        if chinese != text:
            block[:] = [nodes.Text(chinese)]
            block.rawsource = chinese
    return catalogue, missing


def shown_code(nb: dict) -> list[tuple[int, str]]:
    """``(index, source)`` of each code cell a chapter page shows for the source notebook
    ``nb``: its book view's code cells but those tagged to remove their code."""
    return [(i, source_text(cell)) for i, cell in enumerate(book_version(nb)["cells"])
            if cell["cell_type"] == "code" and not _HIDDEN & set(cell.get("metadata", {}).get("tags", []))]


def translate_code_cells(doctree, messages: dict[str, str], where: str) -> list[str]:
    """Translate, in place, the comments, docstrings and messages of every code cell source in
    a page's ``doctree`` (myst-nb's ``cell_code_source`` containers) from ``messages``; returns
    the texts without a translation, each naming ``where`` and its cell."""
    from docutils import nodes

    missing: list[str] = []
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        for block in cell.findall(nodes.literal_block):
            if block.parent.get("nb_element") != "cell_code_source":
                continue
            here = f"{where}: cell {cell.get('cell_index')}"
            try:
                text = translate_code(block.astext(), messages, missing, here, kinds=SHOWN_KINDS)
                text = translate_figure_words(text, missing, here)
            except SyntaxError as error:
                missing.append(f"{here}: not read as Python ({error.msg}), its comments are not translated")
                continue
            block[:] = [nodes.Text(text)]
            block.rawsource = text  # as myst-nb made it: equal to its text, so it is highlighted
    return missing


def _in_dropdown(node) -> bool:
    """Whether ``node`` sits in a dropdown (sphinx-design's, as it is when the page is read)."""
    while node is not None:
        if node.get("design_component") == "dropdown" or type(node).__name__ == "dropdown_main":
            return True
        node = node.parent
    return False


def translate_pseudocode_blocks(doctree, messages: dict[str, str], where: str) -> list[str]:
    """Translate, in place, every hint's pseudocode block in a page's ``doctree`` (a literal
    block in a dropdown, outside the code cells) from ``messages``
    (:func:`tinyk.courseware.chinese_notebooks.pseudocode_blocks`); returns those without a translation."""
    from docutils import nodes

    missing: list[str] = []
    for block in list(doctree.findall(nodes.literal_block)):
        parent, in_cell = block.parent, False
        while parent is not None and not in_cell:
            in_cell, parent = parent.get("nb_element", "").startswith("cell_code"), parent.parent
        if in_cell or not _in_dropdown(block) or block.get("language") not in _NO_LANGUAGE:
            continue
        text = block.astext()
        english = text.rstrip("\n")
        chinese = messages.get(english)
        if chinese is None:
            missing.append(f"{where}: pseudocode {english[:70]!r}")
            continue
        chinese += text[len(english):]
        block[:] = [nodes.Text(chinese)]
        block.rawsource = chinese
    return missing


def translate_page(doctree, root: Path, source: Path) -> tuple[Path, list[str]]:
    """The code cells and the hints' pseudocode of the page read from the notebook ``source``
    translated (:func:`translate_code_cells`, :func:`translate_pseudocode_blocks`): returns the
    catalogue read and the texts it lacks."""
    catalogue = code_catalogue_path(root, source.stem)
    where = source.relative_to(root).as_posix() if source.is_relative_to(root) else source.name
    messages = load_messages(catalogue, code=True)
    return catalogue, translate_code_cells(doctree, messages, where) + \
        translate_pseudocode_blocks(doctree, messages, where)


def sort_glossaries(doctree) -> int:
    """Sort the entries of every glossary in ``doctree`` by :func:`pinyin_key` of their (first)
    headword as the page now shows it; returns how many entries were sorted."""
    from docutils import nodes
    from sphinx import addnodes

    count = 0
    for glossary in doctree.findall(addnodes.glossary):
        for entries in glossary.findall(nodes.definition_list):
            items = [child for child in entries.children if isinstance(child, nodes.definition_list_item)]
            items.sort(key=lambda item: pinyin_key(next(iter(item.findall(nodes.term))).astext()))
            entries[:] = items
            count += len(items)
    return count
