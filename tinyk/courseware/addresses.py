"""The course's addresses and their copies (the book's *For instructors* page).

The repository's address lives in ``_config.yml`` (``repository.url``, which Jupyter Book's
launch buttons read), beside the published site's address (``html.baseurl``). Every other
copy is derived from them: each chapter notebook's Colab setup cell and ``pyproject.toml``'s
``Repository`` URL. :func:`write_addresses` rewrites them all, :func:`address_problems` lists
a copy that disagrees (``python -m tinyk.courseware.course set-repo`` and ``check``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tinyk.courseware.checkout import course_root, notebook_paths

__all__ = ["SETUP_COMMENT", "SETUP_LANGUAGE", "SETUP_NAME", "SETUP_NOT_INSTALLED", "SETUP_TITLE",
           "SETUP_WORDS", "address_problems", "pages_url", "repository_url", "setup_cell",
           "setup_cell_source", "site_url", "write_addresses"]

_URL_RULE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")
_CONFIG_URL = re.compile(r"^(  url: )(\S+)\s*$", re.MULTILINE)  # inside repository:
_CONFIG_SITE = re.compile(r"^(  baseurl: )(\S+)(.*)$", re.MULTILINE)  # inside html:
_PYPROJECT_URL = re.compile(r'^(Repository = ")([^"]+)(")$', re.MULTILINE)
# The setup cell's words: its title, its comments, and what it prints outside Colab when tinyk
# is missing (followed by the repository's address). The Chinese student notebooks take theirs
# from the interface's catalogue (tinyk.courseware.student_markdown.STUDENT_WORDS).
SETUP_NAME = "Setup"
SETUP_COMMENT = "In Colab, install the course package from its repository; anywhere else, do nothing."
SETUP_NOT_INSTALLED = "tinyk is not installed: run `pip install -e .` in a clone of"
SETUP_LANGUAGE = "The language of tinyk's feedback (its checks, its errors): this notebook's."
SETUP_WORDS = (SETUP_NAME, SETUP_COMMENT, SETUP_NOT_INSTALLED, SETUP_LANGUAGE)
_FORM = '{ display-mode: "form" }'
SETUP_TITLE = f"# @title {SETUP_NAME} {_FORM}"


def setup_cell_source(url: str, words: Callable[[str], str] = str, language: str = "en") -> str:
    """The first code cell of every chapter notebook, for the repository at ``url``;
    ``words(english)``: each of :data:`SETUP_WORDS` in the notebook's ``language`` (by
    default, the English). The cell sets ``TINYK_LANGUAGE`` to ``language`` unless it is set
    (:mod:`tinyk.environment`: the grader sets ``en``)."""
    not_installed = words(SETUP_NOT_INSTALLED).replace("\\", "\\\\").replace('"', '\\"')
    return f'''# @title {words(SETUP_NAME)} {_FORM}
import importlib.util
import os
import subprocess
import sys

# {words(SETUP_LANGUAGE)}
os.environ.setdefault("TINYK_LANGUAGE", "{language}")
# {words(SETUP_COMMENT)}
COURSE_REPOSITORY = "{url}"
if importlib.util.find_spec("tinyk") is None:
    if "google.colab" in sys.modules:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        f"tinyk @ git+{{COURSE_REPOSITORY}}@main"], check=True)
    else:
        print("{not_installed}", COURSE_REPOSITORY)'''


def setup_cell(url: str) -> dict:
    """The setup cell as notebook JSON: hidden in Colab, removed from the book."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"cellView": "form", "tags": ["remove-cell"]},
        "outputs": [],
        "source": setup_cell_source(url).splitlines(keepends=True),
    }


def repository_url(root: Path | None = None) -> str:
    """The one address: ``repository.url`` in ``_config.yml``."""
    match = _CONFIG_URL.search((course_root(root) / "_config.yml").read_text())
    if match is None:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line")
    return match.group(2)


def pages_url(repository: str) -> str:
    """The GitHub Pages address of a GitHub repository (``https://OWNER.github.io/NAME/``)."""
    owner, name = repository.rstrip("/").split("/")[-2:]
    if name.lower() == f"{owner.lower()}.github.io":  # a user site is served at the root
        return f"https://{name.lower()}/"
    return f"https://{owner.lower()}.github.io/{name}/"


def site_url(root: Path | None = None) -> str:
    """The published site: ``html.baseurl`` in ``_config.yml``, ending in ``/``."""
    match = _CONFIG_SITE.search((course_root(root) / "_config.yml").read_text())
    if match is None or not match.group(2).startswith("https://"):
        raise ValueError("_config.yml needs the published site's address as `baseurl: https://...` "
                         "in its `html:` block (set-repo writes the GitHub Pages address)")
    return match.group(2).rstrip("/") + "/"


def _first_code_cell(nb: dict) -> dict | None:
    return next((c for c in nb["cells"] if c["cell_type"] == "code"), None)


def address_problems(root: Path | None = None) -> list[str]:
    """Every place that should hold the repository's address and does not, as readable
    lines (the site's address is checked by :func:`site_url`)."""
    root = course_root(root)
    url = repository_url(root)
    problems = []
    expected = setup_cell(url)
    for path in notebook_paths(root):
        cell = _first_code_cell(json.loads(path.read_text()))
        if cell is None or "".join(cell["source"]) != "".join(expected["source"]):
            problems.append(f"{path.relative_to(root)}: first code cell is not the setup cell "
                            f"for {url}")
        elif cell["metadata"].get("cellView") != "form" or \
                "remove-cell" not in cell["metadata"].get("tags", []):
            problems.append(f"{path.relative_to(root)}: setup cell lacks cellView=form or "
                            f"the remove-cell tag")
    pyproject = _PYPROJECT_URL.search((root / "pyproject.toml").read_text())
    if pyproject is None or pyproject.group(2) != url:
        problems.append(f"pyproject.toml: Repository URL is not {url}")
    return problems


def write_addresses(url: str, root: Path | None = None) -> list[Path]:
    """Write ``url`` into ``_config.yml`` (with its GitHub Pages address as the site),
    ``pyproject.toml`` and every notebook's setup cell; returns the files written."""
    root = course_root(root)
    url = url.rstrip("/")
    if not _URL_RULE.match(url):
        raise ValueError(f"repository URL {url!r}: expected https://github.com/OWNER/NAME "
                         f"(Colab's launch button opens notebooks from GitHub)")
    config = root / "_config.yml"
    text, n = _CONFIG_URL.subn(lambda m: m.group(1) + url, config.read_text(), count=1)
    if n != 1:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line")
    text, n = _CONFIG_SITE.subn(lambda m: m.group(1) + pages_url(url) + m.group(3), text, count=1)
    if n != 1:
        raise ValueError("_config.yml has no `baseurl:` line in its `html:` block")
    config.write_text(text)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(_PYPROJECT_URL.sub(lambda m: m.group(1) + url + m.group(3),
                                            pyproject.read_text()))
    changed = [config, pyproject]
    for path in notebook_paths(root):
        nb = json.loads(path.read_text())
        first = _first_code_cell(nb)
        new = setup_cell(url)
        if first is not None and "".join(first["source"]).startswith(SETUP_TITLE):
            first.update(new)
        else:
            nb["cells"].insert(0, new)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        changed.append(path)
    return changed
