"""The Chinese edition's translations: gettext catalogues of the book's own pages.

The English pages and notebooks are the only sources. Sphinx's gettext builder extracts
their prose (Markdown paragraphs, headings, list items, admonitions: never code or
outputs) into message catalogues, and ``locale/zh_CN/LC_MESSAGES/<page>.po`` holds the
translation of each message. The Chinese site is the same build with ``language`` set to
``zh_CN``. Commands (from the course checkout)::

    python -m tinyk.translations update   # extract the messages, add new ones to the .po files
    python -m tinyk.translations check    # exit 1 on an untranslated, stale or damaged message
    python -m tinyk.translations build    # the Chinese edition, into _build/html/zh

A translated message must keep what is not prose exactly as the English has it: inline
code, maths, link targets, citation keys and glossary targets (:func:`problems`). Glossary
terms are already bilingual ("KV cache (键值缓存)") and stay as they are in both editions,
so that every ``{term}`` reference finds its entry.

The words a learner reads in the code cells of the Chinese student notebooks (comments,
docstrings, test messages; :mod:`tinyk.chinese_notebooks`) are in one catalogue per notebook,
``locale/zh_CN/LC_MESSAGES/code/<stem>.po``, extracted from the English student versions by
``update`` and checked by ``check`` like the pages' (an f-string's placeholders, quotes and
escapes must come through as well).

The words inside figures are not page prose: they are drawn when a notebook executes.
Their catalogue is ``locale/zh_CN/figures.po`` (:mod:`tinyk.figure_text`); ``update``
adds the ones the last ``make book`` lacked, and ``check`` checks it like the others.

One English term has one Chinese term in every catalogue, the figures' included: ``check``
also fails on a message that renders a term of the term base (``locale/zh_CN/terms.toml``,
:mod:`tinyk.terms`) another way, naming the catalogue, the message and the term.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from tinyk.catalogues import CODE, LANGUAGE, LINK, MATH, ROLE, catalogues, glossary_terms, interface_catalogue
from tinyk.chinese_notebooks import CODE_FOLDER, PLACEHOLDER
from tinyk.course import course_root

__all__ = ["LANGUAGE", "build", "catalogues", "code_problems", "code_texts", "figure_messages",
           "figure_problems", "main", "message_problems", "problems", "stale", "update", "update_code",
           "update_figures"]

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_PLACE = re.compile(r"\{\d+\}")  # a number's place in a figure message (tinyk.figure_text)
_TARGET = re.compile(r"<[^<>`]*>`")  # a role's explicit target: a glossary term's own (bilingual) name



def _roles(text: str) -> list[tuple[str, str]]:
    """(role, what it points at): a term's target, a citation's keys. The shown text of a
    term may be translated when the target is written out: ``{term}`键值缓存 <KV cache (键值缓存)>```."""
    out = []
    for role, body in ROLE.findall(text):
        target = re.search(r"<([^<>]+)>\s*$", body)
        out.append((role, target.group(1) if target else body))
    return sorted(out)


def _without_roles_and_math(text: str) -> str:
    return MATH.sub(" ", ROLE.sub(" ", text))


def _code(text: str) -> list[str]:
    return sorted(a or b for a, b in CODE.findall(_without_roles_and_math(text)))


def message_problems(msgid: str, msgstr: str, *, keep: bool = False) -> list[str]:
    """What is wrong with one translation (an empty list when nothing is).

    ``keep``: the message must stay exactly as it is (a bilingual glossary term)."""
    if not msgstr:
        return ["untranslated"]
    if keep:
        return [] if msgstr == msgid else ["a glossary term changed (terms stay bilingual as they are)"]
    if msgid.startswith("\n"):  # the body of a display-maths block: Sphinx keeps it only if unchanged
        return [] if msgstr == msgid else ["a display-maths block changed (it stays as the English has it)"]
    found = []
    if sorted(MATH.findall(msgid)) != sorted(MATH.findall(msgstr)):
        found.append("maths differs from the English")
    if _code(msgid) != _code(msgstr):
        found.append("inline code differs from the English")
    if _roles(msgid) != _roles(msgstr):
        found.append("a role ({term}, {cite}, ...) or its target differs from the English")
    if sorted(a or b for a, b in LINK.findall(msgid)) != sorted(a or b for a, b in LINK.findall(msgstr)):
        found.append("a link target differs from the English")
    prose = CODE.sub(" ", _without_roles_and_math(LINK.sub(" ", msgid)))
    if len(_WORD.findall(prose)) >= 2 and not _CJK.search(_TARGET.sub("`", msgstr)):
        found.append("no Chinese in the translation of a sentence")
    return found



def problems(root: Path | None = None) -> list[str]:
    """Every untranslated, fuzzy, obsolete or damaged message, and every term rendered
    otherwise than the term base says (:func:`tinyk.terms.term_problems`), as ``file: message: problem``."""
    from babel.messages.pofile import read_po

    root = course_root(root)
    terms = glossary_terms(root)
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    found = []
    files = catalogues(root)
    if not files:
        return [f"no catalogues under {base}: run `python -m tinyk.translations update`"]
    for path in files:
        with path.open("rb") as f:
            catalogue = read_po(f)
        name = path.relative_to(base).as_posix()
        for message in catalogue:
            if not message.id:
                continue
            msgid, msgstr = str(message.id), str(message.string or "")
            if name.startswith(f"{CODE_FOLDER}/"):  # an f-string's placeholders are code, not words
                issues = message_problems(PLACEHOLDER.sub("{}", msgid), PLACEHOLDER.sub("{}", msgstr))
                issues += code_problems(msgid, msgstr) if msgstr else []
            else:
                issues = message_problems(msgid, msgstr, keep=msgid in terms)
            if message.fuzzy:
                issues.append("marked fuzzy (the English changed; check the translation)")
            found += [f"{name}: {msgid[:60]!r}: {issue}" for issue in issues]
        if catalogue.obsolete:
            found.append(f"{name}: {len(catalogue.obsolete)} obsolete message(s): run update")
    from tinyk.terms import term_problems

    return found + figure_problems(root) + interface_problems(root) + term_problems(root)


# The Sphinx settings of the Chinese edition that are words, by their English value (the
# book's _config.yml and myst-nb's defaults), translated in the interface's catalogue.
_INTERFACE_SETTINGS = {"html_title": "title", "author": "author",
                       "nb_code_prompt_show": "Show code cell {type}",
                       "nb_code_prompt_hide": "Hide code cell {type}"}


def interface_settings(root: Path | None = None) -> dict[str, str]:
    """The Chinese edition's Sphinx settings that are words (the site's title, its author, the
    code toggles' labels), from the interface's catalogue; a ``KeyError`` names a missing one."""
    import yaml
    from babel.messages.pofile import read_po

    root = course_root(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    with interface_catalogue(root).open("rb") as f:
        words = {str(m.id): str(m.string) for m in read_po(f) if m.id and m.string}
    settings = {}
    for name, english in _INTERFACE_SETTINGS.items():
        english = config.get(english, english)
        if english not in words:
            raise KeyError(f"{interface_catalogue(root).name} has no translation of {english!r} ({name})")
        settings[name] = words[english]
    return settings


def interface_problems(root: Path | None = None) -> list[str]:
    """Every untranslated or fuzzy message of the interface's catalogue
    (:func:`tinyk.catalogues.interface_catalogue`)."""
    return _catalogue_problems(interface_catalogue(course_root(root)), "")


def code_problems(msgid: str, msgstr: str) -> list[str]:
    """What is wrong with the translation of a code text beyond :func:`message_problems`: it
    is written into a Python string literal (an f-string's, perhaps) or a comment."""
    from tinyk.chinese_notebooks import placeholders

    found = []
    if placeholders(msgid) != placeholders(msgstr):
        found.append("an f-string placeholder ({got}, ...) differs from the English")
    if sorted(re.findall(r"\\.", msgid)) != sorted(re.findall(r"\\.", msgstr)) or \
            any(msgstr.count(q) > msgid.count(q) for q in "'\""):
        found.append("an escape (\\n, ...) differs from the English, or an ASCII quote was added (the text "
                     "goes into a Python string literal: write Chinese quotes “” instead)")
    return found


def code_texts(root: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """``stem -> [(msgid, kind), ...]``: the code texts of each English student version
    (as ``python -m tinyk.course students`` makes it), in order, each once."""
    import json

    from tinyk.chinese_notebooks import code_messages
    from tinyk.course import SETUP_TITLE, student_notebooks
    from tinyk.exercises import source_text

    out = {}
    for path, text in student_notebooks(course_root(root)).items():
        found: dict[str, str] = {}
        for cell in json.loads(text)["cells"]:
            code = source_text(cell)
            if cell["cell_type"] == "code" and not code.startswith(SETUP_TITLE):
                for msgid, kind in code_messages(code):
                    found.setdefault(msgid, kind)
        out[path.stem] = list(found.items())
    return out


def update_code(root: Path | None = None, texts: dict[str, list[tuple[str, str]]] | None = None) -> int:
    """Merge the code texts into ``code/<stem>.po``: new ones untranslated, changed ones
    fuzzy (with the old translation to start from), gone ones dropped; returns how many
    messages came in untranslated or fuzzy."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    from tinyk.chinese_notebooks import code_catalogue_path

    root = course_root(root)
    added = 0
    for stem, messages in (texts or code_texts(root)).items():
        template = Catalog(locale=LANGUAGE, project="tinyk course", fuzzy=False)
        for msgid, kind in messages:
            template.add(msgid, auto_comments=[kind])
        path = code_catalogue_path(root, stem)
        catalogue = Catalog(locale=LANGUAGE, project="tinyk course", fuzzy=False)
        if path.is_file():
            with path.open("rb") as f:
                catalogue = read_po(f)
            template.creation_date = catalogue.creation_date  # an unchanged catalogue stays byte for byte
        catalogue.update(template)
        added += sum(1 for m in catalogue if m.id and (m.fuzzy or not m.string))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, ignore_obsolete=True, omit_header=False)
    return added


def _code_stale(root: Path) -> list[str]:
    from babel.messages.pofile import read_po

    from tinyk.chinese_notebooks import code_catalogue_path

    found = []
    for stem, messages in code_texts(root).items():
        path = code_catalogue_path(root, stem)
        name = f"{CODE_FOLDER}/{stem}.po"
        if not path.is_file():
            found.append(f"{name}: missing: run `make translations`")
            continue
        with path.open("rb") as f:
            translated = {str(m.id) for m in read_po(f) if m.id}
        english = {msgid for msgid, _ in messages}
        if english - translated:
            found.append(f"{name}: {len(english - translated)} code text(s) not in the catalogue, "
                         f"e.g. {sorted(english - translated)[0][:60]!r}: run `make translations`")
        if translated - english:
            found.append(f"{name}: {len(translated - english)} code text(s) no student notebook has any "
                         f"more: run `make translations`")
    return found


def _catalogue_problems(path: Path, missing: str, checks=()) -> list[str]:
    """The problems of a catalogue that stands beside the pages' (figures, interface): each
    message untranslated or fuzzy, or translated but failing one of ``checks`` (functions
    ``(msgid, msgstr) -> problem or ''``); ``missing`` says what to do when there is no file."""
    from babel.messages.pofile import read_po

    if not path.is_file():
        return [f"{path.name}: missing{missing}"]
    with path.open("rb") as f:
        catalogue = read_po(f)
    found = []
    for message in catalogue:
        if not message.id:
            continue
        msgid, msgstr = str(message.id), str(message.string or "")
        issues = [] if msgstr else ["untranslated"]
        if message.fuzzy:
            issues.append("marked fuzzy (the English changed; check the translation)")
        issues += [issue for check in checks if msgstr and (issue := check(msgid, msgstr))]
        found += [f"{path.name}: {msgid[:60]!r}: {issue}" for issue in issues]
    return found


def figure_problems(root: Path | None = None) -> list[str]:
    """Every untranslated, fuzzy or damaged message of the figures' catalogue
    (``locale/zh_CN/figures.po``): a number's place ``{0}`` or maths must come through."""
    from tinyk.figure_text import catalogue_path

    def places(msgid: str, msgstr: str) -> str:
        same = sorted(_PLACE.findall(msgid)) == sorted(_PLACE.findall(msgstr))
        return "" if same else "a number's place ({0}, {1}, ...) differs from the English"

    def maths(msgid: str, msgstr: str) -> str:
        same = sorted(MATH.findall(msgid)) == sorted(MATH.findall(msgstr))
        return "" if same else "maths differs from the English"

    return _catalogue_problems(catalogue_path(course_root(root)),
                               ": run `make translations` after `make book`", (places, maths))


def figure_messages(root: Path | None = None) -> set[str]:
    """Figure words the Chinese edition needs: those the executed notebooks in the book's
    execution cache list as missing from the catalogue (``make book`` ran them with
    ``TINYK_FIGURES_ZH=1``), and every image alt text given in a cell's metadata."""
    import json

    from tinyk.course import notebook_paths
    from tinyk.figure_text import message_key, needs_words

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
    """Add the figure words :func:`figure_messages` finds to ``figures.po``, untranslated;
    returns how many were added."""
    from babel.messages.pofile import read_po, write_po

    from tinyk.figure_text import catalogue_path

    path = catalogue_path(course_root(root))
    with path.open("rb") as f:
        catalogue = read_po(f)
    new = sorted(m for m in figure_messages(root) if m not in catalogue)
    for message in new:
        catalogue.add(message)
    if new:
        with path.open("wb") as f:
            write_po(f, catalogue, width=100, omit_header=False)
    return len(new)


def _sphinx(root: Path, outdir: Path, doctrees: Path, builder: str, overrides: dict, **kwargs) -> int:
    """One Jupyter Book build of the course with extra Sphinx settings (its CLI's defaults)."""
    from jupyter_book.sphinx import build_sphinx

    settings = {"external_toc_path": str(root / "_toc.yml"), "latex_individualpages": False,
                "gettext_compact": False, **overrides}
    result = build_sphinx(root, outdir, noconfig=True, path_config=str(root / "_config.yml"),
                          confoverrides=settings, doctreedir=str(doctrees), builder=builder, **kwargs)
    if isinstance(result, Exception):
        raise result
    return int(result)


def _extract(root: Path, folder: Path) -> None:
    """The English messages of every page, as ``.pot`` files under ``folder``."""
    status = _sphinx(root, folder / "gettext", folder / "doctrees", "gettext",
                     {"nb_execution_mode": "off", "gettext_uuid": False, "gettext_location": False,
                      "project": "tinyk course", "version": "", "release": ""},
                     freshenv=True, really_quiet=True)
    if status != 0:
        raise SystemExit(f"extracting the messages failed (Sphinx exit status {status})")


def update(root: Path | None = None) -> int:
    """Extract every page's messages and merge them into the ``.po`` files: new messages
    come in untranslated, changed ones are marked fuzzy, translations are kept."""
    import tempfile

    from sphinx_intl import basic

    root = course_root(root)
    with tempfile.TemporaryDirectory() as tmp:
        _extract(root, Path(tmp))
        basic.update(str(root / "locale"), str(Path(tmp, "gettext")), (LANGUAGE,), ignore_obsolete=True)
    untranslated = update_code(root)
    if untranslated:
        print(f"{untranslated} code text(s) to translate in locale/{LANGUAGE}/LC_MESSAGES/{CODE_FOLDER}/")
    added = update_figures(root)
    if added:
        print(f"{added} new figure message(s) in locale/{LANGUAGE}/figures.po")
    return 0


def stale(root: Path | None = None) -> list[str]:
    """Pages whose English messages differ from their catalogue's (``update`` not run since
    the prose changed): a message missing there would show in English on the Chinese page."""
    import tempfile

    from babel.messages.pofile import read_po

    root = course_root(root)
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        _extract(root, Path(tmp))
        pots = Path(tmp, "gettext")
        for pot in sorted(pots.rglob("*.pot")):
            name = pot.relative_to(pots).with_suffix(".po").as_posix()
            with pot.open("rb") as f:
                english = {str(m.id) for m in read_po(f) if m.id}
            translated: set[str] = set()
            if (base / name).is_file():
                with (base / name).open("rb") as f:
                    translated = {str(m.id) for m in read_po(f) if m.id}
            if english - translated:
                found.append(f"{name}: {len(english - translated)} English message(s) not in the catalogue, "
                             f"e.g. {sorted(english - translated)[0][:60]!r}: run `make translations`")
            if translated - english:
                found.append(f"{name}: {len(translated - english)} message(s) no page has any more: "
                             f"run `make translations`")
    return found + _code_stale(root)


def build(root: Path | None = None, *, everything: bool = False) -> int:
    """Build the Chinese edition into ``_build/html/zh``: the English build's settings with
    ``language`` set, its notebooks' outputs taken from the same execution cache (nothing
    executes that the English build or the notebook stage already ran), warnings are errors."""
    from tinyk.course import site_url

    root = course_root(root)
    overrides = {"language": LANGUAGE, "locale_dirs": [str(root / "locale")], "nitpicky": True,
                 "nb_execution_cache_path": str(root / "_build" / ".jupyter_cache"),
                 "html_baseurl": f"{site_url(root)}zh/", **interface_settings(root)}
    return _sphinx(root, root / "_build" / "html" / "zh", root / "_build" / ".doctrees-zh", "html",
                   overrides, warningiserror=True, keep_going=True, force_all=everything)


def _counts(found: list[str]) -> str:
    kinds = Counter(line.rsplit(": ", 1)[-1] for line in found)
    return ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyk.translations", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="exit 1 on a stale catalogue or an untranslated or damaged message")
    sub.add_parser("update", help="extract the English messages and merge them into the .po files")
    zh = sub.add_parser("build", help="build the Chinese edition into _build/html/zh")
    zh.add_argument("--all", action="store_true", help="write every page, not only the changed ones")
    args = parser.parse_args(argv)
    if args.command == "update":
        return update()
    if args.command == "build":
        return build(everything=args.all)
    if args.command == "check":
        from tinyk import package_catalogue

        found = stale() + problems() + package_catalogue.problems()  # the package's own words too
        for line in found:
            print(line)
        if found:
            print(f"{len(found)} problem(s) in the Chinese translation: {_counts(found)}", file=sys.stderr)
            return 1
        print(f"{len(catalogues())} catalogues, every message translated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
