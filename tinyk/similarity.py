"""Similar answers across students (course section "For instructors").

    python -m tinyk.grading similarity SUBMISSIONS_DIR --out similarity.html [--threshold 0.6]

Only the answer cells are compared: each student's cell of an exercise (found by its
``grade_id``) with the other students' cells of the same exercise, never across exercises.
The released stub of each answer cell (its signature, docstring and ``raise
NotImplementedError()``) is boilerplate, which matches nobody. The comparison is
``copydetect``'s (winnowing over tokens, with names and literals normalised, so a copy with
renamed variables still matches; MOSS's method), run offline. A pair is listed when, for
at least one of the two students, that share of their answer's tokens is found in the
other's: the page shows both answers side by side with the matching code marked. A match
is a reason to look, not a verdict: short exercises leave little room for different answers.
"""

from __future__ import annotations

import html
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tinyk.exercises import is_solution, nbgrader, source_text

__all__ = ["Pair", "answer_cells", "compare", "similarity_main"]


@dataclass
class Pair:
    """Two students' answers to one exercise that share code: ``share_a`` of ``a``'s tokens
    are found in ``b``'s answer and ``share_b`` of ``b``'s in ``a``'s."""

    exercise: str
    a: str
    b: str
    share_a: float
    share_b: float
    marked_a: str  # HTML, the matching code marked
    marked_b: str


def _stubs(source: Path) -> dict[str, str]:
    """Answer grade_id (unique across the notebooks) -> the released stub of that cell."""
    from tinyk.student_versions import released

    stubs = {}
    for path in sorted(source.glob("*.ipynb")):
        for cell in released(json.loads(path.read_text(encoding="utf-8")), path.stem)["cells"]:
            if is_solution(cell):
                stubs[nbgrader(cell)["grade_id"]] = source_text(cell)
    return stubs


def answer_cells(entry: Path) -> dict[str, str]:
    """A student's answer cells, grade_id -> code, from a folder of notebooks or a single
    notebook file; a file that is not a notebook is skipped."""
    answers = {}
    for path in [entry] if entry.is_file() else sorted(entry.glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            continue
        for cell in cells if isinstance(cells, list) else []:
            if isinstance(cell, dict) and is_solution(cell):
                answers.setdefault(str(nbgrader(cell).get("grade_id")), source_text(cell))
    return answers


def _write_answers(root: Path, entries: list[Path], stubs: dict[str, str]) -> dict[str, str]:
    """Each student's answers that differ from the released stub, as
    ``root/students/<id>/<grade_id>.py``, and the stubs as ``root/stubs/<grade_id>.py``;
    returns student id -> name."""
    from tinyk.roster import student_id, student_name

    names = {}
    for entry in entries:
        sid = student_id(student_name(entry))
        names[sid] = student_name(entry)
        for grade_id, code in answer_cells(entry).items():
            if grade_id in stubs and code.strip() != stubs[grade_id].strip():
                folder = root / "students" / sid
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{grade_id}.py").write_text(code, encoding="utf-8")
    (root / "stubs").mkdir()
    for grade_id, code in stubs.items():
        (root / "stubs" / f"{grade_id}.py").write_text(code, encoding="utf-8")
    return names


def _copied(root: Path, threshold: float, names: dict[str, str]) -> list[Pair]:
    """copydetect's pairs of ``root/students`` above ``threshold``, one exercise with itself
    only, the stubs as boilerplate, names and literals normalised."""
    from copydetect import CopyDetector

    detector = CopyDetector(
        test_dirs=[str(root / "students")],
        boilerplate_dirs=[str(root / "stubs")],
        extensions=["py"],
        display_t=threshold,
        same_name_only=True,
        ignore_leaf=True,
        autoopen=False,
        silent=True,
        noise_t=10,
        guarantee_t=10,
    )
    detector.run()
    if len(detector.test_files) < 2:
        return []
    pairs = []
    for share_a, share_b, file_a, file_b, marked_a, marked_b, _ in detector.get_copied_code_list():
        a, b = Path(file_a), Path(file_b)
        pairs.append(Pair(a.stem, names[a.parent.name], names[b.parent.name], float(share_a), float(share_b),
                          marked_a, marked_b))
    return pairs


def compare(submissions: Path, source: Path, threshold: float = 0.6) -> tuple[list[Pair], int]:
    """The pairs of answers above ``threshold``, most similar first, and the number of
    students compared."""
    from tinyk.roster import entries as submission_entries

    stubs = _stubs(source)
    entries = submission_entries(submissions)
    with tempfile.TemporaryDirectory(prefix="tinyk-similarity-") as tmp:
        root = Path(tmp)
        names = _write_answers(root, entries, stubs)
        pairs = _copied(root, threshold, names) if (root / "students").is_dir() else []
    pairs.sort(key=lambda p: (-max(p.share_a, p.share_b), p.exercise, p.a, p.b))
    return pairs, len(entries)


_STYLE = """body{font-family:system-ui,sans-serif;margin:1rem}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #999;padding:.3rem;vertical-align:top;text-align:left}
pre{white-space:pre-wrap;margin:0}
.highlight-red,.highlight-green{background:#ffe08a;font-weight:bold}caption{text-align:left;font-weight:bold}"""


def _page(pairs: list[Pair], students: int, threshold: float) -> str:
    parts = [
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Similar answers</title>\n'
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n<h1>Similar answers</h1>\n"
        f"<p>{students} student(s) compared, answer cells only, released stubs left out; "
        f"{len(pairs)} pair(s) above {threshold:.0%} of one answer's tokens. Marked code is shared.</p>\n"
    ]
    for k, p in enumerate(pairs, 1):
        parts.append(
            f"<h2>{k}. {html.escape(p.exercise)}: {html.escape(p.a)} and {html.escape(p.b)}</h2>\n"
            f"<table>\n<caption>{html.escape(p.exercise)}, side by side</caption>\n<thead><tr>"
            f'<th scope="col">{html.escape(p.a)}: {p.share_a:.0%} found in the other</th>'
            f'<th scope="col">{html.escape(p.b)}: {p.share_b:.0%} found in the other</th></tr></thead>\n'
            f"<tbody><tr><td><pre>{p.marked_a}</pre></td><td><pre>{p.marked_b}</pre></td></tr></tbody>\n"
            f"</table>\n"
        )
    parts.append("</main>\n</body>\n</html>\n")
    return "".join(parts)


def similarity_main(submissions: Path, out: Path, source: Path, threshold: float) -> int:
    """``python -m tinyk.grading similarity``: write the page, print one line per pair."""
    import sys

    if not 0 < threshold <= 1:
        print(f"similarity: --threshold {threshold} must be above 0 and at most 1", file=sys.stderr)
        return 2
    try:
        import copydetect  # noqa: F401
    except ImportError:
        print("similarity needs copydetect: pip install -e .[instructor]", file=sys.stderr)
        return 2
    pairs, students = compare(submissions, source, threshold)
    Path(out).write_text(_page(pairs, students, threshold), encoding="utf-8")
    for p in pairs:
        print(f"{p.exercise}: {p.a} and {p.b}: {p.share_a:.0%} and {p.share_b:.0%}")
    print(f"{students} student(s), {len(pairs)} pair(s) above {threshold:.0%}: {out}")
    return 0
