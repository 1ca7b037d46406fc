"""``tinyk``: the course's one command line (also ``python -m tinyk``).

    tinyk --help                      the commands, one line each
    tinyk COMMAND --help              one command's options

    tinyk check --section architecture [--out qa/checks.json]   # 05.8's checks
    tinyk validate | release | grade | merge | feedback         # grading (For instructors)
    tinyk report | export | similarity                          # what grading left behind
    tinyk course check | students | set-repo URL                # the checkout and student/
    tinyk translations update | check | build                   # the Chinese edition
    tinyk onnx --out DIR | tinyk web-model --out DIR            # the in-page models

Each command is the same as its module's own command line (``python -m tinyk.grading
grade`` is ``tinyk grade``), which stays as an alias. A command's module is imported only
when that command runs, so ``tinyk --help`` loads nothing of grading or translations.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import NamedTuple

_PROG = "tinyk"


class _Command(NamedTuple):
    module: str | None  # whose main(argv, prog) runs the command (None: check, below)
    forward: bool  # True: the command's name is passed on (grading's commands), False: only what follows
    help: str


_GRADING = "tinyk.grading.cli"
COMMANDS: dict[str, _Command] = {
    "check": _Command(None, False, "run a section's checks and write their JSON record"),
    "validate": _Command(_GRADING, True, "check nbgrader metadata and that solutions pass their tests"),
    "release": _Command(_GRADING, True, "write student versions (nbgrader generate_assignment)"),
    "grade": _Command(_GRADING, True, "autograde submissions into a CSV gradebook (Linux, in a sandbox)"),
    "merge": _Command(_GRADING, True, "join the CSVs of 'grade --shard' runs into one CSV"),
    "feedback": _Command(_GRADING, True, "nbgrader's HTML feedback per student (Linux, in a sandbox)"),
    "report": _Command(_GRADING, True, "the class report: scores, statuses and named mistakes (HTML, CSV)"),
    "export": _Command(_GRADING, True, "points per notebook in an LMS's grade import CSV"),
    "similarity": _Command(_GRADING, True, "answers that share code across students (copydetect), as HTML"),
    "course": _Command("tinyk.courseware.course", False,
                       "the checkout: check it, regenerate student/, set the repository address"),
    "translations": _Command("tinyk.translations.cli", False,
                             "the Chinese edition: update and check its catalogues, build it"),
    "onnx": _Command("tinyk.web.onnx_export", False, "export the 05.7 model as an ONNX graph"),
    "web-model": _Command("tinyk.web.onnx_web", False, "export SmolLM2 for the in-page model"),
}


def _help() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: {_PROG} COMMAND [options]", "", "tinyk course tools.", "", "commands:"]
    lines += [f"  {name:<{width}}  {command.help}" for name, command in COMMANDS.items()]
    lines += ["", f"'{_PROG} COMMAND --help' shows a command's options."]
    return "\n".join(lines)


def check(argv: list[str] | None = None, prog: str = f"{_PROG} check") -> int:
    """``tinyk check``: run a section's checks (section 05.8), one line each; 1 if any fails."""
    from tinyk.lessons.architecture_checks import NOT_PROVEN, SECTIONS, run_checks, write_record

    parser = argparse.ArgumentParser(prog=prog, description=COMMANDS["check"].help)
    parser.add_argument("--section", choices=sorted(SECTIONS), default="architecture")
    parser.add_argument("--out", type=Path, help="where to write the JSON record")
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


def main(argv: list[str] | None = None) -> int:
    """The ``tinyk`` command: run ``COMMAND`` with the options that follow it."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_help())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"{_PROG}: unknown command {name!r}; the commands are: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    command = COMMANDS[name]
    if command.module is None:
        return check(rest)
    run = importlib.import_module(command.module).main
    if command.forward:
        return run([name, *rest], prog=_PROG)
    return run(rest, prog=f"{_PROG} {name}")


if __name__ == "__main__":
    sys.exit(main())
