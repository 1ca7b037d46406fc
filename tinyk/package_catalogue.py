"""The package's own Chinese words (course: the Chinese edition, the instructors' page).

Chinese learners read the labels of the mistake catalogue (:mod:`tinyk.mistakes`) in their
feedback, and instructors the class report's pages (:mod:`tinyk.report_words`). Their Chinese
lives in ``tinyk/locale/zh_CN.po``, a gettext catalogue shipped inside the package, so the
class report needs no course checkout: ``msgid`` the English, ``msgstr`` the Chinese, and a
``msgctxt`` where one English word takes two Chinese ones (a chart's axis, a status's name).

:func:`chinese` reads it (through :func:`tinyk.catalogues.read_catalogue`) and stops, naming
the English, when a word has no Chinese; :func:`tinyk.package_words.problems` lists every
word the package needs that the catalogue lacks (``python -m tinyk.translations check`` runs
it), and the term base checks the catalogue's Chinese like the book's (:mod:`tinyk.terms`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from tinyk.catalogues import read_catalogue

__all__ = ["PATH", "SHOWN", "MissingChinese", "chinese"]

PATH = Path(__file__).resolve().parent / "locale" / "zh_CN.po"
SHOWN = "tinyk/locale/zh_CN.po"  # the catalogue as messages name it


class MissingChinese(LookupError):
    """A word the package shows in Chinese has no translation in its catalogue."""


@functools.cache
def _translations(path: Path) -> dict[tuple[str, str], str]:
    """(context, English) -> Chinese of the translated, not fuzzy messages at ``path``."""
    return {(m.context or "", str(m.id)): str(m.string)
            for m in read_catalogue(path) if m.id and m.string and not m.fuzzy}


def chinese(english: str, context: str = "") -> str:
    """The Chinese of ``english`` (in ``context``, when the catalogue gives it one);
    :class:`MissingChinese` naming the English and the catalogue when it has none."""
    try:
        return _translations(PATH)[(context, english)]
    except KeyError:
        where = f" in the context {context!r}" if context else ""
        raise MissingChinese(f"{SHOWN} has no Chinese for {english!r}{where}: add it "
                             f"(`python -m tinyk.translations check` lists every missing one)") from None
