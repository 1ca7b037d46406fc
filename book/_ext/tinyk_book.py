"""Sphinx extension of the tinyk book: notebooks are read in their book view.

- ``source-read``: a notebook's JSON is replaced by :func:`page_notebook` (the book view of
  :func:`tinyk.courseware.exercises.book_version`) before myst-nb parses it, so no nbgrader marker or
  hidden test reaches the page, and the code shown is the code that ran (plus one removed
  cell that makes errors print as one line).
- Execution: myst-nb's cache (``execute_notebooks: cache``) is keyed on the page's code
  cells. The removed first cell carries a hash of the ``tinyk`` package's source (and of
  the figures' Chinese catalogue), so a change to either is a cache miss too;
  ``env-get-outdated`` re-reads every notebook page when that hash changes (in the Chinese
  edition, when the printed output's catalogue does too).
  ``tests/test_notebooks.py`` executes each source notebook once (hidden tests included)
  and stores its page view in the same cache, so the book build of ``make test`` reuses
  those outputs instead of executing every notebook again.
- ``html-page-context``: each page gets a download link (``html_copy_source`` is off, so
  Sphinx would give none). Sphinx then copies the page's original source there.
- ``html-page-context`` (after the theme's launch buttons): the Colab button opens the
  page's student version, ``student/NAME.ipynb`` (no solutions, no hidden tests), not the
  source the page was built from; in the Chinese edition, the Chinese student version
  ``student/zh/NAME.ipynb``. A student version missing from its folder is a warning.
- ``html-page-context`` (late): exact duplicate ``<script>`` entries are dropped. The
  sphinx-thebe configuration script is registered twice in a Jupyter Book build, and its
  second ``const THEBE_JS_URL`` is a SyntaxError on every page.
- ``doctree-resolved``: an output image with no alt text of its own (cell metadata
  ``mystnb.image.alt``) gets the ``Description`` its PNG carries: course figures
  describe themselves (:meth:`tinyk.lessons.plotting.CourseFigure.describe`).
- ``builder-inited``, Chinese edition: each figure is rendered from the Chinese version
  its output carries (:mod:`tinyk.courseware.figure_text`), and an alt text from cell metadata is
  translated; a figure without one, or a word without a translation, is a warning. Printed
  output is translated line by line as a page is read (:mod:`tinyk.translations.outputs`).
- ``doctree-read``, Chinese edition: code cells read as in the Chinese student notebooks
  (comments, docstrings, messages; what ran is the English), the glossary is in pinyin order
  (:mod:`tinyk.translations.pages`).
- ``builder-inited``: ``book/_static/tinyk.css`` is added (code wraps, wide equations
  scroll, outputs never widen the column: nothing is cut off on a phone).
- ``builder-inited`` (HTML): the 05.7 model as an ONNX graph with its manifest
  (:func:`tinyk.web.onnx_export.export_course_model`) lands in ``_static/models/`` of each
  edition: ``tiny.onnx`` and ``tiny.json``. They are written once into ``_build/web-static``
  and exported again only when the model, its weights or the export tools change. When the
  two editions build at once, the one that finds this export under way exports SmolLM2's
  files meanwhile (``tinyk_playground.export_smollm2``).
- ``build-finished``, one pass over the written pages:
  - accessibility (checked by axe-core in the browser tests): the theme's navigation
    toggles (``<summary>`` holding only an icon) get an accessible name, and the
    bibliography's ``role="list"``, whose entries are not list items, is dropped;
  - each page's header gets a link to the same page in the other edition (English at the
    site's root, Chinese under ``zh/``; ``tinyk.translations``);
  - in the Chinese edition, the solution toggles' words and accessible names and the
    navigation's part captions are Chinese too.
- ``quiz`` directive (:mod:`tinyk.courseware.quiz`): a concept check, rendered as a fieldset of radio
  buttons with the question as its legend, a "Check answer" button and a live region that
  shows the verdict and the chosen choice's explanation (``book/_static/tinyk-quiz.js``, no
  kernel). The question, choices and explanations are paragraphs of the page, so the gettext
  builder extracts them and the Chinese edition translates them; the button's and the verdicts'
  words are elements' whole texts, translated from the interface's catalogue.
- ``playground`` directive (``tinyk_playground``, set up from here): the 05.7 model, run in the
  page by ONNX Runtime Web (``book/_static/tinyk-playground.js``); its words are written in the
  page's language by the directive, so the interface pass below leaves them alone.
- ``build-finished``: every notebook's copy is overwritten with its student version: the
  committed ``student/NAME.ipynb`` that Colab opens (``student/zh/NAME.ipynb`` in the Chinese
  edition), or (for a notebook without one) nbgrader's release of it
  (:func:`tinyk.courseware.student_versions.released`). This
  must come last: Sphinx copies originals while it writes pages.
- ``build-finished``, Chinese edition: every Markdown page's copy is overwritten with its
  Chinese source, each block replaced by its translation in the page's catalogue
  (:mod:`tinyk.translations.sources`), so that no download of the Chinese site is English; a
  block without a translation is a warning.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import tinyk
from tinyk.courseware.checkout import NOTEBOOKS, REGENERATE, STUDENTS, ZH
from tinyk.courseware.exercises import book_version

_LOG = logging.getLogger(__name__)
_COLAB_SOURCE = re.compile(rf"^(https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/)"
                           rf"{NOTEBOOKS}/([^/]+\.ipynb)$")

# Run first, removed from the page: a cell that is meant to fail shows its one-line error
# message, not a traceback through the package's source (learners' kernels are unaffected).
_SHORT_ERRORS = {"cell_type": "code", "execution_count": None, "outputs": [],
                 "metadata": {"tags": ["remove-cell"]},
                 "source": 'get_ipython().run_line_magic("xmode", "minimal")'}


# Modules no notebook runs: the ONNX export and the live page's numbers change no output, nor
# do the grader and the Chinese edition's tools (but the package's words, which its feedback says).
_NOT_RUN = {"web/onnx_export.py", "web/playground.py"}
_NOT_RUN_FOLDERS = {"grading", "translations"}
_RUN_THERE = {"translations/package_catalogue.py"}


def _runs(relative: str) -> bool:
    """Whether the package's module at ``relative`` (``lessons/plotting.py``) may change an output."""
    folder = relative.split("/")[0]
    return relative in _RUN_THERE or (relative not in _NOT_RUN and folder not in _NOT_RUN_FOLDERS)


def package_hash() -> str:
    """A hash of the installed ``tinyk`` package's Python source and of the figures'
    Chinese catalogue (outputs depend on both: the Chinese figures are drawn in the run)."""
    from tinyk.courseware.figure_text import catalogue_path

    digest = hashlib.sha256()
    package = Path(tinyk.__file__).parent
    for path in sorted(p for p in package.rglob("*.py") if _runs(p.relative_to(package).as_posix())):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    catalogue = catalogue_path()
    if catalogue.is_file():
        digest.update(b"figures.po\0" + catalogue.read_bytes())
    return digest.hexdigest()[:16]


def with_first_cell(nb: dict) -> dict:
    """``nb`` with the book's removed first cell (short errors, package hash) in front."""
    nb = dict(nb, cells=list(nb["cells"]))
    first = dict(_SHORT_ERRORS, id="tinyk-short-errors")
    first["source"] = f"{_SHORT_ERRORS['source']}  # tinyk {package_hash()}"
    nb["cells"].insert(0, first)
    return nb


def page_notebook(nb: dict) -> dict:
    """What the book parses and executes for a chapter notebook (a source notebook's JSON)."""
    return with_first_cell(book_version(nb))


def _read_as_book(app, docname, source):
    if Path(app.env.doc2path(docname)).suffix == ".ipynb":
        source[0] = json.dumps(page_notebook(json.loads(source[0])))


def _outdated_when_package_changes(app, env, added, changed, removed):
    current = package_hash()
    if edition(app) == "zh":  # printed output is translated as a page is read
        from tinyk.courseware.catalogues import outputs_catalogue

        path = outputs_catalogue(Path(app.srcdir))
        current += hashlib.sha256(path.read_bytes() if path.is_file() else b"").hexdigest()[:16]
    if getattr(env, "tinyk_package_hash", None) == current:
        return []
    env.tinyk_package_hash = current
    return [name for name in env.found_docs if Path(env.doc2path(name)).suffix == ".ipynb"]


def _link_source(app, pagename, templatename, context, doctree):
    if doctree is not None and pagename in app.env.all_docs:
        context["sourcename"] = pagename + Path(app.env.doc2path(pagename)).suffix


def student_folder(app) -> str:
    """Where this edition's student notebooks are, relative to the course checkout."""
    return STUDENTS if edition(app) == "en" else f"{STUDENTS}/{ZH}"


def _colab_opens_student_version(app, pagename, templatename, context, doctree):
    folder = student_folder(app)

    def rewrite(node):
        if isinstance(node, list):
            for item in node:
                rewrite(item)
        elif isinstance(node, dict):
            match = _COLAB_SOURCE.match(str(node.get("url", "")))
            if match:
                node["url"] = f"{match.group(1)}{folder}/{match.group(2)}"
                student = Path(app.srcdir, folder, match.group(2))
                if student.parent.is_dir() and not student.is_file():
                    _LOG.warning(f"{pagename}: its Colab button opens {folder}/{match.group(2)}, "
                                 f"which does not exist: run {REGENERATE}")
            for value in node.values():
                rewrite(value)

    rewrite(context.get("header_buttons", []))


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    unique, seen = [], set()
    for script in context.get("script_files", []):
        attributes = tuple(sorted(getattr(script, "attributes", {}).items()))
        key = (getattr(script, "filename", script) or "", attributes)  # None and "" alike
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _publish_student_notebooks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        if path.suffix == ".ipynb":
            target = Path(app.outdir, "_sources", docname + ".ipynb")
            target.parent.mkdir(parents=True, exist_ok=True)
            committed = Path(app.srcdir, student_folder(app), path.name)
            if path.parent.name == NOTEBOOKS and committed.is_file():  # what Colab opens, too
                target.write_bytes(committed.read_bytes())
                continue
            from tinyk.courseware.student_versions import released

            student = released(json.loads(path.read_text(encoding="utf-8")), path.stem)
            target.write_text(json.dumps(student, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _publish_chinese_pages(app, exception):
    if exception is not None or app.builder.format != "html" or edition(app) != "zh":
        return
    from tinyk.translations.sources import translated_page

    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        if path.suffix != ".md":
            continue
        try:
            text, missing = translated_page(Path(app.srcdir), docname, path)
        except ValueError as error:
            _LOG.warning(f"{docname}: its download stays English: {error}")
            continue
        for line in missing:
            _LOG.warning(f"{line}: no translation for the page's download (run `make translations`)")
        target = Path(app.outdir, "_sources", docname + path.suffix)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _alt_text_from_png(app, doctree, docname):
    from PIL import Image

    for image in doctree.findall(nodes.image):
        if image.get("alt") or not str(image.get("uri", "")).endswith(".png"):
            continue
        path = Path(app.srcdir, image["candidates"].get("*", image["uri"]))
        if path.is_file():
            with Image.open(path) as png:
                description = getattr(png, "text", {}).get("Description")
            if description:
                image["alt"] = description


def _chinese_figures(app) -> None:
    """The Chinese edition's figures: each output that carries its Chinese version
    (``metadata["tinyk"]["zh"]``, drawn in the same run as the English, see
    :mod:`tinyk.courseware.figure_text`) is rendered from that, and an image's alt text from the cell's
    metadata is translated from the same catalogue. A figure drawn without its Chinese
    version, or with words the catalogue lacks, is a warning that names it (an error
    in ``make book``)."""
    if edition(app) != "zh":
        return
    import dataclasses

    from myst_nb.core.render import NbElementRenderer

    from tinyk.courseware import figure_text

    original = NbElementRenderer.render_mime_type
    if getattr(original, "tinyk_chinese", False):
        return

    def render_mime_type(self, data):
        zh = (data.output_metadata or {}).get("tinyk", {}).get("zh")
        where = f"{self.source}: cell {data.cell_index}"
        if zh is None and (data.mime_type == "image/png" or (
                data.mime_type == "text/html" and 'class="tinyk-slider"' in data.string[:200])):
            self.logger.warning(f"{where}: a figure without its Chinese version (the notebook ran "
                                f"without {figure_text.ENV}=1; `make book` sets it)",
                                subtype="figure_text", line=data.line)
        if zh is not None and data.mime_type in zh:
            data = dataclasses.replace(data, content=zh[data.mime_type])
        missing = set((zh or {}).get("missing", []))
        rendered = original(self, data)
        if data.mime_type == "image/png":
            with figure_text.collecting() as untranslated:
                for node in rendered:
                    if node.get("alt"):
                        node["alt"] = figure_text.translate(node["alt"])
            missing |= untranslated
        for text in sorted(missing):
            self.logger.warning(f"{where}: figure text without a Chinese translation: {text!r} "
                                f"(`make translations` adds it to tinyk/locale/figures_zh_CN.po)",
                                subtype="figure_text", line=data.line)
        return rendered

    render_mime_type.tinyk_chinese = True
    NbElementRenderer.render_mime_type = render_mime_type


def _chinese_outputs(app) -> None:
    from tinyk.courseware.catalogues import outputs_catalogue, translated
    from tinyk.translations import outputs

    outputs.install(translated(outputs_catalogue(Path(app.srcdir))) if edition(app) == "zh" else None)


def _chinese_page(app, doctree):
    if edition(app) != "zh":
        return
    from tinyk.translations import pages

    pages.sort_glossaries(doctree)
    source = Path(app.env.doc2path(app.env.docname))
    if source.suffix == ".ipynb":
        catalogue, missing = pages.translate_page(doctree, Path(app.srcdir), source)
    else:  # a Markdown page's literal blocks: a shell block's comments, a drawing
        catalogue, missing = pages.translate_blocks(doctree, Path(app.srcdir), app.env.docname)
    app.env.note_dependency(str(catalogue))  # an edited translation: the page is read again
    for line in missing:
        _LOG.warning(f"{line}: no translation in {catalogue.name} (run `make translations`)")


class quiz(nodes.General, nodes.Element):
    """A concept check: its question, then its choices (``quiz_id``: the radios' name)."""


class quiz_question(nodes.paragraph):
    """The question: a paragraph (a message of the page's catalogue), shown as the legend."""


class quiz_choice(nodes.General, nodes.Element):
    """One choice (``quiz_id``, ``number`` from 1, ``correct``): its text, then its explanation."""


class quiz_choice_text(nodes.paragraph):
    """A choice's text: a paragraph, shown as its radio button's label."""


class quiz_explanation(nodes.General, nodes.Element):
    """Why a choice is right or wrong (blocks), shown in the feedback when it is chosen."""


# The quiz's words, each an element's whole text, so that the Chinese edition translates them
# from interface.po like the theme's (_interface_zh); the verdicts are the student notebooks' too.
QUIZ_CHECK, QUIZ_NONE = "Check answer", "Choose an answer first."


class QuizDirective(SphinxDirective):
    """``:::{quiz}`` with ``:answer: N``: see :mod:`tinyk.courseware.quiz` for the body's form."""

    has_content = True
    option_spec: ClassVar[dict] = {"answer": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        from tinyk.courseware.quiz import parse_quiz

        where = f"{self.env.docname}: the quiz at line {self.lineno}"
        try:
            parsed = parse_quiz("\n".join(self.content), self.options.get("answer"), where)
        except ValueError as error:
            raise self.error(str(error)) from None
        quiz_id = f"tinyk-quiz-{self.env.new_serialno('tinyk-quiz') + 1}"
        node = quiz(quiz_id=quiz_id, ids=[quiz_id])
        node += self._paragraph(parsed.question, 0, quiz_question)
        for number, choice in enumerate(parsed.choices, 1):
            item = quiz_choice(quiz_id=quiz_id, number=number, correct=number == parsed.answer)
            item += self._paragraph(choice.text, choice.line, quiz_choice_text)
            explanation = quiz_explanation()
            self._parse(choice.explanation, choice.explanation_line, explanation)
            item += explanation
            node += item
        return [node]

    def _parse(self, text: str, line: int, into: nodes.Element) -> None:
        from docutils.statemachine import StringList

        self.state.nested_parse(StringList(text.split("\n"), self.get_source_info()[0]),
                                self.content_offset + line, into)

    def _paragraph(self, text: str, line: int, cls: type[nodes.paragraph]) -> nodes.paragraph:
        holder = nodes.container()
        self._parse(text, line, holder)
        if len(holder.children) != 1 or not isinstance(holder[0], nodes.paragraph):
            raise self.error(f"{self.env.docname}: the quiz at line {self.lineno}: {text[:40]!r} "
                             f"must be one paragraph")
        paragraph = holder[0]
        out = cls(paragraph.rawsource, "", *paragraph.children, **paragraph.attributes)
        out.source, out.line = paragraph.source, paragraph.line
        return out


def _visit_quiz(self, node: quiz) -> None:
    self.body.append(f'<div class="tinyk-quiz" id="{node["quiz_id"]}"><fieldset>')


def _depart_quiz(self, node: quiz) -> None:
    import html

    from tinyk.courseware.quiz import VERDICTS

    words = [("none", QUIZ_NONE), *VERDICTS.items()]
    self.body.append(
        f'</fieldset><button type="button" class="tinyk-quiz-check btn btn-sm">{QUIZ_CHECK}</button>'
        '<div class="tinyk-quiz-feedback" role="status" aria-live="polite"></div>'
        + "".join(f'<p class="tinyk-quiz-word" data-word="{key}" hidden>{html.escape(text)}</p>'
                  for key, text in words)
        + "</div>\n")


def _visit_quiz_question(self, node: quiz_question) -> None:
    self.body.append('<legend class="tinyk-quiz-question">')


def _depart_quiz_question(self, node: quiz_question) -> None:
    self.body.append("</legend>")


def _visit_quiz_choice(self, node: quiz_choice) -> None:
    import html

    choice = f'{node["quiz_id"]}-{node["number"]}'
    correct = "true" if node["correct"] else "false"
    # A label that is only maths ($(-1, 1)$) gives the radio button no accessible name once
    # MathJax has typeset it: its TeX, which reads as the numbers, names it instead.
    text = next(iter(node.findall(quiz_choice_text)), None)
    only_maths = text is not None and all(isinstance(c, nodes.math) or not c.astext().strip()
                                          for c in text.children)
    name = f' aria-label="{html.escape(text.astext(), quote=True)}"' if only_maths else ""
    self.body.append(f'<div class="tinyk-quiz-choice"><input type="radio" name="{node["quiz_id"]}" '
                     f'id="{choice}" value="{node["number"]}" data-correct="{correct}"{name}>')


def _depart_quiz_choice(self, node: quiz_choice) -> None:
    self.body.append("</div>")


def _visit_quiz_choice_text(self, node: quiz_choice_text) -> None:
    self.body.append(f'<label for="{node.parent["quiz_id"]}-{node.parent["number"]}">')


def _depart_quiz_choice_text(self, node: quiz_choice_text) -> None:
    self.body.append("</label>")


def _visit_quiz_explanation(self, node: quiz_explanation) -> None:
    self.body.append('<div class="tinyk-quiz-explanation" hidden>')


def _depart_quiz_explanation(self, node: quiz_explanation) -> None:
    self.body.append("</div>")


_HTML_FIXES = (
    ('<summary><span class="toctree-toggle" role="presentation">',
     '<summary aria-label="Show or hide the sections of this entry">'
     '<span class="toctree-toggle" role="presentation">'),
    ('<div role="list" class="citation-list">', '<div class="citation-list">'),
)

# The Chinese edition's footer: the theme writes translate("By"), a space, the author, and its
# Chinese for "By" ends in a full-width colon (U+FF1A), which carries its own space: no space after it.
_AUTHOR_ZH = (re.compile("(<p class=\"component-author\">\\s*\u4f5c\u8005\uff1a) +"), r"\g<1>")

# The Chinese edition's words for the interface around a page's content, from
# locale/zh_CN/interface.po: the theme's labels, and the solution toggles' words (which
# tinyk.courseware.exercises.book_version puts in cell metadata in English: cell metadata is part of
# the execution cache's key, and the notebooks must not execute again for a second
# language). Each replaces an attribute's whole value or an element's whole text.
_INTERFACE_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title")


def _interface_zh(app) -> list[tuple[re.Pattern[str], str]]:
    import html

    from tinyk_map import WORDS as MAP_WORDS  # written in Chinese by its directive, as
    from tinyk_playground import WORDS as PLAYGROUND_WORDS  # these are by theirs

    from tinyk.courseware.catalogues import interface_catalogue, read_catalogue
    from tinyk.courseware.quiz import VERDICTS
    from tinyk.courseware.student_markdown import STUDENT_WORDS

    site_words = set(VERDICTS.values())  # a quiz's verdicts: the student notebooks' and the site's
    words = {str(m.id): str(m.string) for m in read_catalogue(interface_catalogue(Path(app.srcdir)))
             if m.id and m.string and (m.id not in STUDENT_WORDS or m.id in site_words)  # those are
             and m.id not in _LANGUAGE_LINK  # the student notebooks', and the language link's
             and m.id not in PLAYGROUND_WORDS and m.id not in MAP_WORDS}
    fixes = []
    for english, chinese in words.items():
        old, new = html.escape(english, quote=True), html.escape(chinese, quote=True)
        attribute = re.compile(rf'(\s(?:{"|".join(_INTERFACE_ATTRIBUTES)})="){re.escape(old)}"')
        fixes.append((attribute, rf'\g<1>{new}"'))
        fixes.append((re.compile(rf">(\s*){re.escape(html.escape(english, quote=False))}(\s*)<"),
                      rf">\g<1>{html.escape(chinese, quote=False)}\g<2><"))
    return fixes


_HEADER_BUTTONS = '<div class="article-header-buttons">'
# The link to the other edition names it in both languages; its Chinese words are in
# interface.po, under these English ones (and never replace page text: see _interface_zh).
_LANGUAGE_LINK = ("Chinese edition", "Chinese", "English edition")


def _other_edition(app, this: str) -> tuple[str, str] | None:
    """(the other edition's folder relative to this one's root, the link to it); None for a
    book without the Chinese edition's interface catalogue (nothing to link to)."""
    import html

    from tinyk.courseware.catalogues import LANGUAGE, translated

    catalogue = Path(app.srcdir) / "locale" / LANGUAGE / "interface.po"
    if not catalogue.is_file():
        return None
    words = translated(catalogue)
    missing = [w for w in _LANGUAGE_LINK if w not in words]
    if missing:
        raise KeyError(f"{catalogue.name} has no translation of {missing}")
    zh = {w: html.escape(words[w], quote=True) for w in _LANGUAGE_LINK}
    if this == "en":
        name = f"{zh['Chinese edition']} (Chinese edition)"
        return "zh/", ('<a class="btn btn-sm tinyk-language" href="{href}" hreflang="zh-CN" lang="zh-CN" '
                       f'title="{name}" aria-label="{name}">{zh["Chinese"]}</a>')
    name = f"{zh['English edition']}\uff08English edition\uff09"  # the Chinese first, as a term is glossed
    return "../", ('<a class="btn btn-sm tinyk-language" href="{href}" hreflang="en" lang="en" '
                   f'title="{name}" aria-label="{name}">'
                   '<span class="tinyk-long">English</span><span class="tinyk-short">EN</span></a>')


def edition(app) -> str:
    """``"zh"`` in the Chinese edition's build (``language = zh_CN``), ``"en"`` otherwise."""
    return "zh" if str(app.config.language or "en").startswith("zh") else "en"


_CAPTION = re.compile(r'(<span class="caption-text">)([^<]+)(</span>)')


def _root_catalogue(app) -> dict[str, str]:
    """The root page's translations: the table of contents' part captions are among its
    messages, but the navigation bar is drawn from the untranslated table."""
    import html

    from tinyk.courseware.catalogues import read_catalogue

    for folder in app.config.locale_dirs:
        path = Path(app.srcdir, folder, str(app.config.language), "LC_MESSAGES", app.config.root_doc + ".po")
        if path.is_file():
            return {html.escape(str(m.id), quote=False): html.escape(str(m.string), quote=False)
                    for m in read_catalogue(path) if m.id and m.string}
    return {}


def _rewrite_pages(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out, this = Path(app.outdir), edition(app)
    link = _other_edition(app, this)
    # In order: an accessibility fix adds a name that the Chinese edition then translates.
    fixes = _HTML_FIXES
    interface = [*_interface_zh(app), _AUTHOR_ZH] if this == "zh" else []
    captions = _root_catalogue(app) if this == "zh" else {}
    for page in out.rglob("*.html"):
        rel = page.relative_to(out)
        if rel.parts[0] in ("zh", "_static", "_sources"):  # the Chinese edition's build writes its own
            continue
        text = page.read_text(encoding="utf-8")
        fixed = text
        for old, new in fixes:
            fixed = fixed.replace(old, new)
        for pattern, words in interface:
            fixed = pattern.sub(lambda m, words=words: m.expand(words), fixed)
        if captions:
            fixed = _CAPTION.sub(lambda m: m[1] + captions.get(m[2], m[2]) + m[3], fixed)
        if link and _HEADER_BUTTONS in fixed and "tinyk-language" not in fixed:
            href = "../" * (len(rel.parts) - 1) + link[0] + rel.as_posix()
            fixed = fixed.replace(_HEADER_BUTTONS, _HEADER_BUTTONS + link[1].format(href=href), 1)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def _add_static(app):
    app.config.html_static_path.append(str(Path(__file__).resolve().parent.parent / "_static"))


def _add_course_model(app):
    if app.builder.format != "html" or not app.config.tinyk_course_model:
        return  # the gettext builder of the Chinese edition's catalogues needs no model
    from tinyk.web.onnx_export import export_course_model
    from tinyk.web.playground import write_example

    static = Path(app.doctreedir).parent / "web-static"  # _build/web-static, shared by both editions
    static.mkdir(parents=True, exist_ok=True)
    # The two editions may build at once (make's site-build): one exports, the other exports
    # SmolLM2 meanwhile (each takes half a minute on one core), then finds this model's files
    # made; the first then finds SmolLM2's made.
    with open(static / ".models.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from tinyk_playground import export_smollm2

            export_smollm2(app)
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        export_course_model(static / "models", reuse=True)
        write_example(static / "models")  # what the playground shows without WebAssembly
    app.config.html_static_path.append(str(static))


def setup(app):
    # False: a book without the 05.7 model's files in _static/models (a test's scratch book)
    app.add_config_value("tinyk_course_model", True, "html", bool)
    app.connect("builder-inited", _add_static)
    app.connect("builder-inited", _add_course_model)
    app.connect("builder-inited", _chinese_figures)
    app.connect("builder-inited", _chinese_outputs)
    app.connect("doctree-read", _chinese_page)
    app.connect("doctree-resolved", _alt_text_from_png)
    app.add_css_file("tinyk.css")
    app.add_js_file("tinyk-quiz.js", loading_method="defer")
    app.add_js_file("tinyk-math.js", loading_method="defer")  # a formula too wide for its column
    app.add_directive("quiz", QuizDirective)
    app.setup_extension("tinyk_playground")
    app.setup_extension("tinyk_map")
    app.setup_extension("tinyk_bib")  # the references' labels, [TLI+23a]
    app.add_node(quiz, html=(_visit_quiz, _depart_quiz))
    app.add_node(quiz_question, html=(_visit_quiz_question, _depart_quiz_question))
    app.add_node(quiz_choice, html=(_visit_quiz_choice, _depart_quiz_choice))
    app.add_node(quiz_choice_text, html=(_visit_quiz_choice_text, _depart_quiz_choice_text))
    app.add_node(quiz_explanation, html=(_visit_quiz_explanation, _depart_quiz_explanation))
    app.connect("source-read", _read_as_book)
    app.connect("env-get-outdated", _outdated_when_package_changes)
    app.connect("html-page-context", _link_source, priority=400)  # before the theme's buttons
    app.connect("html-page-context", _colab_opens_student_version, priority=600)  # after launch buttons
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)  # after all scripts
    app.connect("build-finished", _rewrite_pages)
    app.connect("build-finished", _publish_student_notebooks)
    app.connect("build-finished", _publish_chinese_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
