"""What a student wrote, made inert in the instructor's files (course section "For instructors").

A student's name (their folder's), their answers' outputs and the grader's ``detail`` (which
may quote an exception the student raised) end up in the CSV files and the HTML pages the
instructor opens. Nothing of them may run there as code:

- **CSV** (``grades.csv``, ``class_report.csv``, the LMS files, all written by
  :func:`write_csv`): a spreadsheet reads a cell that starts with ``=``, ``+``, ``-``, ``@``,
  a tab or a carriage return as a formula (``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM(1)``).
  As OWASP's "CSV Injection" guidance recommends, :func:`csv_cell` puts a single quote ``'``
  before such a cell, which the spreadsheet then shows as text. A number (``-1.5``, ``+3``,
  ``2e-3``) is left as it is. So that the quote can be taken off again, a cell that already
  starts with quotes followed by one of those characters gets one more; :func:`csv_value`
  takes one off, and the pair gives back every text exactly (the gradebook's readers use it).
- **HTML** (nbgrader's feedback, the class report): a page carries :data:`CSP`, a
  Content-Security-Policy that lets no script run (nor anything be fetched but the page's
  own inline styles and ``data:`` images); the student's HTML and Markdown (cells, outputs)
  pass through :func:`clean_html` (bleach, the sanitiser nbconvert itself uses), which keeps
  text, tables, lists, links and images and shows any other tag as text; scripts, event
  handlers (``onerror=``), frames, objects and ``javascript:`` links never reach the page.
  :func:`page_problems` lists what a page would still run or embed (the feedback checks its
  pages with it before giving them out; the tests plant every kind).
"""

from __future__ import annotations

import csv
import html.parser
import re
from collections.abc import Iterable
from typing import IO, Any

__all__ = ["CSP", "CSP_META", "clean_html", "csv_cell", "csv_row", "csv_value", "inert_notebook",
           "page_problems", "with_csp", "write_csv"]

# a spreadsheet formula's first characters (OWASP, "CSV Injection")
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: str) -> str:
    """A CSV cell no spreadsheet runs: ``'`` before a text that starts with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return (or with quotes and then one of them); a number
    such as ``-1.5`` unchanged. :func:`csv_value` undoes it."""
    if _NUMBER.fullmatch(value) or not _FORMULA.match(value):
        return value
    return "'" + value


def csv_value(cell: str) -> str:
    """The text :func:`csv_cell` was given: one leading quote off a cell that starts with
    quotes and then ``=``, ``+``, ``-``, ``@``, a tab or a carriage return."""
    return cell[1:] if _QUOTED.match(cell) else cell


def csv_row(row: Iterable[Any]) -> list[str]:
    """Every cell of a row through :func:`csv_cell` (each written as ``str``)."""
    return [csv_cell(str(cell)) for cell in row]


def write_csv(file: IO[str], rows: Iterable[Iterable[Any]], lineterminator: str = "\r\n") -> None:
    """Write ``rows`` to ``file`` (opened with ``newline=""``), every cell through
    :func:`csv_cell`: the one writer of the instructor's CSV files. A row with a carriage
    return in a cell has every cell in double quotes: Python's writer quotes only the
    characters of its own line end, and a reader would end the line at the bare carriage
    return."""
    plain = csv.writer(file, lineterminator=lineterminator)
    quoted = csv.writer(file, lineterminator=lineterminator, quoting=csv.QUOTE_ALL)
    for row in rows:
        cells = csv_row(row)
        (quoted if any("\r" in cell for cell in cells) else plain).writerow(cells)


# No script, no plugin, no frame, nothing fetched: the page's inline styles and data: images only.
CSP = ("default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
       "form-action 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:")
CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'

_TAGS = {"a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "div",
         "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "mark", "ol",
         "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "table", "tbody", "td",
         "tfoot", "th", "thead", "tr", "u", "ul", "var"}
_ATTRIBUTES = {"class", "id", "title", "style", "href", "src", "alt", "width", "height", "colspan",
               "rowspan", "align", "border", "start"}


def _attribute(tag: str, name: str, value: str) -> bool:
    """Which attribute stays: a link to the web, a page anchor or an e-mail address; an
    image from a ``data:`` address only (nothing fetched); the rest of :data:`_ATTRIBUTES`."""
    if name == "href":
        return tag == "a" and re.match(r"(https?:|mailto:|#|[^:]*$)", value.strip(), re.I) is not None
    if name == "src":
        return tag == "img" and value.strip().lower().startswith("data:image/")
    return name in _ATTRIBUTES


def clean_html(fragment: str) -> str:
    """``fragment`` with only text, tables, lists, links and ``data:`` images left as HTML:
    any other tag (``script``, ``iframe``, ``svg``, ``style``...) shown as text, every other
    attribute (``onerror=``...) and any ``javascript:`` address dropped; styles keep only
    bleach's CSS properties, none of which fetches a file."""
    import bleach
    from bleach.css_sanitizer import CSSSanitizer

    return bleach.clean(fragment, tags=_TAGS, attributes=_attribute,
                        protocols={"http", "https", "mailto", "data"}, strip=False, strip_comments=True,
                        css_sanitizer=CSSSanitizer())


def _markdown_html(source: str, attachments: dict | None = None) -> str:
    """Markdown rendered as nbconvert's feedback renders it (math left as text, anchors
    on headings), then cleaned."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=attachments or {}, allow_harmful_protocols=False)
    return clean_html(MarkdownWithMath(renderer=renderer).render(source))


def _as_markdown_block(cleaned: str) -> str:
    """Clean HTML as a Markdown cell that renders to exactly it: one line that starts with
    ``<div>`` is an HTML block, passed through unchanged (its line ends as ``&#10;``)."""
    return '<div class="inert">' + cleaned.replace("\r", "").replace("\n", "&#10;") + "</div>"


# Outputs shown as nbconvert shows them, none of which runs: text, TeX as text, PNG and JPEG,
# and SVG (nbconvert shows it as an <img> of a data: address, where no script of it runs).
_SHOWN = {"text/plain", "text/latex", "image/png", "image/jpeg", "image/svg+xml"}
_SAFE_TAG = re.compile(r"[A-Za-z0-9_.-]+")


def _inert_output(output: dict) -> None:
    """An output's HTML and Markdown cleaned (Markdown rendered into HTML first), every
    other kind of data but :data:`_SHOWN` dropped (JavaScript, widgets...), and no
    ``isolated`` HTML (which nbconvert shows in an iframe)."""
    if output.get("output_type") not in ("display_data", "execute_result"):
        return  # streams and errors: nbconvert escapes their text
    data = output.get("data", {})
    markdown = data.get("text/markdown")
    if "text/html" in data:
        data["text/html"] = clean_html(_text(data["text/html"]))
    elif markdown is not None:
        data["text/html"] = _markdown_html(_text(markdown))
    for key in [k for k in data if k not in _SHOWN | {"text/html"}]:
        del data[key]
    output["metadata"] = {k: v for k, v in output.get("metadata", {}).items() if k in _SHOWN}


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def inert_notebook(nb: Any) -> Any:
    """A notebook (nbformat 4) whose cells and outputs nbconvert renders inertly, changed in
    place and returned: Markdown cells rendered and cleaned (:func:`clean_html`), kept as
    an HTML block that renders to the cleaned HTML; raw cells cleared; outputs as
    :func:`_inert_output` leaves them; cell tags that are not plain words dropped, and so is
    nbgrader's metadata of a cell whose ``grade_id`` is not one, and the widgets' state
    (which nbconvert writes into a script element)."""
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb["cells"]:
        meta = cell.get("metadata", {})
        if meta.get("tags"):
            meta["tags"] = [t for t in meta["tags"] if _SAFE_TAG.fullmatch(str(t))]
        if "nbgrader" in meta and not _SAFE_TAG.fullmatch(str(meta["nbgrader"].get("grade_id", "x"))):
            del meta["nbgrader"]  # nbgrader's template writes the id as it is: a release's ids are words
        if cell["cell_type"] == "markdown":
            shown = _markdown_html(_text(cell["source"]), cell.get("attachments"))
            cell["source"] = _as_markdown_block(shown)
            cell.pop("attachments", None)  # rendered into data: images already
        elif cell["cell_type"] == "raw":
            cell["source"] = ""
        elif cell["cell_type"] == "code":
            for output in cell.get("outputs", []):
                _inert_output(output)
    return nb


def with_csp(page: str) -> str:
    """A whole HTML page with :data:`CSP_META` first in its head and no ``<script>`` element
    (its own included: the policy would block them, and nothing of the page needs one)."""
    page = re.sub(r"<script\b[^>]*>.*?</script\s*>", "", page, flags=re.S | re.I)
    head = re.search(r"<head\b[^>]*>", page, re.I)
    if head is None:
        raise ValueError("the page has no <head>: the Content-Security-Policy has no place to go")
    return f"{page[:head.end()]}\n{CSP_META}{page[head.end():]}"


class _Audit(html.parser.HTMLParser):
    """What a page would run, embed or fetch, as a browser parses it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.csp = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "iframe", "frame", "object", "embed", "applet", "base", "form"):
            self.problems.append(f"a <{tag}> element")
        for name, value in attrs:
            value = re.sub(r"[\x00-\x20]", "", value or "").lower()
            if name.startswith("on"):
                self.problems.append(f"an event handler {name}= on <{tag}>")
            elif value.startswith(("javascript:", "vbscript:")):
                self.problems.append(f"a {value.split(':')[0]}: address in {name}= of <{tag}>")
            elif name in ("src", "href", "srcdoc", "data", "action", "formaction") and tag not in ("a",) \
                    and not value.startswith(("data:image/", "#")) and value:
                self.problems.append(f"{name}={value[:40]!r} on <{tag}> fetches or runs a file")
        if tag == "meta" and dict(attrs).get("http-equiv", "").lower() == "content-security-policy":
            self.csp = self.csp or dict(attrs).get("content") == CSP

    handle_startendtag = handle_starttag


def page_problems(page: str) -> list[str]:
    """What an HTML page would run, embed or fetch: script, frame, object, embed, base or
    form elements, ``on*=`` attributes, ``javascript:`` addresses, sources other than
    ``data:`` images; and a missing :data:`CSP`. Empty for an inert page."""
    audit = _Audit()
    audit.feed(page)
    audit.close()
    return audit.problems + ([] if audit.csp else ["no Content-Security-Policy meta element"])
