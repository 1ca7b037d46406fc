"""Printed tables in the Chinese edition's outputs: their columns line up as a terminal shows
them (the book's *For instructors* page; :mod:`tinyk.translations.outputs`).

A notebook pads a table's columns for English, and each line is translated on its own: a
Chinese character takes two columns on the screen, so a translated row is wider than its
English by a different amount in each row, and the columns of the Chinese page would not line
up. :func:`align` re-spaces the translated lines of one printed text with the English lines
as the pattern:

- a line's **cells** (:func:`cells`) are the runs of text between gaps: two spaces or more,
  the spaces after an ASCII colon (``"H_kv=16: K and V"``), or after a full-width colon, if any;
  spaces before a full-width colon (U+FF1A) are no gap but the padding of the label it ends
  (a label, spaces, the colon and ``r = ...`` are two cells: the label up to its colon, and
  ``r = ...``);
- a **table** is a run of consecutive lines whose Chinese and English have as many cells,
  two or more, and whose English all have a gap after a colon, or none has (a title above
  the columns of numbers, ``(rows: d; columns: multiple_of)``, is no row of theirs); cells
  of different lines that start at one place in the English form a left-aligned column,
  numbers that end at one place (padded on the left) a right-aligned one;
- the Chinese lines are spaced again so that each column starts (or ends) at one display
  column (:func:`tinyk.courseware.chinese_notebooks.display_width`: a wide character counts two), after
  the narrowest gap the English has before it; a cell after a label that ends in a full-width
  colon follows the colon at once, as Chinese typesetting has it (the colon carries its own
  space), and the labels are padded before their colons instead, which line up in one column.

Lines that are not part of a table, tables where no line was translated, and tables whose
Chinese lines up already (each column of the English starts, or ends, at one display column:
the code printed it padded by display width, as :func:`tinyk.lessons.plotting.column` pads, and the
translation is what that code prints) stay as printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tinyk.courseware.chinese_notebooks import display_width

__all__ = ["align", "cells", "column_of", "columns", "runs"]

# A gap between cells: two spaces or more (but not before a full-width colon: a label's padding);
# the spaces after an ASCII colon; after a full-width colon, its spaces if any (the colon's own
# width separates it from the next cell).
_GAP = re.compile(r"(?<=\S) {2,}(?=[^\s\uff1a])|(?<=:) +(?=\S)|(?<=\uff1a) *(?=\S)")
_PADDED_LABEL = re.compile(r"(.*\S) +\uff1a")  # a label padded before its full-width colon
_NUMBER = re.compile(r"[-+−]?[\d.,]*\d(?:e[-+]?\d+)?[%×]?")  # a cell padded on the left: a number


@dataclass
class _Cell:
    start: int  # display column where the cell starts, from 0
    text: str
    gap: int  # the spaces before it on its line


def cells(line: str) -> list[_Cell]:
    """The cells of a printed ``line`` (the module's docstring), each with its display column."""
    found = []
    indent = len(line) - len(line.lstrip(" "))
    pieces = _GAP.split(line[indent:])
    gaps = [len(m[0]) for m in _GAP.finditer(line[indent:])]
    column = indent
    for n, text in enumerate(pieces):
        gap = indent if n == 0 else gaps[n - 1]
        column += 0 if n == 0 else gap
        found.append(_Cell(column, text, gap))
        column += display_width(text)
    return found


def columns(lines: list[str]) -> list[list[int]]:
    """The display column where each cell of each line starts (a measure of a table)."""
    return [[cell.start for cell in cells(line)] for line in lines]


def _colon(line: str) -> bool:
    """Whether a line has a gap after a colon (``label: value`` rows)."""
    return bool(re.search(r":(?= +\S)|\uff1a(?= *\S)", line))


def _end(cell: _Cell) -> int:
    return cell.start + display_width(cell.text)


def column_of(english: list[list[_Cell]]) -> dict[tuple[int, int], tuple[str, int]]:
    """(row, cell) -> its column, ("start", c) or ("end", c), for the cells (but each row's
    first) that start at one place in two rows or more of the English, else, for a number,
    end at one place."""
    starts: dict[int, list[tuple[int, int]]] = {}
    ends: dict[int, list[tuple[int, int]]] = {}
    for i, row in enumerate(english):
        for k, cell in enumerate(row[1:], 1):
            starts.setdefault(cell.start, []).append((i, k))
    placed = {m: ("start", c) for c, members in starts.items() if len(members) > 1 for m in members}
    for i, row in enumerate(english):
        for k, cell in enumerate(row[1:], 1):
            if (i, k) not in placed and _NUMBER.fullmatch(cell.text):
                ends.setdefault(_end(cell), []).append((i, k))
    placed.update({m: ("end", c) for c, members in ends.items() if len(members) > 1 for m in members})
    return placed


def _table(english: list[list[_Cell]], chinese: list[list[_Cell]]) -> list[str]:
    """The Chinese rows of one table spaced again after the English rows' columns."""
    placed = column_of(english)
    # a label's padding before its colon is laid anew
    chinese = [[_Cell(c.start, (m[1] + "\uff1a") if (m := _PADDED_LABEL.fullmatch(c.text)) else c.text, c.gap)
                for c in row] for row in chinese]
    out = [[" " * row[0].start + row[0].text] for row in chinese]
    width = [row[0].start + display_width(row[0].text) for row in chinese]
    next_cell = [1] * len(chinese)

    def gap(i: int, k: int) -> int:
        colon = chinese[i][k - 1].text.endswith("\uff1a")
        return (0 if colon else english[i][k].gap) if (i, k) in placed else chinese[i][k].gap

    def put(i: int, k: int, spaces: int) -> None:
        if spaces and out[i][-1].endswith("\uff1a") and (i, k) in placed:  # pad before the colon
            out[i][-1] = out[i][-1][:-1] + " " * spaces + "\uff1a"
            spaces, width[i] = 0, width[i] + spaces
        out[i].append(" " * spaces + chinese[i][k].text)
        width[i] += spaces + display_width(chinese[i][k].text)
        next_cell[i] = k + 1

    def free_cells(i: int) -> None:  # row i's cells in no column, up to its next column's
        while next_cell[i] < len(chinese[i]) and (i, next_cell[i]) not in placed:
            put(i, next_cell[i], gap(i, next_cell[i]))

    for key in sorted(set(placed.values()), key=lambda key: key[1]):
        members = [m for m, where in placed.items() if where == key]
        for i, _ in members:
            free_cells(i)
        if any(next_cell[i] != k for i, k in members):  # columns that cross: keep the gaps as printed
            return ["".join(" " * cell.gap + cell.text for cell in row) for row in chinese]
        need = min(gap(i, k) for i, k in members)
        ending = key[0] == "end"
        own = {(i, k): display_width(chinese[i][k].text) if ending else 0 for i, k in members}
        target = max(width[i] + need + own[i, k] for i, k in members)
        for i, k in members:
            put(i, k, target - own[i, k] - width[i])
    for i in range(len(chinese)):
        free_cells(i)
    return ["".join(row) for row in out]


def _lined_up(english: list[list[_Cell]], chinese: list[list[_Cell]]) -> bool:
    """Whether each column of the English rows starts (or ends) at one display column in the
    Chinese rows too."""
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for member, key in column_of(english).items():
        groups.setdefault(key, []).append(member)
    return all(len({chinese[i][k].start + (display_width(chinese[i][k].text) if key[0] == "end" else 0)
                    for i, k in members}) == 1 for key, members in groups.items())


def runs(english: list[str], chinese: list[str]) -> list[tuple[int, int]]:
    """(first, end) of each table of one printed text, ``english`` and ``chinese`` its lines
    (the module's docstring): consecutive lines with as many cells, two or more, in both
    languages, and all with a gap after a colon or none."""
    en_cells, zh_cells = [cells(line) for line in english], [cells(line) for line in chinese]
    in_table = [len(e) >= 2 and len(e) == len(z) for e, z in zip(en_cells, zh_cells, strict=True)]
    found, n = [], 0
    while n < len(english):
        end = n
        while end < len(english) and in_table[end] and _colon(english[end]) == _colon(english[n]):
            end += 1
        if end - n >= 2:
            found.append((n, end))
        n = max(end, n + 1)
    return found


def align(english: list[str], chinese: list[str]) -> list[str]:
    """``chinese`` (the lines of one printed text, each the translation of the English line at
    its place) with each table spaced again after the English (the module's docstring)."""
    if len(english) != len(chinese):
        return chinese
    out = list(chinese)
    en_cells, zh_cells = [cells(line) for line in english], [cells(line) for line in chinese]
    for n, end in runs(english, chinese):
        if any(english[i] != chinese[i] for i in range(n, end)) and \
                not _lined_up(en_cells[n:end], zh_cells[n:end]):
            out[n:end] = _table(en_cells[n:end], zh_cells[n:end])
    return out
