"""Similar answers across students (course section "For instructors").

    python -m tinyk.grading similarity SUBMISSIONS_DIR --out similarity.html [--threshold 0.6]

Only the answer cells are compared: each student's cell of an exercise (found by its
``grade_id``, else by its cell id, else by its place between the exercise's neighbours, so
that a copy whose nbgrader metadata was removed is compared too) with the other students'
cells of the same exercise, never across exercises. Each notebook is read as the grader reads
it: a regular file within the size bound, never a symbolic link, an older nbformat upgraded
to version 4; what is not read is listed on the page and printed.
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
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tinyk.courseware.exercises import is_solution, nbgrader, source_text

__all__ = ["Pair", "answer_cells", "compare", "similarity_main", "submitted_notebooks"]


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


def _releases(source: Path) -> dict[str, dict]:
    """Each source notebook as nbgrader's release gives it to students, by its name."""
    from tinyk.courseware.student_versions import released

    return {path.stem: released(json.loads(path.read_text(encoding="utf-8")), path.stem)
            for path in sorted(source.glob("*.ipynb"))}


def _stubs(releases: dict[str, dict]) -> dict[str, str]:
    """Answer grade_id (unique across the notebooks) -> the released stub of that cell."""
    return {nbgrader(cell)["grade_id"]: source_text(cell)
            for nb in releases.values() for cell in nb["cells"] if is_solution(cell)}


def submitted_notebooks(entry: Path, submissions: Path) -> tuple[list[tuple[str, dict]], list[str]]:
    """A student's notebooks (file name, nbformat 4 notebook: an older version upgraded),
    from a folder of notebooks or a single notebook file, each read as the grader reads it
    (:func:`tinyk.reports.submitted_files.read_submitted`: a regular file within the size bound, no symbolic
    link followed); and why each ``.ipynb`` that was not read was not."""
    from tinyk.reports.submitted_files import Refused, parse_notebook, read_submitted, refusal

    if stat.S_ISDIR(os.lstat(entry).st_mode):
        paths = [entry / name for name in sorted(os.listdir(entry))
                 if name.endswith(".ipynb") and not name.startswith(".")]
    else:
        paths = [entry]
    found, skipped = [], []
    for path in paths:
        try:
            refused = refusal(path, submissions)
            if refused:
                raise Refused(refused)
            found.append((path.name, parse_notebook(read_submitted(path, submissions), path.name)))
        except Refused as why:
            skipped.append(str(why))
    return found, skipped


def _grade_id(cell: dict) -> str | None:
    """A student's cell's grade_id, None where its nbgrader metadata has none (or is no dict)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    return gid if isinstance(gid, str) else None


def _release_of(name: str, nb: dict, releases: dict[str, dict]) -> dict | None:
    """The released notebook ``nb`` was made from: the one whose exercise grade_ids and cell ids
    it shares most, else the one of its file name."""
    mine = {key for c in nb["cells"] for key in (_grade_id(c), c.get("id")) if isinstance(key, str)}
    shared = {stem: len(mine & ({nbgrader(c).get("grade_id") for c in r["cells"] if nbgrader(c)}
                                | {c.get("id") for c in r["cells"] if nbgrader(c)}))
              for stem, r in releases.items()}
    best = max(shared, key=lambda stem: shared[stem], default=None)
    if best is not None and shared[best]:
        return releases[best]
    return releases.get(Path(name).stem)


def answer_cells(nb: dict, release: dict) -> dict[str, str]:
    """A student's answer of each answer cell of ``release``, grade_id -> code, found however
    the student's copy lost its metadata: the cell of that ``grade_id`` (whatever its
    ``solution`` flag says), else the cell of the released cell's id, else, by position, the
    code cells between the exercise cells around it (those the student kept), leaving out
    every cell that is the release's own unchanged code."""
    exercises = [c for c in release["cells"] if nbgrader(c)]
    by_gid = {nbgrader(c)["grade_id"]: i for i, c in enumerate(exercises)}
    by_id = {c["id"]: i for i, c in enumerate(exercises) if c.get("id")}
    place: dict[int, int] = {}  # released exercise -> the student's cell
    for k, cell in enumerate(nb["cells"]):
        gid = _grade_id(cell)
        cell_id = cell.get("id") if isinstance(cell.get("id"), str) else None
        i = by_gid[gid] if isinstance(gid, str) and gid in by_gid else by_id.get(cell_id)
        if i is not None and i not in place:  # the first cell of an exercise, as the grader takes it
            place[i] = k
    claimed = set(place.values())
    released_code = {source_text(c).strip() for c in release["cells"] if c.get("cell_type") == "code"}
    answers = {}
    for i, cell in enumerate(exercises):
        if not is_solution(cell):
            continue
        if i in place:
            answers[nbgrader(cell)["grade_id"]] = source_text(nb["cells"][place[i]])
            continue
        before = max((place[j] for j in range(i) if j in place), default=-1)
        after = min((place[j] for j in range(i + 1, len(exercises)) if j in place), default=len(nb["cells"]))
        gap = [source_text(c) for k, c in enumerate(nb["cells"][before + 1:after], before + 1)
               if k not in claimed and c.get("cell_type") == "code"
               and source_text(c).strip() not in released_code]
        if gap:
            answers[nbgrader(cell)["grade_id"]] = "\n\n".join(gap)
    return answers


def _write_answers(root: Path, submissions: Path, entries: list[Path], releases: dict[str, dict],
                   skipped: list[str]) -> dict[str, str]:
    """Each student's answers that differ from the released stub, as
    ``root/students/<id>/<grade_id>.py``, and the stubs as ``root/stubs/<grade_id>.py``;
    returns student id -> name. What was not read is added to ``skipped``, named."""
    from tinyk.reports.submitters import student_id, student_name

    stubs = _stubs(releases)
    names = {}
    for entry in entries:
        sid = student_id(student_name(entry))
        names[sid] = student_name(entry)
        notebooks, refused = submitted_notebooks(entry, submissions)
        skipped += [f"{student_name(entry)}: {why}" for why in refused]
        for name, nb in notebooks:
            release = _release_of(name, nb, releases)
            for grade_id, code in (answer_cells(nb, release) if release else {}).items():
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


def compare(submissions: Path, source: Path, threshold: float = 0.6) -> tuple[list[Pair], int, list[str]]:
    """The pairs of answers above ``threshold``, most similar first, the number of students
    compared, and what was not compared and why (a file the grader does not read, two entries
    that would be one student)."""
    from tinyk.reports.submitters import collisions
    from tinyk.reports.submitters import entries as submission_entries

    releases = _releases(source)
    found = submission_entries(submissions)
    collided = collisions(found)
    skipped = list(dict.fromkeys(collided.values()))
    entries = [e for e in found if e not in collided]
    with tempfile.TemporaryDirectory(prefix="tinyk-similarity-") as tmp:
        root = Path(tmp)
        names = _write_answers(root, submissions, entries, releases, skipped)
        pairs = _copied(root, threshold, names) if (root / "students").is_dir() else []
    pairs.sort(key=lambda p: (-max(p.share_a, p.share_b), p.exercise, p.a, p.b))
    return pairs, len(entries), skipped


_STYLE = """body{font-family:system-ui,sans-serif;margin:1rem}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #999;padding:.3rem;vertical-align:top;text-align:left}
pre{white-space:pre-wrap;margin:0}
.highlight-red,.highlight-green{background:#ffe08a;font-weight:bold}caption{text-align:left;font-weight:bold}"""


def _page(pairs: list[Pair], students: int, threshold: float, skipped: Sequence[str] = ()) -> str:
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
    if skipped:
        listed = "".join(f"<li>{html.escape(why)}</li>\n" for why in skipped)
        parts.append(f"<h2>Not compared</h2>\n<ul>\n{listed}</ul>\n")
    parts.append("</main>\n</body>\n</html>\n")
    return "".join(parts)


def similarity_main(submissions: Path, out: Path, source: Path, threshold: float) -> int:
    """``python -m tinyk.grading similarity``: write the page, print one line per pair (and,
    on stderr, one per file or student not compared)."""
    import sys

    if not 0 < threshold <= 1:
        print(f"similarity: --threshold {threshold} must be above 0 and at most 1", file=sys.stderr)
        return 2
    try:
        import copydetect  # noqa: F401
    except ImportError:
        print("similarity needs copydetect: pip install -e .[instructor]", file=sys.stderr)
        return 2
    pairs, students, skipped = compare(submissions, source, threshold)
    Path(out).write_text(_page(pairs, students, threshold, skipped), encoding="utf-8")
    for p in pairs:
        print(f"{p.exercise}: {p.a} and {p.b}: {p.share_a:.0%} and {p.share_b:.0%}")
    for why in skipped:
        print(f"not compared: {why}", file=sys.stderr)
    print(f"{students} student(s), {len(pairs)} pair(s) above {threshold:.0%}: {out}")
    return 0
