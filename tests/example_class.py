"""The example class of the instructors' page (section "One class, start to finish"): five
students' submissions of notebook 05.3 and a roster, in ``examples/class/``.

    python -m tests.example_class       # writes examples/class/ again

Each submission is the student version that the site's Colab button opens
(``student/05_3_rope.ipynb``) with answers written into its answer cells, taken from the
course itself: the source's solutions and the wrong answers of the exercise tests
(``tests/exercise_cases``), whose mistakes the catalogue names (``tinyk.learner.mistakes``):

- ``ada`` answers all four exercises with the source's solutions;
- ``ben`` answers 05.3.2 only, pairing each coordinate with the one half a head away
  (``05.3.2:half-split-pairing``);
- ``cleo`` hands in ben's answer with every name changed;
- ``dan`` answers 05.3.4 only, restarting the rows at 0 after the cache
  (``05.3.4:rows-restart-at-0``);
- ``eve`` hard-codes 05.3.3's visible answer and replaces ``math.isclose`` so that every
  comparison passes.

The roster lists ada, ben, cleo, dan and fay, who submitted nothing; eve is not on it.
``tests/test_example_class.py`` checks that the folder is what this module writes, then runs
the page's commands on it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests.exercise_cases.ex_05_3 import MISTAKES
from tinyk.courseware.checkout import NOTEBOOKS, ROOT, STUDENTS
from tinyk.courseware.exercises import BEGIN_SOLUTION, END_SOLUTION, STUB, nbgrader, source_text

NOTEBOOK = "05_3_rope"
FOLDER = Path("examples") / "class"  # in the checkout
RUN = "python -m tests.example_class"
# cleo's copy of ben's answer: each name of his code, and what she calls it
RENAMED = [("rotate", "turn"), ("rows", "shape"), ("a, b", "left, right"), ("c, s", "cs, sn"),
           ("a * c", "left * cs"), ("b * s", "right * sn"), ("a * s", "left * sn"), ("b * c", "right * cs")]
ROSTER = [["folder", "lms_id", "name"], ["ada", "1001", "Ada"], ["ben", "1002", "Ben"],
          ["cleo", "1003", "Cleo"], ["dan", "1004", "Dan"], ["fay", "1006", "Fay"]]
TAMPERING = "math.isclose = lambda *args, **kwargs: True  # every comparison passes\n"
# eve's 05.3.3: the visible test's first answer, cos(1), whatever the input
VISIBLE_ANSWER = "def rope_score(q, k, m, n, theta=10000.0):\n    return math.cos(1.0)\n"


def mistake_case(mistake_id: str) -> tuple[str, str]:
    """(answer cell's grade_id, code) of the exercise tests' wrong answer making ``mistake_id``."""
    return next((grade_id, code.lstrip("\n")) for grade_id, cases in MISTAKES.items()
                for found, code in cases if found == mistake_id)


def _solutions(source: dict) -> dict[str, str]:
    """Answer cell's grade_id -> the source's solution, as a student writes it below the stub's
    docstring (the lines between the solution markers)."""
    found = {}
    for cell in source["cells"]:
        if nbgrader(cell).get("solution"):
            lines = source_text(cell).splitlines()
            start = next(i for i, line in enumerate(lines) if line.strip() == BEGIN_SOLUTION)
            end = next(i for i, line in enumerate(lines) if line.strip() == END_SOLUTION)
            found[nbgrader(cell)["grade_id"]] = "\n".join(lines[start + 1 : end])
    return found


def answers(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """Student -> answer cell's grade_id -> what the student wrote: a body that replaces the
    stub's two lines (``# YOUR CODE HERE``, ``raise``) when it is indented, else the whole cell."""
    solutions = _solutions(json.loads((root / NOTEBOOKS / f"{NOTEBOOK}.ipynb").read_text(encoding="utf-8")))
    half_id, half = mistake_case("05.3.2:half-split-pairing")
    copied = half
    for old, new in RENAMED:
        assert old in copied, old
        copied = copied.replace(old, new)
    guess_id = "ex_05_3_3_solution"
    guess = "import math\n" + TAMPERING + VISIBLE_ANSWER
    return {"ada": solutions, "ben": {half_id: half}, "cleo": {half_id: copied},
            "dan": dict([mistake_case("05.3.4:rows-restart-at-0")]), "eve": {guess_id: guess}}


def _submission(student_version: dict, written: dict[str, str]) -> dict:
    nb = json.loads(json.dumps(student_version))
    stub = "\n".join("    " + line for line in STUB.splitlines())
    for cell in nb["cells"]:
        code = written.get(nbgrader(cell).get("grade_id"))
        if code is not None:
            text = source_text(cell)
            assert stub in text, nbgrader(cell)
            text = text.replace(stub, code) if code.startswith("    ") else code
            cell["source"] = text.splitlines(keepends=True)
    return nb


def files(root: Path = ROOT) -> dict[Path, str]:
    """The example class's files, relative to the checkout, and their text."""
    student = json.loads((root / STUDENTS / f"{NOTEBOOK}.ipynb").read_text(encoding="utf-8"))
    out = {}
    for name, written in answers(root).items():
        nb = _submission(student, written)
        out[FOLDER / "submissions" / name / f"{NOTEBOOK}.ipynb"] = json.dumps(
            nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    roster = io.StringIO()
    csv.writer(roster, lineterminator="\n").writerows(ROSTER)
    out[FOLDER / "roster.csv"] = roster.getvalue()
    return out


def stale(root: Path = ROOT) -> list[str]:
    """The example class's files that differ from what :func:`files` makes, or that it does not."""
    wanted = files(root)
    present = {p.relative_to(root) for p in (root / FOLDER).rglob("*") if p.is_file()}
    return sorted(str(p) for p in present | set(wanted)
                  if p not in wanted or p not in present
                  or (root / p).read_text(encoding="utf-8") != wanted[p])


def main() -> None:
    """Write the example class into the checkout, and remove files of it that it no longer has."""
    wanted = files()
    for path in (ROOT / FOLDER).rglob("*"):
        if path.is_file() and path.relative_to(ROOT) not in wanted:
            path.unlink()
    for path, text in wanted.items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / path).write_text(text, encoding="utf-8")
        print("wrote", path)


if __name__ == "__main__":
    main()
