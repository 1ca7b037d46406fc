"""Sphinx extension of the tinyk book: notebooks are read in their book view.

- ``source-read``: a notebook's JSON is replaced by :func:`tinyk.exercises.book_version`
  before myst-nb parses and executes it, so no nbgrader marker or hidden test reaches the
  page, and the code that runs is the code that is shown (plus one removed cell that
  makes errors print as one line).
- ``html-page-context``: each page gets a download link (``html_copy_source`` is off, so
  Sphinx would give none). Sphinx then copies the page's original source there.
- ``html-page-context`` (after the theme's launch buttons): the Colab button opens the
  page's student version, ``student/NAME.ipynb`` (no solutions, no hidden tests), not the
  source the page was built from; a student version missing from ``student/`` is a warning.
- ``html-page-context`` (late): exact duplicate ``<script>`` entries are dropped. The
  sphinx-thebe configuration script is registered twice in a Jupyter Book build, and its
  second ``const THEBE_JS_URL`` is a SyntaxError on every page.
- ``build-finished``: every notebook's copy is overwritten with its student version: the
  committed ``student/NAME.ipynb`` that Colab opens, or (for a notebook without one)
  :func:`tinyk.exercises.student_version`. This must come last: Sphinx copies originals
  while it writes pages.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.util import logging

from tinyk.course import NOTEBOOKS, REGENERATE, STUDENTS
from tinyk.exercises import book_version, student_version

_LOG = logging.getLogger(__name__)
_COLAB_SOURCE = re.compile(rf"^(https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/)"
                           rf"{NOTEBOOKS}/([^/]+\.ipynb)$")

# Run first, removed from the page: a cell that is meant to fail shows its one-line error
# message, not a traceback through the package's source (learners' kernels are unaffected).
_SHORT_ERRORS = {"cell_type": "code", "execution_count": None, "outputs": [],
                 "metadata": {"tags": ["remove-cell"]},
                 "source": 'get_ipython().run_line_magic("xmode", "minimal")'}


def _read_as_book(app, docname, source):
    if Path(app.env.doc2path(docname)).suffix == ".ipynb":
        nb = book_version(json.loads(source[0]))
        nb["cells"].insert(0, dict(_SHORT_ERRORS, id="tinyk-short-errors"))
        source[0] = json.dumps(nb)


def _link_source(app, pagename, templatename, context, doctree):
    if doctree is not None and pagename in app.env.all_docs:
        context["sourcename"] = pagename + Path(app.env.doc2path(pagename)).suffix


def _colab_opens_student_version(app, pagename, templatename, context, doctree):
    def rewrite(node):
        if isinstance(node, list):
            for item in node:
                rewrite(item)
        elif isinstance(node, dict):
            match = _COLAB_SOURCE.match(str(node.get("url", "")))
            if match:
                node["url"] = f"{match.group(1)}{STUDENTS}/{match.group(2)}"
                student = Path(app.srcdir, STUDENTS, match.group(2))
                if student.parent.is_dir() and not student.is_file():
                    _LOG.warning(f"{pagename}: its Colab button opens {STUDENTS}/{match.group(2)}, "
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
            committed = Path(app.srcdir, STUDENTS, path.name)
            if path.parent.name == NOTEBOOKS and committed.is_file():  # what Colab opens, too
                target.write_bytes(committed.read_bytes())
                continue
            student = student_version(json.loads(path.read_text(encoding="utf-8")))
            target.write_text(json.dumps(student, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def setup(app):
    app.connect("source-read", _read_as_book)
    app.connect("html-page-context", _link_source, priority=400)  # before the theme's buttons
    app.connect("html-page-context", _colab_opens_student_version, priority=600)  # after launch buttons
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)  # after all scripts
    app.connect("build-finished", _publish_student_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
