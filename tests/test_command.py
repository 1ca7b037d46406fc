"""The ``tinyk`` command: one command line with subcommands, as nbgrader's and otter's users
expect; each module's ``python -m`` form stays as an alias."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tinyk.__main__ import COMMANDS, main
from tinyk.grading import cli as grading_cli


def _subcommands(parser) -> dict[str, str]:
    """A parser's subcommands and their one-line help, in order."""
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return {choice.dest: choice.help for choice in action._choices_actions}


def test_the_installed_script_lists_every_command():
    script = Path(sys.executable).with_name("tinyk")
    assert script.is_file(), f"{script}: pip install -e . installs the tinyk command ([project.scripts])"
    run = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    listed = [line.split()[0] for line in run.stdout.splitlines() if line.startswith("  ")]
    assert listed == list(COMMANDS) and len(listed) == 13


def test_every_grading_command_is_a_tinyk_command_with_the_same_help():
    grading = _subcommands(grading_cli.parser())
    assert len(grading) == 8
    assert {name: COMMANDS[name].help for name in grading} == grading


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_has_help_under_its_tinyk_name(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: tinyk {name} ")


def test_help_loads_nothing_of_grading_reports_or_translations():
    code = ("import sys, contextlib, io\nfrom tinyk.__main__ import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])\n"
            "print([m for m in sys.modules if m.startswith(('tinyk.grading', 'tinyk.translations', "
            "'tinyk.reports', 'nbgrader'))])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    # but the package's words, which the model says its refusals with (tests/test_package_layers.py)
    assert run.stdout.strip() == "['tinyk.translations', 'tinyk.translations.package_catalogue']"


def test_an_unknown_command_is_named_with_the_list(capsys):
    assert main(["gradee", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'gradee'" in err and "grade, merge" in err
    assert main([]) == 2  # no command: the list, and the status of a usage error


@pytest.mark.parametrize("argv", [["--source", "S", "grade", "subs", "--out", "g.csv"],
                                  ["grade", "subs", "--out", "g.csv", "--source", "S"]])
def test_source_is_taken_before_or_after_the_grading_command(argv):
    args = grading_cli.parser("tinyk").parse_args(argv)
    assert args.source == Path("S") and args.submissions == Path("subs")


def test_source_left_out_is_none():
    assert grading_cli.parser("tinyk").parse_args(["report", "g.csv", "--out", "r"]).source is None


def test_the_grading_commands_load_nbgrader_only_when_a_command_needs_it():
    """A plain install (Colab's) has no nbgrader: the command line must still start and say
    what is missing, so nothing of it is imported before a command runs (tests/test_wheel.py)."""
    code = "import sys, tinyk.grading.cli\nprint(sorted(m for m in sys.modules if m.startswith('nbgrader')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
