"""The package's own code, shown on a page (the walk-throughs of sections 05.2 to 05.6).

The book executes its notebooks when it is built, so a cell that returns
``show_source(tinyk.apply_rotary_emb)`` shows the code of the installed package as it is at
that moment: the page cannot drift from the package. The same cell shows the same code in
Jupyter and Colab.
"""

from __future__ import annotations

import html
import inspect
from dataclasses import dataclass
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

__all__ = ["SourceView", "show_source"]


@dataclass(frozen=True)
class SourceView:
    """Lines ``first..first+len(lines)-1`` of ``path``: plain text with line numbers, or HTML."""

    path: str
    first: int
    lines: tuple[str, ...]

    @property
    def code(self) -> str:
        return "".join(self.lines)

    @property
    def title(self) -> str:
        return f"{self.path}, lines {self.first}–{self.first + len(self.lines) - 1}"

    def __repr__(self) -> str:
        width = len(str(self.first + len(self.lines) - 1))
        body = "".join(f"{self.first + i:>{width}}  {line}" for i, line in enumerate(self.lines))
        return f"# {self.title}\n{body}"

    def _repr_html_(self) -> str:
        # Token classes, not inline colours: the page's own highlighting style (the book
        # theme's is made for contrast) colours them.
        formatter = HtmlFormatter(linenos="inline", linenostart=self.first, cssclass="highlight")
        return (f'<figure class="tinyk-source"><figcaption><code>{html.escape(self.title)}'
                f"</code></figcaption>{highlight(self.code, PythonLexer(), formatter)}</figure>")


def show_source(obj: object, start: str | None = None, stop: str | None = None) -> SourceView:
    """The source of ``obj`` (a function, class or method of ``tinyk``), read when called.

    ``start``/``stop`` cut it to a passage: from the first line containing ``start`` to the
    first line after it containing ``stop``, both included. A text that is not found is an
    error naming it, so a walk-through whose code moved fails loudly instead of showing the
    wrong lines.
    """
    try:
        lines, first = inspect.getsourcelines(obj)  # type: ignore[arg-type]
        path = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source: no source for {obj!r} ({err})") from err
    begin, end = 0, len(lines)
    if start is not None:
        begin = _find(lines, start, 0, "start", obj)
    if stop is not None:
        end = _find(lines, stop, begin + (start is not None), "stop", obj) + 1
    package_root = Path(__file__).resolve().parents[2]
    shown = Path(path or "?").resolve()
    name = shown.relative_to(package_root).as_posix() if shown.is_relative_to(package_root) else shown.name
    return SourceView(name, first + begin, tuple(lines[begin:end]))


def _find(lines: list[str], text: str, after: int, which: str, obj: object) -> int:
    for i in range(after, len(lines)):
        if text in lines[i]:
            return i
    name = getattr(obj, "__qualname__", repr(obj))
    raise ValueError(f"show_source: {which}={text!r} is not a line of {name} "
                     f"(after line {after + 1} of its source)")
