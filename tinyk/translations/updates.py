"""The catalogues in step with the English (the Chinese edition, the book's *For instructors*
page): ``python -m tinyk.translations update`` merges the English messages of the pages, of
the student notebooks' code, of the figures and of the notebooks' printed output into the
catalogues (:func:`update`), and ``check`` lists a catalogue that ``update`` would change (:func:`stale`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tinyk.courseware.addresses import SETUP_TITLE
from tinyk.courseware.catalogues import LANGUAGE, read_catalogue
from tinyk.courseware.checkout import course_root, notebook_paths
from tinyk.courseware.chinese_notebooks import (
    CODE_FOLDER,
    PSEUDOCODE,
    code_catalogue_path,
    code_messages,
    pseudocode_blocks,
)
from tinyk.courseware.exercises import source_text
from tinyk.translations.builds import extract
from tinyk.translations.outputs import update_outputs
from tinyk.translations.pages import SHOWN_KINDS, shown_code

__all__ = ["code_texts", "figure_messages", "stale", "update", "update_blocks", "update_code",
           "update_figures"]


def code_texts(root: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """``stem -> [(msgid, kind), ...]``: the code texts of each English student version
    (as ``python -m tinyk.courseware.course students`` makes it), in order, each once; then the
    texts of the code its chapter page shows that the student version lacks (a solution's:
    :func:`tinyk.translations.pages.shown_code`), and the pseudocode
    blocks of its hints (:func:`tinyk.courseware.chinese_notebooks.pseudocode_blocks`)."""
    from tinyk.courseware.student_versions import student_notebooks

    root = course_root(root)
    out = {}
    for path, text in student_notebooks(root).items():
        found: dict[str, str] = {}
        for cell in json.loads(text)["cells"]:
            code = source_text(cell)
            if cell["cell_type"] == "code" and not code.startswith(SETUP_TITLE):
                for msgid, kind in code_messages(code):
                    found.setdefault(msgid, kind)
        out[path.stem] = list(found.items())
    for source in notebook_paths(root):
        found = dict(out.get(source.stem, []))
        nb = json.loads(source.read_text(encoding="utf-8"))
        for _, code in shown_code(nb):
            for msgid, kind in code_messages(code):
                if kind in SHOWN_KINDS:
                    found.setdefault(msgid, kind)
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "markdown":
                for _, _, text in pseudocode_blocks(source_text(cell), f"{source.name}: cell {i}"):
                    found.setdefault(text, PSEUDOCODE)
        out[source.stem] = list(found.items())
    return out


def update_code(root: Path | None = None, texts: dict[str, list[tuple[str, str]]] | None = None) -> int:
    """Merge the code texts into ``code/<stem>.po``: new ones untranslated, changed ones
    fuzzy (with the old translation to start from), gone ones dropped; returns how many
    messages came in untranslated or fuzzy."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    root = course_root(root)
    added = 0
    for stem, messages in (texts or code_texts(root)).items():
        template = Catalog(locale=LANGUAGE, project="tinyk course", fuzzy=False)
        for msgid, kind in messages:
            template.add(msgid, auto_comments=[kind])
        path = code_catalogue_path(root, stem)
        catalogue = read_catalogue(path)  # a new one when there is none yet
        template.creation_date = catalogue.creation_date  # an unchanged catalogue stays byte for byte
        catalogue.update(template)
        added += sum(1 for m in catalogue if m.id and (m.fuzzy or not m.string))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, ignore_obsolete=True, omit_header=False)
    return added


def _differences(name: str, english: set[str], translated: set[str], what: str, where: str) -> list[str]:
    """A catalogue ``name`` whose messages (``translated``) are not the English ones."""
    found = []
    if english - translated:
        found.append(f"{name}: {len(english - translated)} {what} not in the catalogue, "
                     f"e.g. {sorted(english - translated)[0][:60]!r}: run `make translations`")
    if translated - english:
        found.append(f"{name}: {len(translated - english)} {where}: run `make translations`")
    return found


def _code_stale(root: Path) -> list[str]:
    found = []
    for stem, messages in code_texts(root).items():
        path = code_catalogue_path(root, stem)
        name = f"{CODE_FOLDER}/{stem}.po"
        if not path.is_file():
            found.append(f"{name}: missing: run `make translations`")
            continue
        english = {msgid for msgid, _ in messages}
        translated = {str(m.id) for m in read_catalogue(path) if m.id}
        found += _differences(name, english, translated, "code text(s)",
                              "code text(s) no student notebook has any more")
    return found


def figure_messages(root: Path | None = None) -> set[str]:
    """Figure words the Chinese edition needs: those the executed notebooks in the book's
    execution cache list as missing from the catalogue (``make book`` ran them with
    ``TINYK_FIGURES_ZH=1``), and every image alt text given in a cell's metadata."""
    from tinyk.courseware.figure_text import message_key, needs_words

    root = course_root(root)
    found: set[str] = set()
    for path in notebook_paths(root):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
            if alt and needs_words(alt):
                found.add(message_key(alt)[0])
    cache_dir = root / "_build" / ".jupyter_cache"
    if cache_dir.is_dir():
        from jupyter_cache import get_cache

        cache = get_cache(str(cache_dir))
        for record in cache.list_cache_records():
            for cell in cache.get_cache_bundle(record.pk).nb.cells:
                for output in cell.get("outputs", []):
                    zh = output.get("metadata", {}).get("tinyk", {}).get("zh", {})
                    found.update(zh.get("missing", []))
    return found


def update_figures(root: Path | None = None) -> int:
    """Add the figure words :func:`figure_messages` finds to the figures' catalogue
    (``tinyk/locale/figures_zh_CN.po``), untranslated;
    returns how many were added."""
    from babel.messages.pofile import write_po

    from tinyk.courseware.figure_text import catalogue_path

    path = catalogue_path()
    catalogue = read_catalogue(path)
    new = sorted(m for m in figure_messages(root) if m not in catalogue)
    for message in new:
        catalogue.add(message)
    if new:
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, omit_header=False)
    return len(new)


def update_blocks(root: Path | None = None) -> int:
    """Merge the literal blocks' texts of the book's pages (:func:`tinyk.translations.pages.book_block_texts`)
    into ``blocks.po``: new ones untranslated, gone ones dropped; returns how many came in."""
    from babel.messages.pofile import write_po

    from tinyk.courseware.catalogues import blocks_catalogue
    from tinyk.translations.pages import book_block_texts

    root = course_root(root)
    path = blocks_catalogue(root)
    catalogue = read_catalogue(path)
    texts = book_block_texts(root)
    new = [text for text in texts if text not in catalogue]
    gone = [str(m.id) for m in catalogue if m.id and str(m.id) not in texts]
    for text in new:
        catalogue.add(text, auto_comments=[texts[text]])
    for text in gone:
        del catalogue[text]
    if new or gone:
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, omit_header=False)
    return len(new)


def update(root: Path | None = None) -> int:
    """Extract every page's messages and merge them into the ``.po`` files: new messages
    come in untranslated, changed ones are marked fuzzy, translations are kept."""
    from sphinx_intl import basic

    root = course_root(root)
    with tempfile.TemporaryDirectory() as tmp:
        extract(root, Path(tmp))
        basic.update(str(root / "locale"), str(Path(tmp, "gettext")), (LANGUAGE,), ignore_obsolete=True)
        _in_page_order(root, Path(tmp, "gettext"))
    untranslated = update_code(root)
    if untranslated:
        print(f"{untranslated} code text(s) to translate in locale/{LANGUAGE}/LC_MESSAGES/{CODE_FOLDER}/")
    added = update_blocks(root)
    if added:
        print(f"{added} new literal block text(s) of the book's pages in locale/{LANGUAGE}/blocks.po")
    added = update_figures(root)
    if added:
        print(f"{added} new figure message(s) in tinyk/locale/figures_zh_CN.po")
    added, removed = update_outputs(root)
    if added or removed:
        print(f"{added} new printed-output message(s) in locale/{LANGUAGE}/outputs.po, "
              f"{removed} no page prints any more removed")
    return 0


def _page_order(pot: Path) -> list[str]:
    """A page's messages in the order the page says them (its ``.pot``, as Sphinx extracts it)."""
    return [str(m.id) for m in read_catalogue(pot) if m.id]


def _in_page_order(root: Path, pots: Path) -> None:
    """Rewrite each page's catalogue whose messages are out of its page's order in that order
    (Sphinx's update keeps the order of a catalogue whose messages did not change; a merge of
    two branches appends): a translator reads a catalogue as the page reads, and the term
    base's glosses are checked where the page first says a term
    (:func:`tinyk.translations.terms.gloss_problems`)."""
    from sphinx_intl.catalog import dump_po, load_po

    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    for pot in sorted(pots.rglob("*.pot")):
        path = base / pot.relative_to(pots).with_suffix(".po")
        order = _page_order(pot)
        if not path.is_file() or [str(m.id) for m in read_catalogue(path) if m.id] == order:
            continue
        catalogue = load_po(str(path))
        for msgid in order:  # each taken out and put back at the end, in the page's order
            message = catalogue[msgid]
            del catalogue[msgid]
            catalogue[msgid] = message
        dump_po(str(path), catalogue, width=76, ignore_obsolete=True)


def stale(root: Path | None = None) -> list[str]:
    """Pages whose English messages differ from their catalogue's (``update`` not run since
    the prose changed): a message missing there would show in English on the Chinese page."""
    root = course_root(root)
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        extract(root, Path(tmp))
        pots = Path(tmp, "gettext")
        for pot in sorted(pots.rglob("*.pot")):
            name = pot.relative_to(pots).with_suffix(".po").as_posix()
            english = {str(m.id) for m in read_catalogue(pot) if m.id}
            translated = [str(m.id) for m in read_catalogue(base / name) if m.id]
            found += _differences(name, english, set(translated), "English message(s)",
                                  "message(s) no page has any more")
            if set(translated) == english and translated != _page_order(pot):
                found.append(f"{name}: its messages are not in the page's order: run `make translations`")
    return found + _code_stale(root) + _blocks_stale(root)


def _blocks_stale(root: Path) -> list[str]:
    from tinyk.courseware.catalogues import blocks_catalogue
    from tinyk.translations.pages import book_block_texts

    translated = {str(m.id) for m in read_catalogue(blocks_catalogue(root)) if m.id}
    return _differences("blocks.po", set(book_block_texts(root)), translated, "literal block text(s)",
                        "literal block text(s) no book page has any more")
