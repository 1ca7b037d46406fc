"""Similarity (``python -m tinyk.grading similarity``): a renamed copy is flagged, an
independent answer to the same exercise is not, and the released stub matches nobody."""

from __future__ import annotations

import json

from tests.optional import need
from tinyk.courseware.checkout import NOTEBOOKS, course_root
from tinyk.courseware.exercises import is_solution, nbgrader, source_text
from tinyk.courseware.student_versions import released
from tinyk.grading import cli
from tinyk.reports.similarity import compare

need("copydetect")

GRADE_ID = "ex_05_2_3_solution"
SOURCE = course_root() / NOTEBOOKS
ORIGINAL = """    d = x.shape[0]
    mean_square = x.pow(2).mean()
    r = torch.sqrt(mean_square + eps)
    identity = torch.eye(d, dtype=x.dtype)
    scaled = identity / r
    outer = torch.outer(x, x) / (d * r**3)
    result = gamma[:, None] * (scaled - outer)
    return result
"""
RENAMED = """    n = x.shape[0]
    ms = x.pow(2).mean()
    rms = torch.sqrt(ms + eps)
    eye = torch.eye(n, dtype=x.dtype)
    first = eye / rms
    second = torch.outer(x, x) / (n * rms**3)
    out = gamma[:, None] * (first - second)
    return out
"""
INDEPENDENT = """    x = x.detach().clone().requires_grad_(True)
    def f(v):
        return gamma * v / torch.sqrt((v * v).sum() / v.numel() + eps)
    return torch.autograd.functional.jacobian(f, x)
"""


def _notebook(code: str) -> dict:
    source = SOURCE / "05_2_rmsnorm.ipynb"
    cell = next(c for c in json.loads(source.read_text())["cells"]
                if is_solution(c) and nbgrader(c)["grade_id"] == GRADE_ID)
    stub = released({"cells": [cell]})["cells"][0]
    stub["source"] = source_text(stub).replace("    # YOUR CODE HERE\n    raise NotImplementedError()", code)
    assert code in stub["source"]
    return {"cells": [stub], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_renamed_copy_is_flagged_and_an_independent_answer_is_not(tmp_path, capsys):
    for name, code in (("ana", ORIGINAL), ("Bört, \"B\"", RENAMED), ("carl", INDEPENDENT)):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "05_2_rmsnorm.ipynb").write_text(json.dumps(_notebook(code)))
    (tmp_path / "subs" / "dora").mkdir()  # a released stub, untouched: nothing to compare
    stub = _notebook("    # YOUR CODE HERE\n    raise NotImplementedError()")
    (tmp_path / "subs" / "dora" / "05_2_rmsnorm.ipynb").write_text(json.dumps(stub))
    out = tmp_path / "similarity.html"
    assert cli.main(["similarity", str(tmp_path / "subs"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and printed[-1].startswith("4 student(s), 1 pair(s) above 60%"), printed
    exercise, pair, shares = printed[0].split(": ")
    assert exercise == GRADE_ID and pair in ('ana and Bört, "B"', 'Bört, "B" and ana')
    assert all(int(s.rstrip("%")) >= 90 for s in shares.split(" and ")), shares
    page = out.read_text()
    assert page.count("<table>") == 1 and "carl" not in page and "dora" not in page
    assert "Bört, &quot;B&quot;" in page and "<script" not in page and " src=" not in page
    assert "highlight-red" in page and "highlight-green" in page  # the shared code, marked
    # the numbers the instructors' page states: 100% for the copy, about 15% for the other
    shares = {(p.a, p.b): (p.share_a, p.share_b) for p in compare(tmp_path / "subs", SOURCE, 0.01)[0]}
    assert len(shares) == 3 and max(shares.values()) == (1.0, 1.0)
    assert all(0.1 < s < 0.2 for pair, both in shares.items() if "carl" in pair for s in both), shares


def test_an_answer_cell_is_found_however_its_metadata_was_edited():
    """The answer of each exercise of 05.2's release, from a student's copy whose answer cells
    lost their ``solution`` flag, their nbgrader metadata, or that and their cell id; the
    release's own unchanged code between them is never taken for an answer."""
    from tinyk.reports.similarity import answer_cells

    release = released(json.loads((SOURCE / "05_2_rmsnorm.ipynb").read_text()), "05_2_rmsnorm")
    answers = [c for c in release["cells"] if is_solution(c)]
    assert len(answers) >= 3
    copy = json.loads(json.dumps(release))
    edits = {}
    for k, cell in enumerate(copy["cells"]):
        if not is_solution(cell):
            continue
        gid = nbgrader(cell)["grade_id"]
        cell["source"] = edits[gid] = f"# answer of {gid}\n{RENAMED}"
        how = len(edits) % 3
        if how == 0:
            cell["metadata"]["nbgrader"]["solution"] = False
        else:
            del cell["metadata"]["nbgrader"]
            if how == 2:
                cell["id"] = f"renamed-{k}"
    odd = {"cell_type": "code", "id": "odd", "metadata": {"nbgrader": ["no", "dict"]}, "source": "x = 1"}
    copy["cells"].insert(0, odd)  # metadata no grader writes: read past, not a crash
    assert answer_cells(copy, release) == edits
    untouched = answer_cells(release, release)
    assert untouched == {nbgrader(c)["grade_id"]: source_text(c) for c in answers}
    # an answer cell taken out leaves nothing of the release's own code in its place
    del copy["cells"][next(k for k, c in enumerate(copy["cells"]) if c["id"].startswith("renamed-"))]
    assert len(answer_cells(copy, release)) == len(edits) - 1
