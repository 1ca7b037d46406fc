"""The Chinese site's downloads of its Markdown pages (the book's *For instructors* page,
*Chinese edition*): each page's source in Chinese, as the Chinese student notebooks are the
downloads of its chapter pages.

A page's MyST source gets each block that Sphinx's gettext builder makes a message of
replaced by its translation in the page's catalogue, ``locale/zh_CN/LC_MESSAGES/<page>.po``:
paragraphs, headings, list items and directives' bodies as in the Chinese student notebooks
(:func:`tinyk.courseware.chinese_notebooks.translate_markdown`), and besides those each cell of a table
and each term and definition of a glossary. Maths blocks stay as they are; a code fence gets
what a reader reads in it (a shell block's comments, a drawing) from ``locale/zh_CN/blocks.po``,
as the Chinese page shows it (:func:`tinyk.translations.pages.block_texts`). A block without a
translation is named, never English left silently.
"""

from __future__ import annotations

from pathlib import Path

from tinyk.courseware.chinese_notebooks import load_messages, translate_markdown
from tinyk.courseware.myst import myst_parser

__all__ = ["page_catalogue", "translate_page_source", "translated_page"]


def page_catalogue(root: Path, docname: str) -> Path:
    """The catalogue of the book page ``docname``: ``locale/zh_CN/LC_MESSAGES/book/intro.po``
    for ``book/intro``."""
    from tinyk.courseware.catalogues import LANGUAGE

    return root / "locale" / LANGUAGE / "LC_MESSAGES" / f"{docname}.po"


def _key(text: str) -> str:
    return " ".join(text.split())


def _translated(text: str, messages: dict[str, str], missing: list[str], where: str) -> str:
    found = messages.get(_key(text))
    if found is None:
        missing.append(f"{where}: {_key(text)[:70]!r}")
        return text
    return found


def _table(lines: list[str], first: int, cells: list, messages: dict[str, str], missing: list[str],
           where: str) -> list[str]:
    """A table's lines (from line ``first`` of the page) with each cell (an inline token)
    translated where it stands in its row."""
    out = list(lines)
    by_row: dict[int, list] = {}
    for cell in cells:
        by_row.setdefault(cell.map[0] - first, []).append(cell)
    for row, row_cells in by_row.items():
        line, new, column = out[row], [], 0
        for cell in row_cells:
            at = line.find(cell.content, column) if cell.content else -1
            if at < 0:
                raise ValueError(f"{where}: cannot find the table cell {cell.content!r} in its row {line!r}")
            text = _translated(cell.content, messages, missing, where).replace("|", "\\|")
            new += [line[column:at], text]
            column = at + len(cell.content)
        out[row] = "".join(new) + line[column:]
    return out


def _glossary(lines: list[str], messages: dict[str, str], missing: list[str], where: str) -> list[str]:
    """A ``{glossary}`` fence's lines: each term (a line of its own, not indented) and each
    paragraph of a definition (indented lines) translated; the fence's lines stay (a fence
    left open at the end of the page has no closing line)."""
    out = [lines[0]]
    closed = len(lines) >= 2 and lines[-1].strip().startswith(("```", ":::"))
    body, closing = (lines[1:-1], lines[-1:]) if closed else (lines[1:], [])
    i = 0
    while i < len(body):
        line = body[i]
        if not line.strip():
            out.append(line)
            i += 1
        elif not line[0].isspace():
            out.append(_translated(line.strip(), messages, missing, where))
            i += 1
        else:
            indent = line[: len(line) - len(line.lstrip())]
            j = i
            while j < len(body) and body[j].strip() and body[j][0].isspace():
                j += 1
            out.append(indent + _translated(" ".join(body[i:j]), messages, missing, where))
            i = j
    return out + closing


def _fence(lines: list[str], token, blocks: dict[str, str], missing: list[str], where: str) -> list[str]:
    """A code fence's lines (its opening and closing lines kept) with its words translated."""
    from tinyk.translations.pages import translate_block

    language = token.info.split()[0] if token.info.strip() else None
    chinese, lacking = translate_block(language, token.content, blocks)
    missing += [f"{where}: {english[:70]!r}" for english in lacking]
    body = chinese.removesuffix("\n").split("\n")
    return [lines[0], *body, *lines[1 + token.content.count("\n"):]]  # then the closing fence


def translate_page_source(text: str, messages: dict[str, str], missing: list[str], where: str = "",
                          blocks: dict[str, str] | None = None) -> str:
    """``text``, a book page's MyST, with every block that is a message of its catalogue
    (``messages``: :func:`tinyk.courseware.chinese_notebooks.load_messages`) replaced by its translation,
    and the words of its code fences by theirs in ``blocks`` (``blocks.po``'s, when given);
    the blocks without one are appended to ``missing`` and left as they are."""
    lines = text.split("\n")
    tokens = myst_parser().parse(text)
    regions: list[tuple[int, int, list[str]]] = []  # (first line, end line, new lines)
    for i, token in enumerate(tokens):
        if token.level != 0 or not token.map:
            continue
        start, end = token.map
        if token.type == "table_open":
            close = next(j for j in range(i, len(tokens)) if tokens[j].type == "table_close")
            cells = [t for t in tokens[i:close] if t.type == "inline"]
            regions.append((start, end, _table(lines[start:end], start, cells, messages, missing, where)))
        elif token.type in ("fence", "colon_fence") and token.info.strip().startswith("{glossary}"):
            regions.append((start, end, _glossary(lines[start:end], messages, missing, where)))
        elif token.type == "fence" and blocks is not None and not token.info.strip().startswith("{"):
            regions.append((start, end, _fence(lines[start:end], token, blocks, missing, where)))
    out: list[str] = []
    position = 0
    for start, end, new in regions:
        if start > position:
            out += translate_markdown("\n".join(lines[position:start]), messages, missing, where).split("\n")
        out += new
        position = end
    if position < len(lines):
        out += translate_markdown("\n".join(lines[position:]), messages, missing, where).split("\n")
    return "\n".join(out)


def translated_page(root: Path, docname: str, source: Path) -> tuple[str, list[str]]:
    """The Chinese source of the book page ``docname`` (its MyST file ``source``), and the
    blocks it leaves in English for want of a translation."""
    missing: list[str] = []
    from tinyk.courseware.catalogues import blocks_catalogue, translated

    text = translate_page_source(source.read_text(encoding="utf-8"),
                                 load_messages(page_catalogue(root, docname)), missing, docname,
                                 translated(blocks_catalogue(root)))
    return text, missing
