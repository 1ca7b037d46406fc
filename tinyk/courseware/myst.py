"""The book's Markdown parser, for the code that reads a page's blocks as the book does: the
Chinese student notebooks (:mod:`tinyk.courseware.chinese_notebooks`) and the concept checks
(:mod:`tinyk.courseware.quiz`), sections "For instructors" and 05.2 onward."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["EXTENSIONS", "myst_parser"]

EXTENSIONS = {"colon_fence", "dollarmath", "amsmath", "deflist", "substitution"}  # as _config.yml


@functools.cache
def myst_parser() -> MarkdownIt:
    """The book's Markdown parser (markdown-it with MyST and ``_config.yml``'s extensions), as
    Sphinx's gettext builder reads a page's blocks."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=EXTENSIONS), RendererHTML)
