"""Course housekeeping: the repository address and each notebook's Colab setup cell.

The address lives in ``_config.yml`` (``repository.url``, which Jupyter Book's launch
buttons read). Every other copy is derived from it and rewritten by one command::

    python -m tinyk.course set-repo https://github.com/you/your-fork
    python -m tinyk.course check        # exit 1 if any copy disagrees

Copies: each notebook's setup cell, and ``pyproject.toml``'s ``Repository`` URL.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = "notebooks"
_URL_RULE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")
_CONFIG_URL = re.compile(r"^(  url: )(\S+)\s*$", re.MULTILINE)  # inside repository:
_PYPROJECT_URL = re.compile(r'^(Repository = ")([^"]+)(")$', re.MULTILINE)
SETUP_TITLE = '# @title Setup { display-mode: "form" }'


def setup_cell_source(url: str) -> str:
    """The first code cell of every chapter notebook, for the repository at ``url``."""
    return f'''{SETUP_TITLE}
# In Colab, install the course package from its repository; anywhere else, do nothing.
import importlib.util
import subprocess
import sys

COURSE_REPOSITORY = "{url}"
if importlib.util.find_spec("tinyk") is None:
    if "google.colab" in sys.modules:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        f"tinyk @ git+{{COURSE_REPOSITORY}}@main"], check=True)
    else:
        print("tinyk is not installed: run `pip install -e .` in a clone of", COURSE_REPOSITORY)'''


def setup_cell(url: str) -> dict:
    """The setup cell as notebook JSON: hidden in Colab, removed from the book."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"cellView": "form", "tags": ["remove-cell"]},
        "outputs": [],
        "source": setup_cell_source(url).splitlines(keepends=True),
    }


def notebook_paths(root: Path = ROOT) -> list[Path]:
    return sorted((root / NOTEBOOKS).glob("*.ipynb"))


def repository_url(root: Path = ROOT) -> str:
    """The one address: ``repository.url`` in ``_config.yml``."""
    match = _CONFIG_URL.search((root / "_config.yml").read_text())
    if match is None:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line")
    return match.group(2)


def _first_code_cell(nb: dict) -> dict | None:
    return next((c for c in nb["cells"] if c["cell_type"] == "code"), None)


def check(root: Path = ROOT) -> list[str]:
    """Every place that should hold the address and does not, as readable lines."""
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


def set_repo(url: str, root: Path = ROOT) -> list[Path]:
    """Write ``url`` into ``_config.yml``, ``pyproject.toml`` and every setup cell."""
    url = url.rstrip("/")
    if not _URL_RULE.match(url):
        raise ValueError(f"repository URL {url!r}: expected https://github.com/OWNER/NAME "
                         f"(Colab's launch button opens notebooks from GitHub)")
    changed = []
    config = root / "_config.yml"
    text, n = _CONFIG_URL.subn(lambda m: m.group(1) + url, config.read_text(), count=1)
    if n != 1:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line")
    config.write_text(text)
    changed.append(config)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(_PYPROJECT_URL.sub(lambda m: m.group(1) + url + m.group(3),
                                            pyproject.read_text()))
    changed.append(pyproject)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyk.course", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="exit 1 if a copy of the repository address disagrees")
    set_parser = sub.add_parser("set-repo", help="rewrite the repository address everywhere")
    set_parser.add_argument("url")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder")
    args = parser.parse_args(argv)
    if args.command == "set-repo":
        for path in set_repo(args.url, args.root):
            print("updated", path.relative_to(args.root))
        return 0
    problems = check(args.root)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"repository address {repository_url(args.root)} agrees everywhere")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
