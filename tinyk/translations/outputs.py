"""What the chapter notebooks print, in Chinese on the Chinese pages (the book's *For
instructors* page; :mod:`tinyk.translations`).

The Chinese build renders the outputs of the same execution as the English one (the book's
execution cache): nothing runs again. Each text a page shows, a stream (``print``'s
stdout, stderr) or a ``text/plain`` result that is its output's only form, is translated
line by line from the catalogue ``locale/zh_CN/outputs.po``, with the numbers taken out of
the message as figures' are (:func:`tinyk.courseware.figure_text.message_key`): ``"first loss 2.604,
mean of the last 50 steps 0.666"`` is looked up as ``"first loss {0}, mean of the last {1}
steps {2}"`` and its Chinese gets the numbers back, in the places Chinese word order gives
them. A line is one message; a printed table's columns are then spaced again by display width
after the English lines' (:mod:`tinyk.translations.tables`).

Which lines are translated (:func:`has_words`): a line that still has a word of two Latin
letters or more once what is data or code is taken out of it:

- quoted strings (``'4+3\\n'``, a generated text, a token) and ``<...>`` (a repr, a special
  token such as ``<|im_end|>``);
- code names: a name with ``_`` or ``.`` in it (``repeat_kv``, ``torch.float64``), a name
  followed by ``=``, ``(`` or ``[`` (``dtype=``, ``tensor(``), a CamelCase or all-capitals
  name (``RMSNorm``, ``DecoderLayer``, ``GQA``);
- Python's and JSON's literals (``True``, ``False``, ``None``, ``nan``, ``inf``, ``true``,
  ``false``, ``null``) and numbers.

Every other line (numbers, shapes, tensors, dicts, a JSON report, the sums a model wrote)
stays as printed. An error shows its traceback as printed but its message (``evalue``, the
words after ``ValueError:``) translated in the same way; a message Python or PyTorch wrote
(``unexpected indent``) is what the reader's own run prints, and its catalogue entry keeps it
(``kept:``). A progress bar (``training:  42%|████ | 253/600 [...]``) has its description
translated, its colon full-width, and the rest kept. A line with words that is code or data
after all (a module listing's ``dropout  Dropout`` row, a chat template's text) is translated
as itself, and its catalogue entry says why in a translator comment that starts with
``kept:`` (``check`` fails on a message translated as itself without one).

The kernel sends a stream in pieces whose borders fall where its buffer happened to be flushed,
so one ``print`` may arrive as two outputs on one run and as one on the next: both editions
render each run of consecutive outputs of one stream joined, as the stream was written
(:func:`merged_streams`), and the lines are translated after the join.

A line the catalogue lacks stays English and is a warning of the Chinese build that names it
(the build runs with ``-W``); ``python -m tinyk.translations update`` adds the lines of the
executed notebooks in the execution cache (:func:`output_messages`) to the catalogue,
untranslated, and ``check`` fails on each untranslated, fuzzy or damaged one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tinyk.courseware.catalogues import outputs_catalogue, read_catalogue
from tinyk.courseware.checkout import course_root, notebook_paths
from tinyk.courseware.figure_text import fill, message_key, needs_words
from tinyk.translations.source_figures import is_source_figure, translate_source_figure
from tinyk.translations.tables import align

__all__ = ["KEPT", "has_words", "install", "merged_streams", "output_messages", "printed_texts",
           "translate_line", "translate_text", "translated_outputs", "update_outputs"]

KEPT = "kept:"  # a translator comment that starts so explains a message translated as itself
_DATA = re.compile(r"""(?<![A-Za-z])'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|<[^<>\n]*>""")
_CODE = re.compile(r"\w+(?:[._]\w+)+|\w+(?=[=(\[])|\b[A-Za-z]*[a-z][A-Z]\w*|\b[A-Z]{2,}\w*")
_LITERAL = re.compile(r"\b(?:True|False|None|nan|inf|true|false|null)\b")
_PROGRESS = re.compile(r"^(\s*)([^:|]*[A-Za-z][^:|]*)(:\s*\d+%\|.*)$")  # tqdm: "desc:  42%|...| n/N [...]"
_BREAK = re.compile(r"(\r\n|\r|\n)")
_REMOVED = {"remove-cell", "remove_cell", "remove-output", "remove_output"}


def has_words(line: str) -> bool:
    """Whether a printed ``line`` is translated: it has words once quoted strings, reprs, code
    names, literals and numbers are out (the rule of this module's docstring)."""
    return needs_words(_LITERAL.sub(" ", _CODE.sub(" ", _DATA.sub(" ", line))))


def translate_line(line: str, catalogue: Mapping[str, str]) -> tuple[str, str | None]:
    """(``line`` in Chinese, None), or (``line`` as it is, its message) when ``catalogue``
    (message -> translation) lacks it; a line without words comes back as it is."""
    bar = _PROGRESS.match(line)
    if bar:  # a translated description ends in a full-width colon, which carries its own space
        words, missing = translate_line(bar[2], catalogue)
        rest = bar[3] if words == bar[2] else "\uff1a" + bar[3][1:].lstrip()
        return bar[1] + words + rest, missing
    if not has_words(line):
        return line, None
    key, numbers = message_key(line)
    chinese = catalogue.get(key)
    return (line, key) if chinese is None else (fill(chinese, numbers), None)


def translate_text(text: str, catalogue: Mapping[str, str]) -> tuple[str, list[str]]:
    """(``text`` translated line by line, its line breaks kept as they are and its tables'
    columns lined up again by display width (:func:`tinyk.translations.tables.align`); the
    messages ``catalogue`` lacks, in order)."""
    parts, missing = _BREAK.split(text), []
    english = parts[0::2]
    for n in range(0, len(parts), 2):  # odd places hold the line breaks
        parts[n], lacking = translate_line(parts[n], catalogue)
        if lacking is not None:
            missing.append(lacking)
    parts[0::2] = align(english, parts[0::2])
    return "".join(parts), missing


def printed_texts(cell: Mapping[str, Any]) -> Iterator[tuple[int, str]]:
    """(output index, field) of each text the page shows of a notebook ``cell``: a stream's
    ``"text"``, or a result's ``"text/plain"`` when that is its only form (a figure's
    ``<Figure ...>`` is not shown); none for a cell or output a tag removes."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    if cell.get("cell_type") != "code" or tags & _REMOVED:
        return
    for n, output in enumerate(cell.get("outputs", [])):
        kind = output.get("output_type")
        if kind == "stream" and f"remove-{output.get('name')}" not in tags:
            yield n, "text"
        elif kind in ("execute_result", "display_data") and set(output.get("data", {})) == {"text/plain"}:
            yield n, "text/plain"


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def merged_streams(outputs: list[Any]) -> list[Any]:
    """A copy of ``outputs`` with each run of consecutive outputs of one stream (stdout,
    stderr) joined into one, its text exactly as written: where the kernel cut a stream in
    pieces varies from run to run (the module's docstring)."""
    merged: list[Any] = []
    for output in copy.deepcopy(list(outputs)):
        last = merged[-1] if merged else {}
        same_stream = output.get("name") == last.get("name")
        if output.get("output_type") == "stream" == last.get("output_type") and same_stream:
            last["text"] = _text(last["text"]) + _text(output["text"])
        else:
            merged.append(output)
    return merged


def _translate_error(output: dict[str, Any], catalogue: Mapping[str, str]) -> list[str]:
    """Translate, in place, an error output's message and the traceback's last entry that
    prints it; returns the messages ``catalogue`` lacks."""
    english = output.get("evalue", "")
    chinese, missing = translate_text(english, catalogue)
    traceback = output.get("traceback") or []
    if chinese != english and traceback and english in traceback[-1]:
        before, _, after = traceback[-1].rpartition(english)
        output["evalue"], traceback[-1] = chinese, before + chinese + after
    return missing


def translated_outputs(cell: Mapping[str, Any], catalogue: Mapping[str, str]) -> tuple[list[Any], list[str]]:
    """(``cell``'s outputs, streams merged (:func:`merged_streams`), with their printed texts,
    errors' messages and the package code's figures (:mod:`tinyk.translations.source_figures`)
    in Chinese; the messages ``catalogue`` lacks)."""
    outputs = merged_streams(cell.get("outputs", []))
    merged, missing = {**cell, "outputs": outputs}, []
    for n, field in printed_texts(merged):
        holder = outputs[n] if field == "text" else outputs[n]["data"]
        holder[field], lacking = translate_text(_text(holder[field]), catalogue)
        missing += lacking
    if not _REMOVED & set(cell.get("metadata", {}).get("tags", [])):
        for output in outputs:
            if output.get("output_type") == "error":
                missing += _translate_error(output, catalogue)
            elif "data" in output and is_source_figure(output["data"]):
                missing += translate_source_figure(output["data"], catalogue)
    return outputs, missing


def install(catalogue: Mapping[str, str] | None) -> None:
    """Make myst-nb's notebook client hand the renderer each code cell's outputs with their
    streams merged (:func:`merged_streams`, both editions) and, with a ``catalogue`` (the
    Chinese build), translated, each missing message a warning naming it."""
    from myst_nb.core.execute.base import NotebookClientBase

    original = getattr(NotebookClientBase.code_cell_outputs, "tinyk_original",
                       NotebookClientBase.code_cell_outputs)

    def code_cell_outputs(self, cell_index: int) -> tuple[int | None, list[Any]]:
        count, _ = original(self, cell_index)
        cell = self.notebook["cells"][cell_index]
        if catalogue is None:
            return count, merged_streams(cell.get("outputs", []))
        outputs, missing = translated_outputs(cell, catalogue)
        for message in dict.fromkeys(missing):
            self.logger.warning(f"cell {cell_index}: printed output without a Chinese translation: "
                                f"{message!r} (`make translations` adds it to locale/zh_CN/outputs.po)",
                                subtype="output_text")
        return count, outputs

    code_cell_outputs.tinyk_original = original
    NotebookClientBase.code_cell_outputs = code_cell_outputs


def _executed_notebooks(root: Path) -> dict[str, Any]:
    """stem -> the newest executed page view of each chapter notebook in the book's
    execution cache (``_build/.jupyter_cache``; none when there is no cache)."""
    cache_dir = root / "_build" / ".jupyter_cache"
    if not cache_dir.is_dir():
        return {}
    from jupyter_cache import get_cache

    stems = {path.stem for path in notebook_paths(root)}
    cache = get_cache(str(cache_dir))
    newest = {}
    for record in sorted(cache.list_cache_records(), key=lambda r: r.created):
        if Path(record.uri).stem in stems:
            newest[Path(record.uri).stem] = record.pk
    return {stem: cache.get_cache_bundle(pk).nb for stem, pk in sorted(newest.items())}


def output_messages(root: Path | None = None) -> dict[str, list[str]]:
    """message -> the notebooks that print it: every line with words that a chapter page
    shows, from the newest execution of each notebook in the book's execution cache."""
    found: dict[str, list[str]] = {}
    for stem, nb in _executed_notebooks(course_root(root)).items():
        for cell in nb.cells:
            for message in translated_outputs(cell, {})[1]:
                found.setdefault(message, [])
                if stem not in found[message]:
                    found[message].append(stem)
    return found


def update_outputs(root: Path | None = None) -> tuple[int, int]:
    """Add the printed lines :func:`output_messages` finds to ``outputs.po``, untranslated,
    each with the notebooks that print it as a comment, and remove the lines no page prints
    any more (only when the cache holds a run of every chapter notebook: a partial cache does
    not show what the others print); returns (added, removed)."""
    from babel.messages.pofile import write_po

    root = course_root(root)
    path = outputs_catalogue(root)
    catalogue = read_catalogue(path)
    found = output_messages(root)
    new = sorted(m for m in found if m not in catalogue)
    for message in new:
        catalogue.add(message, auto_comments=[", ".join(found[message])])
    complete = {p.stem for p in notebook_paths(root)} <= set(_executed_notebooks(root))
    gone = [m.id for m in catalogue if complete and m.id and m.id not in found]
    for message in gone:
        catalogue.delete(message)
    if new or gone:
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, omit_header=False)
    return len(new), len(gone)
