"""``python -m tinyk.translations update|check|build``: the Chinese edition's command line
(the book's *For instructors* page; :mod:`tinyk.translations`)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from tinyk.courseware.catalogues import catalogues
from tinyk.translations.builds import build
from tinyk.translations.checks import problems
from tinyk.translations.updates import stale, update

__all__ = ["main"]


def _counts(found: list[str]) -> str:
    kinds = Counter(line.rsplit(": ", 1)[-1] for line in found)
    return ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())


def main(argv: list[str] | None = None, prog: str = "python -m tinyk.translations") -> int:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="The Chinese edition's translations: gettext catalogues "
                                                 "of the book's own pages.")
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
    from tinyk.translations import package_words

    found = stale() + problems() + package_words.problems()  # the package's own words too
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} problem(s) in the Chinese translation: {_counts(found)}", file=sys.stderr)
        return 1
    print(f"{len(catalogues())} catalogues, every message translated")
    return 0
