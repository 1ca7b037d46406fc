"""``python -m tinyk``: the course's command line.

    python -m tinyk check --section architecture [--out qa/checks.json]

Runs the checks of a section (see :mod:`tinyk.checks`), prints one line per check and
exits with status 1 if any fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tinyk.checks import NOT_PROVEN, SECTIONS, run_checks, write_record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyk", description="tinyk course tools")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run a section's checks and write their JSON record")
    check.add_argument("--section", choices=sorted(SECTIONS), default="architecture")
    check.add_argument("--out", type=Path, help="where to write the JSON record")
    args = parser.parse_args(argv)

    results = run_checks(args.section)
    for r in results:
        print(f"{'PASS' if r.passed else 'FAIL'}  {r.name}: measured {r.measured:.2e} "
              f"(tolerance {r.tolerance:.0e})")
    print("not proven by these checks: " + "; ".join(NOT_PROVEN))
    if args.out is not None:
        write_record(results, args.section, args.out)
        print(f"record written to {args.out}")
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
