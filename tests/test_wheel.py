"""The package under a plain install, as in Colab: a wheel, not the checkout.

The environment is ``tests/wheel_env.py``'s: the course wheel installed (not editable) in a
virtual environment of its own, with Colab's ipywidgets 7.7.1 and ipykernel 6.17.1. Here it
runs from a temporary folder outside the repository, with no ``PYTHONPATH``: ``import
tinyk`` finds the installed package, never the checkout; the course commands that need the
checkout say so; and 05.6, opened alone as Colab opens it, checks the parts pasted into it.
Every chapter notebook runs in a kernel of the same environment in the notebooks stage
(``tests/test_notebooks.py``), whose outputs the book shows. Marked ``slow``: the first test
to need the environment installs a few dozen packages.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.wheel_env import KERNEL, PROBE, NoCheckout, environment
from tinyk.courseware import checkout as course_checkout

# One worker builds (or finds) the environment for both tests (make runs the unit tests
# with --dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.xdist_group("wheel-install")]
ROOT = course_checkout.ROOT


def _run(cmd: list[str], **kwargs):
    import subprocess

    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="session")
def wheel_env(tmp_path_factory):
    """(the wheel environment, a working folder outside the repo)."""
    try:
        env = environment()
    except NoCheckout as err:
        from tests.optional import missing

        missing(f"{err}: no tracked files to build the wheel from")
    return env, tmp_path_factory.mktemp("wheel-work")


def test_wheel_has_the_package_and_no_course_files(wheel_env):
    installed, work = wheel_env
    python = installed.python
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = _run([str(python), "-c", PROBE], cwd=work, env=env)
    lines = probe.stdout.splitlines()
    assert probe.returncode == 0, probe.stderr
    assert Path(lines[0]).is_relative_to(python.parent.parent), "tinyk comes from the venv, not the checkout"
    assert lines[1] == "7.7.1"
    site = Path(lines[0]).parent.parent
    assert not (site / "notebooks").exists() and not (site / "_config.yml").exists()
    # Every subpackage is in the wheel (pyproject finds them: no list to keep), and the command.
    def packages(root: Path) -> set[str]:
        return {p.parent.relative_to(root).as_posix() for p in (root / "tinyk").rglob("__init__.py")}

    assert packages(site) == packages(ROOT) and {"tinyk", "tinyk/grading"} <= packages(ROOT)
    listed = _run([str(python.with_name("tinyk")), "--help"], cwd=work, env=env)
    assert listed.returncode == 0 and "  grade " in listed.stdout, listed.stderr

    run = _run([str(python), "-m", "tinyk.courseware.course", "check"], cwd=work, env=env)
    assert run.returncode == 2
    assert "no tinyk course checkout" in run.stderr and "clone of the course repository" in run.stderr
    assert "git clone https://github.com/" in run.stderr  # the address from the installed metadata
    run = _run([str(python), "-m", "tinyk.grading", "validate", "--no-run"], cwd=work, env=env)
    assert run.returncode == 2 and "no tinyk course checkout" in run.stderr and "--source" in run.stderr

    # The class report needs only the gradebook: its Chinese comes with the package, as do a
    # Chinese learner's feedback and figures.
    assert (Path(lines[0]).parent / "locale" / "zh_CN.po").is_file()
    assert (Path(lines[0]).parent / "locale" / "figures_zh_CN.po").is_file()
    assert (Path(lines[0]).parent / "learner" / "mistakes.tsv").is_file()  # the catalogue's rows
    refused = _run([str(python), "-c", "from tinyk import ModelConfig; ModelConfig(n_layers=0)"], cwd=work,
                   env={**env, "TINYK_LANGUAGE": "zh_CN"})
    assert "ValueError: ModelConfig.n_layers=0：必须是正整数" in refused.stderr, refused.stderr
    (work / "grades.csv").write_text("student,notebook,exercise,points,max_points,status,detail\n"
                                     "ann,05_3_rope,ex_05_3_2_test,0,3,ok,x; mistake 05.3.2:crops-table\n")
    run = _run([str(python), "-m", "tinyk.grading", "report", "grades.csv", "--out", "report"],
               cwd=work, env=env)
    assert run.returncode == 0, run.stderr
    chinese = (work / "report" / "index.zh.html").read_text(encoding="utf-8")
    from tinyk.learner.mistakes import by_id

    assert by_id("05.3.2:crops-table").zh in chinese  # its Chinese, from tinyk/locale/zh_CN.po


def test_a_notebook_opened_alone_runs_the_parts_pasted_into_it(wheel_env, monkeypatch):
    """Colab opens one notebook at a time: 05.6 alone in an empty folder, with the parts of
    05.2 to 05.5 pasted into its paste cell, checks those parts as the learner's own. The
    notebook is the Chinese student version (what the Chinese site's Colab button opens) with
    its exercises answered: its setup cell makes the installed package speak Chinese, from the
    catalogue inside the wheel."""
    import json

    import nbformat

    from tests.helpers import ipc_client
    from tinyk.courseware.chinese_notebooks import code_catalogue_path, load_messages
    from tinyk.courseware.exercises import book_version, is_solution, source_text
    from tinyk.learner.part_compare import PART_NAMES
    from tinyk.translations.package_catalogue import say

    pasted = []
    for source in course_checkout.notebook_paths():
        if source.stem[:4] in ("05_2", "05_3", "05_4", "05_5"):
            for cell in book_version(json.loads(source.read_text()))["cells"]:
                text = source_text(cell)
                if is_solution(cell) and re.search(rf"^(?:def|class) ({'|'.join(PART_NAMES)})\b", text, re.M):
                    pasted.append(text)
    assert len(pasted) >= 7, "the seven parts of 05.2 to 05.5"
    installed, work = wheel_env
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("TINYK_LANGUAGE", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(installed.jupyter))
    folder = work / "alone"
    folder.mkdir()
    source = ROOT / "notebooks" / "05_6_head_protocol.ipynb"
    answers = {c["id"]: source_text(c) for c in book_version(json.loads(source.read_text()))["cells"]
               if is_solution(c)}
    nb = nbformat.read(course_checkout.student_path(source, language=course_checkout.ZH), as_version=4)
    answered = [c for c in nb.cells if is_solution(c) and c.get("id") in answers]
    for cell in answered:
        cell.source = answers[cell["id"]]
    assert len(answered) == len(answers) >= 3
    paste = next(c for c in nb.cells if c.get("id") == "c47-paste")
    paste.source = "\n\n".join(pasted)
    ipc_client(nb, folder, kernel_name=KERNEL, timeout=300).execute()
    report = "".join(o.get("text", "") for o in next(c for c in nb.cells if c.get("id") == "c48").outputs)
    monkeypatch.setenv("TINYK_LANGUAGE", "zh_CN")  # the words the kernel says, said here
    here = say(" (from {notebook})", notebook=say("this notebook"))
    agrees = say("yours, agrees with tinyk{where}", where=here)
    words = load_messages(code_catalogue_path(ROOT, source.stem), code=True)
    every = words["every part yours and the model agrees: {all_yours}"].format(all_yours=True)
    assert say("not found: tinyk's own is used") not in report and report.count(agrees) == 10, report
    assert report.rstrip().endswith(every), report
