"""The student notebooks (``student/``): what every Colab link opens.

They are made from the sources in ``notebooks/`` by nbgrader's release preprocessors, must
hold no solution, marker or hidden test, must not go stale, and link each exercise to its
solution on the site.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sitecheck
from tinyk.courseware import addresses, checkout, course, student_markdown, student_versions
from tinyk.courseware.catalogues import interface_catalogue
from tinyk.courseware.exercises import is_solution, source_text

ROOT = checkout.ROOT
SOURCES = checkout.notebook_paths()
COLAB = re.compile(r"https://colab\.research\.google\.com/github/[^\s)\"'<>]+")


def _copy_course(tmp_path: Path) -> Path:
    for name in ("_config.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in (checkout.NOTEBOOKS, checkout.STUDENTS):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    for folder in ("notebooks", "code"):  # the Chinese student notebooks' catalogues
        shutil.copytree(ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / folder, tmp_path / "locale" / "zh_CN" /
                        "LC_MESSAGES" / folder, ignore=shutil.ignore_patterns("*.mo"))
    shutil.copy(interface_catalogue(ROOT), interface_catalogue(tmp_path))  # the words the versions add
    return tmp_path


def _course_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinyk.courseware.course", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_every_source_has_an_up_to_date_student_version():
    assert student_versions.stale_students() == []
    for folder in (ROOT / checkout.STUDENTS, ROOT / checkout.STUDENTS / checkout.ZH):
        assert sorted(p.name for p in folder.glob("*.ipynb")) == [p.name for p in SOURCES]


@pytest.mark.parametrize("language", checkout.LANGUAGES)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_student_version_holds_no_solution_marker_or_hidden_test(source, language):
    student = checkout.student_path(source, language=language)
    text = student.read_text()
    cells = json.loads(text)["cells"]
    assert sitecheck.notebook_leaks(student, ROOT / checkout.NOTEBOOKS) == []
    assert len(sitecheck.solution_lines(ROOT / checkout.NOTEBOOKS)) > 50  # real answers are looked for
    assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code")
    answers = [c for c in cells if is_solution(c)]
    originals = [c for c in json.loads(source.read_text())["cells"] if is_solution(c)]
    assert len(answers) == len(originals)
    for cell in answers:  # the stub, at the indentation of the answer it replaces
        stub = re.compile(r"^( *)# (?:YOUR CODE HERE|在此处编写你的代码)\n\1raise NotImplementedError\(\)$",
                          re.M)
        assert stub.search(source_text(cell)), "each answer is nbgrader's stub"
        assert "cellView" not in cell["metadata"] and "# @title" not in source_text(cell), \
            "the stub is shown in Colab, not folded under a form title"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_each_exercise_links_to_its_solution_on_the_site(source):
    cells = json.loads(checkout.student_path(source).read_text())["cells"]
    page = f"{addresses.site_url()}notebooks/{source.stem}.html"
    assert page.startswith("https://") and addresses.site_url().endswith("/")
    links = re.findall(r"\]\((https://[^)\s]+)\)", "\n".join(source_text(c) for c in cells
                                                              if c["cell_type"] == "markdown"))
    solution_links = [u for u in links if u.startswith(page + "#")]
    headings = re.findall(r"^#+\s+(Exercise \d.*)$", "\n".join(source_text(c) for c in cells
                                                               if c["cell_type"] == "markdown"), re.M)
    assert len(solution_links) == sum(is_solution(c) for c in cells) == len(headings)
    for link, heading in zip(solution_links, headings, strict=True):
        section = heading.split("—")[0].split()[-1]  # "05.2.1"
        assert link.split("#")[1].startswith("exercise-" + section.replace(".", "-")), (link, heading)


def _markdown(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join(source_text(c) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("language", checkout.LANGUAGES)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_student_markdown_has_no_myst_syntax_that_jupyter_would_show_raw(source, language):
    text = _markdown(checkout.student_path(source, language=language))
    assert re.findall(r"\{[a-z:]+\}`", text) == [], "a MyST role left in a student notebook"
    assert "```{" not in text and ":::{" not in text, "a MyST directive left in a student notebook"


def test_markdown_for_notebooks_turns_roles_and_admonitions_into_plain_markdown():
    citations = {"su2021roformer": "Su et al., 2021", "ainslie2023gqa": "Ainslie et al., 2023"}
    text = ("A {term}`KV cache <KV cache (键值缓存)>`, a {term}`Nat (奈特)` and "
            "{cite}`su2021roformer,ainslie2023gqa`.\n\n```{warning}\nFirst line,\n\nsecond.\n```\n")
    plain = student_markdown.markdown_for_notebooks(text, "https://x.io/c/", citations)
    assert plain == (
        "A [KV cache](https://x.io/c/book/glossary.html#term-KV-cache), a "
        "[Nat (奈特)](https://x.io/c/book/glossary.html#term-Nat) and "
        "[Su et al., 2021](https://x.io/c/book/references.html); "
        "[Ainslie et al., 2023](https://x.io/c/book/references.html).\n\n"
        "> **Warning**\n>\n> First line,\n>\n> second.\n")
    hint = student_markdown.markdown_for_notebooks(
        "Before.\n\n:::{dropdown} Hint 1 of 2: a nudge\nUse `expand`.\n\nThen $x$.\n:::\n",
        "https://x.io/c/", {})
    assert hint == ("Before.\n\n<details>\n<summary>Hint 1 of 2: a nudge</summary>\n\n"
                    "Use `expand`.\n\nThen $x$.\n\n</details>\n")
    with pytest.raises(ValueError, match=r"'nobody2020' is not in book/references\.bib"):
        student_markdown.markdown_for_notebooks("{cite}`nobody2020`", "https://x.io/", citations)


@pytest.mark.parametrize("language", checkout.LANGUAGES)
def test_the_live_model_becomes_a_link_to_its_page_in_jupyter_and_colab(language):
    """The site's playground and SmolLM2's chat run only on the site: each student notebook that
    has one links to the playground page of its own edition, once per embed."""
    site = addresses.site_url(ROOT) + ("zh/" if language != "en" else "")
    link = f"({site}book/playground.html)"
    embeds = {p.stem: sum(_markdown(p).count(f":::{{{name}}}") for name in ("playground", "smollm2"))
              for p in SOURCES}
    links = {p.stem: _markdown(checkout.student_path(p, language=language)).count(link) for p in SOURCES}
    assert links == embeds and sum(embeds.values()) == 4, (links, embeds)
    assert _markdown(SOURCES[0].with_name("05_10_real_weights.ipynb")).count(":::{smollm2}") == 1
    embed = "A.\n\n:::{playground}\n:show: rope\n:::\n\nB.\n\n:::{smollm2}\n:::\n"
    plain = student_markdown.markdown_for_notebooks(embed, "https://x.io/c/", {})
    page = "https://x.io/c/book/playground.html"
    assert plain == ("A.\n\n" + student_markdown.LIVE.format(url=page) + "\n\nB.\n\n"
                     + student_markdown.LIVE_SMOLLM2.format(url=page) + "\n")


def test_every_glossary_link_of_a_notebook_names_an_entry():
    from tinyk.courseware.catalogues import glossary_terms

    entries = glossary_terms(ROOT)
    used = {target or shown for source in SOURCES
            for shown, target in student_markdown.TERM.findall(_markdown(source))}
    assert used and used <= entries, sorted(used - entries)
    assert {"Residual stream (残差流)", "Forward hook (前向钩子)", "Nat (奈特)", "Perplexity (困惑度)",
            "Scaled dot-product attention, SDPA (缩放点积注意力)"} <= used


def test_heading_anchor_follows_docutils():
    from docutils.nodes import make_id

    for heading in ("Exercise 05.4.3 — write `repeat_kv`", "Exercise 05.7.2 — does a line follow the rule?",
                    "Exercise 05.2.1 — the root mean square"):
        assert student_markdown.heading_anchor(heading) == make_id(heading.replace("`", ""))


def test_regenerating_is_deterministic_and_writes_nothing_when_up_to_date(tmp_path):
    root = _copy_course(tmp_path)
    before = {p.relative_to(root): p.read_bytes() for p in (root / checkout.STUDENTS).rglob("*.ipynb")}
    assert len(before) == 2 * len(SOURCES)
    assert student_versions.students(root) == ([], [])
    shutil.rmtree(root / checkout.STUDENTS)
    changed, missing = student_versions.students(root)
    assert len(changed) == 2 * len(SOURCES) and missing == []
    students = root / checkout.STUDENTS
    assert {p.relative_to(root): p.read_bytes() for p in students.rglob("*.ipynb")} == before


def test_a_stale_student_version_fails_the_check_and_names_the_command(tmp_path):
    root = _copy_course(tmp_path)
    source = root / checkout.NOTEBOOKS / "05_2_rmsnorm.ipynb"
    nb = json.loads(source.read_text())
    nb["cells"][1]["source"].append("\n\nA sentence added to the source.")
    source.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    run = _course_cli("check", "--root", str(root))
    assert run.returncode == 1
    assert "student/05_2_rmsnorm.ipynb: stale against notebooks/05_2_rmsnorm.ipynb" in run.stderr
    assert "python -m tinyk.courseware.course students" in run.stderr

    # The English student version is written; the Chinese one is not, for want of a translation.
    run = _course_cli("students", "--root", str(root))
    untranslated = ("notebooks/05_2_rmsnorm.ipynb: cell 1: 'A sentence added to the source.': "
                    "no translation in locale/zh_CN/LC_MESSAGES/notebooks/05_2_rmsnorm.po")
    assert run.returncode == 1 and "updated student/05_2_rmsnorm.ipynb" in run.stdout, run.stdout
    assert untranslated in run.stderr and "student/zh/ were not written" in run.stderr, run.stderr
    problems = course.check(root)
    assert problems[:2] == ["student/zh/05_2_rmsnorm.ipynb: stale against notebooks/05_2_rmsnorm.ipynb",
                            untranslated], problems
    nb["cells"][1]["source"].pop()  # the sentence taken out again: everything is in step
    source.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    student_versions.students(root)
    assert course.check(root) == []

    # A solution pasted into a student version by hand, a missing one, an orphan: all flagged.
    student = root / checkout.STUDENTS / "05_3_rope.ipynb"
    student.write_text(student.read_text().replace("raise NotImplementedError()", "return 1.0", 1))
    (root / checkout.STUDENTS / "05_4_gqa.ipynb").unlink()
    shutil.copy(student, root / checkout.STUDENTS / "05_99_gone.ipynb")
    problems = student_versions.stale_students(root)
    assert "student/05_3_rope.ipynb: stale against notebooks/05_3_rope.ipynb" in problems
    assert "student/05_4_gqa.ipynb: missing (the student version of notebooks/05_4_gqa.ipynb)" in problems
    assert "student/05_99_gone.ipynb: no source notebooks/05_99_gone.ipynb" in problems
    student_versions.students(root)
    assert student_versions.stale_students(root) == []
    assert not (root / checkout.STUDENTS / "05_99_gone.ipynb").exists()


def test_set_repo_rewrites_the_site_address_and_the_student_notebooks(tmp_path):
    root = _copy_course(tmp_path)
    course.set_repo("https://github.com/Someone/their-fork", root)
    assert addresses.site_url(root) == "https://someone.github.io/their-fork/"
    assert course.check(root) == []
    text = (root / checkout.STUDENTS / "05_2_rmsnorm.ipynb").read_text()
    assert 'COURSE_REPOSITORY = \\"https://github.com/Someone/their-fork\\"' in text
    assert "https://someone.github.io/their-fork/notebooks/05_2_rmsnorm.html#exercise-05-2-1" in text
    assert "tinyk-course" not in text
    assert addresses.pages_url("https://github.com/someone/someone.github.io") == "https://someone.github.io/"


def test_student_versions_are_what_nbgrader_generate_assignment_releases(tmp_path):
    """The in-process preprocessors give nbgrader's CLI output byte for byte."""
    from tests.optional import need

    need("nbgrader")
    from tinyk.grading import assignment

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    site, citations = addresses.site_url(), student_markdown.citation_labels(ROOT)
    for source in SOURCES:
        nb = student_versions.for_students(json.loads(source.read_text()),
                                           f"{site}notebooks/{source.stem}.html", site, citations)
        (prepared / source.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    released = assignment.release(tmp_path / "release", sorted(prepared.glob("*.ipynb")))
    assert len(released) == len(SOURCES)
    for path in released:
        assert path.read_text() == (ROOT / checkout.STUDENTS / path.name).read_text(), path.name


def test_every_colab_link_outside_the_site_opens_a_student_notebook():
    """README, book pages and notebooks: any Colab link opens student/, never a source."""
    files = [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md")), *SOURCES,
             *sorted((ROOT / checkout.STUDENTS).glob("*.ipynb"))]
    colab = f"https://colab.research.google.com/github/{addresses.repository_url().split('github.com/')[1]}/blob/main"
    prefix = f"{colab}/{checkout.STUDENTS}/"

    def wrong(url: str) -> bool:
        return not (url.startswith(prefix) and (ROOT / checkout.STUDENTS / url[len(prefix):]).is_file())

    links = [(path.name, url) for path in files for url in COLAB.findall(path.read_text())]
    assert [f"{name}: {url}" for name, url in links if wrong(url)] == []
    # the check itself: it finds a link in Markdown and tells a student notebook from a source
    good, source = f"{prefix}{SOURCES[0].name}", f"{colab}/{checkout.NOTEBOOKS}/{SOURCES[0].name}"
    assert COLAB.findall(f"[Open]({good}) and [this]({source})") == [good, source]
    assert [wrong(good), wrong(source), wrong(f"{prefix}missing.ipynb")] == [False, True, True]


def test_commands_outside_a_checkout_say_so(tmp_path, monkeypatch):
    """Installed from a wheel, the package's parent folder is site-packages, not the course."""
    monkeypatch.setattr(checkout, "ROOT", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(checkout.NotACheckout, match=r"_config\.yml and notebooks/.*clone of the course"):
        checkout.course_root()
    with pytest.raises(checkout.NotACheckout, match="no tinyk course checkout"):
        checkout.notebook_paths()
    (tmp_path / "clone").mkdir()
    root = _copy_course(tmp_path / "clone")
    monkeypatch.chdir(root / checkout.NOTEBOOKS)  # anywhere inside a clone will do
    assert checkout.course_root() == root


def test_the_site_check_follows_colab_links_and_catches_a_source_notebook(tmp_path):
    """sitecheck.colab_links (run on the built site) fails a button that opens a source."""
    url = addresses.repository_url()
    owner_repo = url.split("github.com/")[1]
    (tmp_path / "notebooks").mkdir()
    page = tmp_path / "notebooks" / "05_2_rmsnorm.html"
    for folder, expect_ok in (("student", True), ("notebooks", False)):
        href = f"https://colab.research.google.com/github/{owner_repo}/blob/main/{folder}/05_2_rmsnorm.ipynb"
        page.write_text(f'<html><body><a href="{href}">Colab</a></body></html>')
        problems, targets = sitecheck.colab_links(tmp_path, ROOT, url)
        assert targets == {"notebooks/05_2_rmsnorm.html": f"{folder}/05_2_rmsnorm.ipynb"}
        if expect_ok:
            assert problems == []
        else:
            assert "notebooks/05_2_rmsnorm.html: Colab link opens notebooks/05_2_rmsnorm.ipynb, " \
                   "not a student version in student/" in problems
            assert any("contains '### BEGIN SOLUTION'" in p for p in problems)
            assert any("contains hidden-test code" in p for p in problems)
            assert any("contains solution code" in p for p in problems)


@pytest.mark.slow
def test_a_student_version_is_graded_like_a_release(tmp_path):
    """Answered in student/, a notebook scores full marks with the gradebook made from the
    sources; the Chinese version (student/zh/) left as it is, zero; neither counts as a
    modified test."""
    from tests.optional import need

    need("nbgrader")
    from tinyk.courseware.exercises import book_version
    from tinyk.grading import batch

    name = "05_2_rmsnorm"
    source = ROOT / checkout.NOTEBOOKS / f"{name}.ipynb"
    answers = {nbgrader_id(c): source_text(c) for c in book_version(json.loads(source.read_text()))["cells"]
               if is_solution(c)}
    student = json.loads(checkout.student_path(source).read_text())
    for cell in student["cells"]:
        if is_solution(cell):
            cell["source"] = answers[nbgrader_id(cell)]
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "answered.ipynb").write_text(json.dumps(student))
    shutil.copy(checkout.student_path(source, language="zh"), submissions / "blank.ipynb")
    rows = batch.grade(submissions, tmp_path / "grades.csv", [name], source=ROOT / checkout.NOTEBOOKS,
                         jobs=1, progress=False)
    assert {r.status for r in rows} == {"ok"}, [(r.student, r.exercise, r.status, r.detail) for r in rows]
    answered = [r for r in rows if r.student == "answered"]
    blank = [r for r in rows if r.student == "blank"]
    assert len(answered) == len(blank) == len(answers) == 3
    assert all(r.points == r.max_points > 0 for r in answered), answered
    assert all(r.points == 0 for r in blank), blank


def nbgrader_id(cell: dict) -> str:
    return cell["metadata"]["nbgrader"]["grade_id"]


def test_each_reference_has_its_own_author_year_label():
    # LLaMA and Llama 2 share a first author and a year: their citations read 2023a and 2023b,
    # as the book's author-year references do (the bib's year field), never the same label twice.
    labels = student_markdown.citation_labels(ROOT)
    assert len(labels) == 8 and len(set(labels.values())) == len(labels)
    assert labels["touvron2023llama"] == "Touvron et al., 2023a"
    assert labels["touvron2023llama2"] == "Touvron et al., 2023b"
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    assert "{{RoFormer}:" in bib  # the braces keep its capitals where the style lowers a title's words


def test_the_references_labels_keep_a_year_s_two_digits_and_its_letter():
    # the bibliography's alpha labels (book/_ext/tinyk_bib.py): 2023a is [TLI+23a], not [TLI+3a]
    import sys

    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import tinyk_bib

    entries = parse_file(str(ROOT / "book" / "references.bib")).entries
    style = tinyk_bib.Style()
    labels = dict(zip(entries, style.label_style.format_labels(list(entries.values())), strict=True))
    assert len(labels) == 8 and len(set(labels.values())) == 8
    assert labels["touvron2023llama"] == "TLI+23a" and labels["touvron2023llama2"] == "TMS+23b"
    assert labels["vaswani2017attention"] == "VSP+17"
    alpha = find_plugin("pybtex.style.labels", "alpha")()  # the bug it mends
    assert "TLI+3a" in list(alpha.format_labels([entries["touvron2023llama"]]))
