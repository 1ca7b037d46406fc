"""Checks on the built site ``_build/html``, each returning readable problem lines.

Used by ``test_site.py`` on the real build and by ``test_meta.py`` on pages made to fail.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from bs4 import BeautifulSoup

from tinyk.courseware.exercises import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    END_HIDDEN,
    END_SOLUTION,
    MARKERS,
    source_text,
)

# A MyST directive or role that reached the page as text instead of being rendered.
RAW_MYST = re.compile(r"(```|:::)\s*\{[a-z][\w:-]*\}|\{[a-z][\w:-]*\}`[^`]+`|^\s*\{(warning|note|tip|"
                      r"admonition|glossary|bibliography|exercise|solution|figure|math)\}", re.M)
COLAB = re.compile(r"^https://colab\.research\.google\.com/github/([^/]+)/([^/]+)/blob/([^/]+)/(.+)$")


def pages(html_dir: Path) -> list[Path]:
    return sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts)


# A page is parsed once per process and check (html.parser takes about 0.1 s a page): keyed
# on the file's path and modification time, so a page written again is read again.
@functools.cache
def _parsed(page: Path, mtime_ns: int) -> BeautifulSoup:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def soup(page: Path) -> BeautifulSoup:
    """The page's parse tree, shared between the checks: read it, never change it."""
    return _parsed(page, page.stat().st_mtime_ns)


@functools.cache
def _visible(page: Path, mtime_ns: int) -> str:
    tree = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    for tag in tree(["script", "style", "noscript"]):
        tag.decompose()
    return tree.get_text("\n")


def visible_text(page: Path) -> str:
    """The page's text as a reader sees it (no script, style or noscript)."""
    return _visible(page, page.stat().st_mtime_ns)


def raw_directives(html_dir: Path) -> list[str]:
    problems = []
    for page in pages(html_dir):
        for match in RAW_MYST.finditer(visible_text(page)):
            problems.append(f"{page.relative_to(html_dir)}: raw MyST text {match.group(0)!r}")
    return problems


def _lines_only_between(notebook_dir: Path, begin: str, end: str) -> set[str]:
    inside_lines, outside_lines = set(), set()
    for path in notebook_dir.glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            inside = False
            for line in source_text(cell).splitlines():
                if line.strip() == begin:
                    inside = True
                elif line.strip() == end:
                    inside = False
                elif line.strip():
                    (inside_lines if inside else outside_lines).add(line.strip())
    return {line for line in inside_lines - outside_lines if len(line) > 12}


def hidden_test_lines(notebook_dir: Path) -> set[str]:
    """Lines that occur only inside hidden-test blocks of the chapter notebooks.

    (A line such as ``import torch`` also appears in public code, so finding it on a page
    proves nothing; a line found nowhere but in hidden tests does.)
    """
    return _lines_only_between(notebook_dir, BEGIN_HIDDEN, END_HIDDEN)


def solution_lines(notebook_dir: Path) -> set[str]:
    """Lines that occur only inside the solutions of the chapter notebooks (same idea)."""
    return _lines_only_between(notebook_dir, BEGIN_SOLUTION, END_SOLUTION)


def notebook_leaks(path: Path, notebook_dir: Path) -> list[str]:
    """A notebook meant for students that holds a marker, a hidden test or a solution."""
    text = path.read_text(encoding="utf-8")
    problems = [f"{path.name}: contains {m!r}" for m in MARKERS if m in text]
    lines = {ln.strip() for c in json.loads(text)["cells"] for ln in source_text(c).splitlines()}
    problems += [f"{path.name}: contains hidden-test code {ln!r}"
                 for ln in sorted(lines & hidden_test_lines(notebook_dir))]
    problems += [f"{path.name}: contains solution code {ln!r}"
                 for ln in sorted(lines & solution_lines(notebook_dir))]
    return problems


def leaked_grading_text(html_dir: Path, notebook_dir: Path) -> list[str]:
    """nbgrader markers on a chapter page or in its download; hidden-test code anywhere.

    (The instructors' page may name the markers: it explains the format.)
    """
    secrets = hidden_test_lines(notebook_dir)
    chapter_pages = {html_dir / notebook_dir.name / f"{p.stem}.html" for p in notebook_dir.glob("*.ipynb")}
    problems = []
    files = pages(html_dir) + sorted((html_dir / "_sources").rglob("*.*"))
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if path in chapter_pages or path.suffix == ".ipynb":
            for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
                if marker in text:
                    problems.append(f"{path.relative_to(html_dir)}: contains {marker!r}")
        if path.suffix == ".html":
            text = visible_text(path)
        elif path.suffix == ".ipynb":
            text = "\n".join(source_text(c) for c in json.loads(text)["cells"])
        lines = {line.strip() for line in text.splitlines()}
        for line in sorted(secrets & lines):
            problems.append(f"{path.relative_to(html_dir)}: contains hidden-test code {line!r}")
    return problems


def broken_links(html_dir: Path) -> list[str]:
    problems = []
    for page in pages(html_dir):
        for tag in soup(page).find_all(["a", "link", "script", "img"]):
            ref = tag.get("href") or tag.get("src")
            if not ref:
                continue
            parsed = urlparse(ref)
            if parsed.scheme or ref.startswith(("#", "//", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parsed.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{page.relative_to(html_dir)}: broken link {ref!r}")
    return problems


def colab_links(html_dir: Path, repo_root: Path, repository_url: str,
                students: str = "student", sources: str = "notebooks") -> tuple[list[str], dict[str, str]]:
    """Problems with Colab links, and each page's Colab target path.

    Every link is followed to its file in the repository checkout: it must be the student
    version of the page's own notebook (``student/NAME.ipynb`` for ``notebooks/NAME.html``,
    ``student/zh/NAME.ipynb`` for ``zh/notebooks/NAME.html``),
    and that file must hold no marker, hidden test or solution of the sources.
    """
    owner, name = repository_url.rstrip("/").split("/")[-2:]
    problems, targets = [], {}
    for page in pages(html_dir):
        for tag in soup(page).find_all("a", href=True):
            match = COLAB.match(tag["href"])
            if not match:
                continue
            rel = page.relative_to(html_dir).as_posix()
            org, repo, branch, path = match.groups()
            targets[rel] = path
            if (org, repo) != (owner, name):
                problems.append(f"{rel}: Colab link to {org}/{repo}, not {owner}/{name}")
            if branch != "main":
                problems.append(f"{rel}: Colab link on branch {branch!r}, not 'main'")
            if not (repo_root / path).is_file() or not path.endswith(".ipynb"):
                problems.append(f"{rel}: Colab link to {path}, which is not a notebook in the repo")
                continue
            folder = f"{students}/zh" if rel.startswith("zh/") else students  # Chinese pages: student/zh/
            if Path(path).parent.as_posix() != folder:
                problems.append(f"{rel}: Colab link opens {path}, not a student version in {folder}/")
            own = rel.removeprefix("zh/")  # a page of the Chinese edition opens the same notebook, in Chinese
            if f"{sources}/{Path(path).stem}.html" != own:
                problems.append(f"{rel}: Colab link opens {path}, another page's notebook")
            problems += [f"{rel}: Colab opens {leak}"
                         for leak in notebook_leaks(repo_root / path, repo_root / sources)]
    return problems, targets
