"""Course housekeeping: the repository address, the Colab setup cells, the student notebooks.

The address lives in ``_config.yml`` (``repository.url``, which Jupyter Book's launch
buttons read), beside the published site's address (``html.baseurl``). Every other copy is
derived from them and rewritten by one command::

    python -m tinyk.courseware.course set-repo https://github.com/you/your-fork
    python -m tinyk.courseware.course students     # regenerate student/ from notebooks/
    python -m tinyk.courseware.course check        # exit 1 if any copy disagrees or student/ is stale

Copies: each notebook's setup cell, ``pyproject.toml``'s ``Repository`` URL
(:mod:`tinyk.courseware.addresses`), and the student versions in ``student/`` and ``student/zh/``
(:mod:`tinyk.courseware.student_versions`; the book's *For instructors* page). Where the checkout is:
:mod:`tinyk.courseware.checkout`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tinyk.courseware.addresses import (
    address_problems,
    repository_url,
    site_url,
    write_addresses,
)
from tinyk.courseware.checkout import (
    NOTEBOOKS,
    STUDENTS,
    ZH,
    NotACheckout,
    course_root,
    notebook_paths,
)
from tinyk.courseware.student_versions import (
    stale_students,
    students,
)

__all__ = ["check", "main", "set_repo"]


def check(root: Path | None = None) -> list[str]:
    """Every place that should hold the address and does not, and every stale student
    notebook, as readable lines."""
    root = course_root(root)
    problems = address_problems(root)
    try:
        site_url(root)
    except ValueError as err:  # the student versions link to the site: nothing to compare them with
        return [*problems, str(err)]
    return problems + stale_students(root)


def set_repo(url: str, root: Path | None = None) -> list[Path]:
    """Write ``url`` into ``_config.yml`` (with its GitHub Pages address as the site),
    ``pyproject.toml`` and every setup cell, then regenerate the student notebooks."""
    root = course_root(root)
    return write_addresses(url, root) + students(root)[0]


def _report_students(root: Path) -> int:
    changed, missing = students(root)
    for path in changed:
        print("updated" if path.exists() else "removed", path.relative_to(root))
    print(f"{len(notebook_paths(root))} student notebook(s) in {STUDENTS}/ and in {STUDENTS}/{ZH}/, "
          f"{len(changed)} changed")
    for line in missing:
        print(line, file=sys.stderr)
    if missing:
        print(f"{len(missing)} message(s) without a Chinese translation: their notebooks in "
              f"{STUDENTS}/{ZH}/ were not written; `python -m tinyk.translations update` adds them "
              f"to the catalogues", file=sys.stderr)
    return 1 if missing else 0


def _report_check(root: Path) -> int:
    problems = check(root)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"repository address {repository_url(root)} agrees everywhere; "
              f"{STUDENTS}/ and {STUDENTS}/{ZH}/ are up to date with {NOTEBOOKS}/")
    return 1 if problems else 0


def main(argv: list[str] | None = None, prog: str = "python -m tinyk.courseware.course") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=None,
                        help="the course checkout (default: the package's own, or the working folder)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", parents=[common],
                   help="exit 1 if a copy of the repository address disagrees or student/ is stale")
    set_parser = sub.add_parser("set-repo", parents=[common],
                                help="rewrite the repository address everywhere")
    set_parser.add_argument("url")
    sub.add_parser("students", parents=[common],
                   help=f"regenerate {STUDENTS}/ (student versions) from {NOTEBOOKS}/")
    args = parser.parse_args(argv)
    try:
        root = course_root(args.root)
    except NotACheckout as err:
        print(err, file=sys.stderr)
        return 2
    if args.command == "set-repo":
        for path in set_repo(args.url, root):
            print("updated", path.relative_to(root))
        return 0
    if args.command == "students":
        return _report_students(root)
    return _report_check(root)


if __name__ == "__main__":
    sys.exit(main())
