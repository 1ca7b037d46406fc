"""The references' labels: the alpha style's, with a year's letter kept.

LLaMA and Llama 2 share a first author and a year, so ``book/references.bib`` gives their years
as ``2023a`` and ``2023b``: the author-year citations of the pages read "Touvron et al., 2023a"
and "2023b". pybtex's alpha labels take a year's last two characters, which made ``[TLI+3a]`` of
``2023a``; :class:`YearLetterLabels` takes the two digits and then the letter, ``[TLI+23a]``.
The bibliography's style, ``tinyk_alpha`` (``bibtex_default_style`` in ``_config.yml``), is
pybtex's alpha with these labels.
"""

from __future__ import annotations

import re

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels.alpha import LabelStyle as AlphaLabelStyle

STYLE = "tinyk_alpha"
_LETTERED = re.compile(r"(\d{4})([a-z])")


class YearLetterLabels(AlphaLabelStyle):
    """alpha's label of an entry, ``[TLI+23a]`` for the year ``2023a`` (alpha alone: ``[TLI+3a]``)."""

    def format_label(self, entry):
        lettered = _LETTERED.fullmatch(entry.fields.get("year", ""))
        if not lettered:
            return super().format_label(entry)
        fields = {**entry.fields, "year": lettered.group(1)}
        plain = Entry(entry.type, fields=fields, persons=entry.persons)
        return super().format_label(plain) + lettered.group(2)


class Style(AlphaStyle):
    default_label_style = YearLetterLabels


def setup(app):
    register_plugin("pybtex.style.formatting", STYLE, Style, force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
