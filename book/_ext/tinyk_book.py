"""Sphinx extension of the tinyk book: notebooks are read in their book view.

- ``source-read``: a notebook's JSON is replaced by :func:`tinyk.exercises.book_version`
  before myst-nb parses and executes it, so no nbgrader marker or hidden test reaches the
  page, and the code that runs is the code that is shown (plus one removed cell that
  makes errors print as one line).
- ``html-page-context``: with ``html_copy_source`` off, each page's download link points at
  a copy written here: a notebook's student view (no solutions, no hidden tests), or a
  markdown page's own source.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tinyk.exercises import book_version, student_version

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


def _publish_source(app, pagename, templatename, context, doctree):
    if doctree is None or pagename not in app.env.all_docs:
        return
    path = Path(app.env.doc2path(pagename))
    target = Path(app.outdir, "_sources", pagename + path.suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".ipynb":
        student = student_version(json.loads(path.read_text(encoding="utf-8")))
        target.write_text(json.dumps(student, indent=1, ensure_ascii=False), encoding="utf-8")
    else:
        shutil.copyfile(path, target)
    context["sourcename"] = pagename + path.suffix


def setup(app):
    app.connect("source-read", _read_as_book)
    app.connect("html-page-context", _publish_source, priority=400)  # before the theme's buttons
    return {"parallel_read_safe": True, "parallel_write_safe": True}
