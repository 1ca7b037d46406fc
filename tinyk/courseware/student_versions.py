"""The student notebooks (the book's *For instructors* page): what every Colab link opens.

Two folders of notebooks:

- ``notebooks/``: the sources, with solutions and hidden tests; the book builds from them
  and instructors release and grade from them;
- ``student/``: what students open (every Colab link points there), made from the sources
  by nbgrader's own release preprocessors: answers replaced by stubs, hidden tests and
  markers removed, no outputs; each exercise links to its solution on the site, and the
  MyST that Jupyter cannot show (glossary terms, citations, admonitions) is plain Markdown
  with links to the site's glossary and references (:mod:`tinyk.courseware.student_markdown`);
- ``student/zh/``: the same student versions in Chinese, which the Chinese site's Colab
  buttons open: prose from the pages' catalogues, comments, docstrings and test messages from
  the code catalogues, code unchanged (:mod:`tinyk.courseware.chinese_notebooks`), the words the student
  versions add from the interface's catalogue; links go to the Chinese site. A message
  without a translation makes ``check`` fail and names it.

``python -m tinyk.courseware.course students`` writes them (:func:`students`), ``python -m
tinyk.courseware.course
check`` lists a stale one (:func:`stale_students`).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyk.courseware.addresses import SETUP_TITLE, repository_url, setup_cell_source, site_url
from tinyk.courseware.catalogues import LANGUAGE, interface_catalogue, translated
from tinyk.courseware.checkout import (
    NOTEBOOKS,
    REGENERATE,
    STUDENTS,
    ZH,
    course_root,
    notebook_paths,
    student_path,
)
from tinyk.courseware.exercises import FORM_TITLE, is_solution, source_text
from tinyk.courseware.student_markdown import (
    EXERCISE_HEADING,
    STUCK,
    citation_labels,
    heading_anchor,
    markdown_for_notebooks,
)

__all__ = ["chinese_student_notebooks", "for_students", "released", "stale_students", "student_notebooks",
           "students"]


def for_students(nb: dict, page_url: str, site: str, citations: dict[str, str],
                 words: Callable[[str], str] | None = None,
                 translate: Callable[[str, int], str] | None = None) -> dict:
    """The source made ready for nbgrader's release: answer cells shown in Colab (no form
    title over the stub), each exercise's prompt linking to its solution on the site, and
    MyST roles and admonitions written as plain Markdown (:func:`markdown_for_notebooks`).

    ``words(english)``: a text the student version adds
    (:data:`tinyk.courseware.student_markdown.STUDENT_WORDS`)
    in the notebook's language; ``translate(text, cell_index)``: each Markdown cell's MyST in
    that language, before it is made plain. The solution links keep the English headings'
    anchors, which the Chinese pages keep too (Sphinx gives a translated section its original id)."""
    nb, words = copy.deepcopy(nb), words or str
    headings = {i: EXERCISE_HEADING.findall(source_text(c)) for i, c in enumerate(nb["cells"])
                if c["cell_type"] == "markdown"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            text = source_text(cell)
            plain = markdown_for_notebooks(translate(text, i) if translate else text, site, citations, words)
            if plain != text:
                cell["source"] = plain.splitlines(keepends=True)
    for i, cell in enumerate(nb["cells"]):
        if not is_solution(cell):
            continue
        lines = [ln for ln in source_text(cell).splitlines() if not FORM_TITLE.match(ln)]
        cell["source"] = "\n".join(lines).strip("\n").splitlines(keepends=True)
        cell.get("metadata", {}).pop("cellView", None)
        at = next((j for j in range(i - 1, -1, -1) if headings.get(j)), None)
        if at is None:
            continue
        prompt, anchor = nb["cells"][at], heading_anchor(headings[at][-1])
        text = source_text(prompt).rstrip("\n")
        if f"{page_url}#{anchor}" in text:  # a second answer cell of the same exercise
            continue
        stuck = words(STUCK).format(url=f"{page_url}#{anchor}")
        prompt["source"] = f"{text}\n\n{stuck}".splitlines(keepends=True)
    return nb


@functools.cache
def _release_exporter() -> Any:
    """nbgrader's ``generate_assignment`` preprocessors, in its order, in this process.

    Only ``SaveCells`` (which records the cells in a gradebook database and leaves the
    notebook as it is) is left out, so the output is byte for byte what ``nbgrader
    generate_assignment`` writes (a test compares them), in a fraction of its time.
    """
    try:
        from nbconvert.exporters import NotebookExporter
        from nbgrader.preprocessors import (
            CheckCellMetadata,
            ClearHiddenTests,
            ClearMarkScheme,
            ClearOutput,
            ClearSolutions,
            ComputeChecksums,
            IncludeHeaderFooter,
            InstantiateTests,
            LockCells,
        )
        from traitlets.config import Config
    except ImportError as err:
        raise SystemExit(f"{REGENERATE} needs nbgrader: pip install -e .[instructor]") from err
    config = Config()
    config.Exporter.default_preprocessors = []
    exporter = NotebookExporter(config=config)
    for step in (IncludeHeaderFooter, InstantiateTests, LockCells, ClearSolutions, ClearOutput,
                 CheckCellMetadata, ComputeChecksums, ClearHiddenTests, ClearMarkScheme,
                 ComputeChecksums, CheckCellMetadata):
        exporter.register_preprocessor(step, enabled=True)
    return exporter


def released(nb: dict, name: str = "notebook") -> dict:
    """``nb`` as nbgrader's release gives it to students (:func:`_release_exporter`): answers
    replaced by nbgrader's stub, hidden tests removed, no outputs. The student notebooks, the
    similarity check's stubs and the book's downloads are all made this one way."""
    return json.loads(_released_text(nb, name))


def _released_text(nb: dict, name: str) -> str:
    """:func:`released`, as the text nbgrader writes (what ``student/`` holds)."""
    import nbformat

    whole = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, **copy.deepcopy(nb)}
    for i, cell in enumerate(whole["cells"]):
        cell.setdefault("id", f"cell-{i}")  # nbformat 4.5 wants one
    node = nbformat.reads(json.dumps(whole), as_version=4)
    resources = {"nbgrader": {"notebook": name, "assignment": STUDENTS}, "unique_key": name}
    text, _ = _release_exporter().from_notebook_node(node, resources=resources)
    return text


def student_notebooks(root: Path | None = None) -> dict[Path, str]:
    """Every source's student version, as the text to write at its ``student/`` path."""
    root = course_root(root)
    site, citations = site_url(root), citation_labels(root)
    out = {}
    for source in notebook_paths(root):
        page = f"{site}{NOTEBOOKS}/{source.stem}.html"
        prepared = for_students(json.loads(source.read_text(encoding="utf-8")), page, site, citations)
        out[student_path(source, root)] = _released_text(prepared, source.stem)
    return out


def _lookup(messages: dict[str, str], found: list[str], where: str) -> Callable[[str], str]:
    """``english -> its translation in messages``; one without is appended to ``found``
    (naming ``where``) and left English."""
    def words(english: str) -> str:
        if english not in messages:
            found.append(f"{where}: {english[:70]!r}")
        return messages.get(english, english)

    return words


def _chinese_source(source: Path, root: Path, citations: dict[str, str],
                    interface: dict[str, str]) -> tuple[dict, list[str]]:
    """The source prepared for students in Chinese (:func:`for_students`): its Markdown (the
    hints' pseudocode from the code catalogue) and the words the student version adds,
    translated; and the messages without a translation."""
    from tinyk.courseware import chinese_notebooks as zh

    pages = root / "locale" / LANGUAGE / "LC_MESSAGES" / NOTEBOOKS / f"{source.stem}.po"
    code = zh.code_catalogue_path(root, source.stem)
    prose, where = zh.load_messages(pages), f"{NOTEBOOKS}/{source.name}"
    pseudocode = zh.load_messages(code, code=True)
    site = f"{site_url(root)}{ZH}/"
    found: list[str] = []
    absent: list[str] = []
    hints: list[str] = []

    def translate(text: str, i: int) -> str:
        text = zh.translate_pseudocode(text, pseudocode, hints, f"{where}: cell {i}")
        return zh.translate_markdown(text, prose, found, f"{where}: cell {i}")

    page = f"{site}{NOTEBOOKS}/{source.stem}.html"
    prepared = for_students(json.loads(source.read_text(encoding="utf-8")), page, site, citations,
                            _lookup(interface, absent, where), translate)
    catalogue = interface_catalogue(root).relative_to(root)
    return prepared, [f"{line}: no translation in {pages.relative_to(root)}" for line in found] + \
        [f"{line}: no translation in {code.relative_to(root)}" for line in hints] + \
        [f"{line}: no translation in {catalogue}" for line in dict.fromkeys(absent)]


def _chinese_code(nb: dict, prepared: dict, source: Path, root: Path,
                  interface: dict[str, str]) -> list[str]:
    """Put the Chinese Markdown cells of ``prepared`` into the English student version ``nb``
    and translate its code cells' words (the setup cell's from ``interface``, the interface's
    catalogue), in place; returns the code texts without a translation."""
    from tinyk.courseware import chinese_notebooks as zh

    code = zh.code_catalogue_path(root, source.stem)
    words: dict[str, str] = zh.load_messages(code, code=True)
    found: list[str] = []
    absent: list[str] = []
    drawn: list[str] = []  # figure words the figures' catalogue lacks (each names it)
    url = repository_url(root)
    for i, (cell, chinese) in enumerate(zip(nb["cells"], prepared["cells"], strict=True)):
        if cell.get("id") != chinese.get("id"):
            raise ValueError(f"{source.name}: cell {i} of the release is not the source's cell {i}")
        if cell["cell_type"] == "markdown":
            cell["source"] = chinese["source"]
        elif cell["cell_type"] == "code" and source_text(cell) == setup_cell_source(url):
            text = setup_cell_source(url, _lookup(interface, absent, f"{NOTEBOOKS}/{source.name}: cell {i}"),
                                     language="zh_CN")
            if not zh.same_code(text, source_text(cell)):
                raise ValueError(f"{source.name}: the Chinese setup cell differs from the English beyond its "
                                 f"words; check their translations in {interface_catalogue(root).name}")
            cell["source"] = text.splitlines(keepends=True)
        elif cell["cell_type"] == "code" and not source_text(cell).startswith(SETUP_TITLE):
            where = f"{NOTEBOOKS}/{source.name}: cell {i}"
            text = zh.translate_code(source_text(cell), words, found, where)
            text = zh.translate_figure_words(text, drawn, where)
            if not zh.same_code(text, source_text(cell)):  # a quote in a translation, say
                raise ValueError(f"{where}: the Chinese code differs from the English beyond its strings "
                                 f"and comments; check its translations in {code.relative_to(root)}")
            cell["source"] = text.splitlines(keepends=True)
    return [f"{line}: no translation in {code.relative_to(root)}" for line in found] + \
        [f"{line}: no translation in {interface_catalogue(root).relative_to(root)}" for line in absent] + \
        drawn


def chinese_student_notebooks(english: dict[Path, str], root: Path | None = None,
                              ) -> tuple[dict[Path, str], list[str]]:
    """The Chinese student versions (``student/zh/``) of the English ones in ``english``
    (:func:`student_notebooks`), and the messages that have no translation, each naming its
    notebook, cell and catalogue (:mod:`tinyk.courseware.chinese_notebooks`).

    Each is its English student version with the Markdown cells made from the source in
    Chinese and the code cells' words translated: cells, ids, metadata and code are the same.
    """
    import nbformat

    root = course_root(root)
    citations, interface = citation_labels(root), translated(interface_catalogue(root))
    out, missing = {}, []
    for source in notebook_paths(root):
        prepared, lacking = _chinese_source(source, root, citations, interface)
        nb = json.loads(english[student_path(source, root)])
        missing += lacking + _chinese_code(nb, prepared, source, root, interface)
        out[student_path(source, root, ZH)] = nbformat.writes(nbformat.from_dict(nb)) + "\n"
    return out, missing


def _written(root: Path) -> list[Path]:
    """The student notebooks in ``student/`` and ``student/zh/`` now."""
    return sorted((root / STUDENTS).glob("*.ipynb")) + sorted((root / STUDENTS / ZH).glob("*.ipynb"))


def students(root: Path | None = None) -> tuple[list[Path], list[str]]:
    """Regenerate ``student/`` and ``student/zh/`` from ``notebooks/``: returns the files
    written or removed, and the Chinese messages without a translation (a Chinese notebook
    that lacks one is not written).

    Deterministic (the same sources give byte-identical files) and writes only what changed.
    """
    root = course_root(root)
    english = student_notebooks(root)
    chinese, missing = chinese_student_notebooks(english, root)
    incomplete = {name for line in missing for name in [line.split(": ")[0]]}
    wanted = {**english, **{p: t for p, t in chinese.items() if f"{NOTEBOOKS}/{p.name}" not in incomplete}}
    (root / STUDENTS / ZH).mkdir(parents=True, exist_ok=True)
    changed = []
    for path in _written(root):
        if path not in wanted and path not in chinese:
            path.unlink()
            changed.append(path)
    for path, text in wanted.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed, missing


def stale_students(root: Path | None = None) -> list[str]:
    """Student notebooks that are missing, stale against their source, or have no source,
    and Chinese messages without a translation."""
    root = course_root(root)
    english = student_notebooks(root)
    chinese, missing = chinese_student_notebooks(english, root)
    problems = []
    for path, text in {**english, **chinese}.items():
        rel, source = path.relative_to(root).as_posix(), f"{NOTEBOOKS}/{path.name}"
        if not path.exists():
            problems.append(f"{rel}: missing (the student version of {source})")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{rel}: stale against {source}")
    for path in _written(root):
        if path not in english and path not in chinese:
            problems.append(f"{path.relative_to(root).as_posix()}: no source {NOTEBOOKS}/{path.name}")
    if missing:
        problems += missing
        problems.append("translate them: `python -m tinyk.translations update` adds new messages to the "
                        f"catalogues; then {REGENERATE}")
    if problems:
        problems.append(f"regenerate the student notebooks: {REGENERATE} (or: make students)")
    return problems
