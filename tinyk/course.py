"""Course housekeeping: the repository address, the Colab setup cells, the student notebooks.

The address lives in ``_config.yml`` (``repository.url``, which Jupyter Book's launch
buttons read), beside the published site's address (``html.baseurl``). Every other copy is
derived from them and rewritten by one command::

    python -m tinyk.course set-repo https://github.com/you/your-fork
    python -m tinyk.course students     # regenerate student/ from notebooks/
    python -m tinyk.course check        # exit 1 if any copy disagrees or student/ is stale

Copies: each notebook's setup cell, ``pyproject.toml``'s ``Repository`` URL, and the
student versions in ``student/`` and ``student/zh/``.

Two folders of notebooks (see the book's *For instructors* page):

- ``notebooks/``: the sources, with solutions and hidden tests; the book builds from them
  and instructors release and grade from them;
- ``student/``: what students open (every Colab link points there), made from the sources
  by nbgrader's own release preprocessors: answers replaced by stubs, hidden tests and
  markers removed, no outputs; each exercise links to its solution on the site, and the
  MyST that Jupyter cannot show (glossary terms, citations, admonitions) is plain Markdown
  with links to the site's glossary and references;
- ``student/zh/``: the same student versions in Chinese, which the Chinese site's Colab
  buttons open: prose from the pages' catalogues, comments, docstrings and test messages from
  the code catalogues, code unchanged (:mod:`tinyk.chinese_notebooks`); links go to the
  Chinese site. A message without a translation makes ``check`` fail and names it.

These commands need the course's source checkout. The package itself does not: installed
from a wheel, ``ROOT`` is ``site-packages``, and :func:`course_root` looks for the checkout
in the working folder instead, or says clearly that there is none.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyk.exercises import FORM_TITLE, is_solution, source_text

# The folder above the package: the course checkout in a clone or an editable install,
# ``site-packages`` in a wheel install (see :func:`course_root`).
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = "notebooks"
STUDENTS = "student"
ZH = "zh"  # the Chinese edition's folder: of the site (zh/) and of the student notebooks (student/zh/)
LANGUAGES = ("en", ZH)
REGENERATE = "python -m tinyk.course students"
_URL_RULE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")
_CONFIG_URL = re.compile(r"^(  url: )(\S+)\s*$", re.MULTILINE)  # inside repository:
_CONFIG_SITE = re.compile(r"^(  baseurl: )(\S+)(.*)$", re.MULTILINE)  # inside html:
# An exercise's heading in a notebook's markdown; its id on the site: heading_anchor().
EXERCISE_HEADING = re.compile(r"^#{1,6}\s+(Exercise\s+\d.*?)\s*$", re.MULTILINE)
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


class NotACheckout(FileNotFoundError):
    """A command that works on the course's files ran where there is no course checkout."""


def is_checkout(folder: Path) -> bool:
    """A course checkout has ``_config.yml`` and the ``notebooks/`` sources."""
    return (folder / "_config.yml").is_file() and (folder / NOTEBOOKS).is_dir()


def course_root(root: Path | None = None) -> Path:
    """The course checkout: ``root`` if given, else the folder above the package (a clone or
    an editable install), else the working folder or one of its parents.

    Raises :class:`NotACheckout`, naming the folders tried, when none is a checkout (as
    with a wheel install run outside a clone): the notebooks' sources are not in the wheel.
    """
    tried = [Path(root)] if root is not None else [ROOT, Path.cwd(), *Path.cwd().parents]
    for folder in tried:
        if is_checkout(folder):
            return folder
    where = ", ".join(str(f) for f in tried[:3]) + (" and its parents" if root is None else "")
    raise NotACheckout(f"no tinyk course checkout (a folder with _config.yml and {NOTEBOOKS}/) at {where}: "
                       f"this command works on the course's source files, which an installed wheel "
                       f"does not contain; run it inside a clone of the course repository "
                       f"(git clone {_installed_repository()}) or pass --root")


def _installed_repository() -> str:
    """The repository address recorded in the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        for entry in metadata("tinyk").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip() == "Repository":
                return url.strip()
    except PackageNotFoundError:
        pass
    return "<the course repository>"


def notebook_paths(root: Path | None = None) -> list[Path]:
    """The chapter notebooks' sources, ``notebooks/*.ipynb``."""
    return sorted((course_root(root) / NOTEBOOKS).glob("*.ipynb"))


def student_path(source: Path, root: Path | None = None, language: str = "en") -> Path:
    """Where the student version of the source notebook ``source`` lives, in ``language``
    (``"en"``: ``student/``, ``"zh"``: ``student/zh/``)."""
    folder = course_root(root) / STUDENTS
    return (folder if language == "en" else folder / language) / source.name


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


def check(root: Path | None = None) -> list[str]:
    """Every place that should hold the address and does not, and every stale student
    notebook, as readable lines."""
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
    try:
        site_url(root)
    except ValueError as err:
        problems.append(str(err))
        return problems
    return problems + stale_students(root)


def set_repo(url: str, root: Path | None = None) -> list[Path]:
    """Write ``url`` into ``_config.yml`` (with its GitHub Pages address as the site),
    ``pyproject.toml`` and every setup cell, then regenerate the student notebooks."""
    root = course_root(root)
    url = url.rstrip("/")
    if not _URL_RULE.match(url):
        raise ValueError(f"repository URL {url!r}: expected https://github.com/OWNER/NAME "
                         f"(Colab's launch button opens notebooks from GitHub)")
    changed = []
    config = root / "_config.yml"
    text, n = _CONFIG_URL.subn(lambda m: m.group(1) + url, config.read_text(), count=1)
    if n != 1:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line")
    text, n = _CONFIG_SITE.subn(lambda m: m.group(1) + pages_url(url) + m.group(3), text, count=1)
    if n != 1:
        raise ValueError("_config.yml has no `baseurl:` line in its `html:` block")
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
    return changed + students(root)[0]


# ----------------------------------------------------------------------------- student versions


def heading_anchor(heading: str) -> str:
    """The id Sphinx gives a section titled ``heading`` (docutils' rule, on the visible text)."""
    import unicodedata

    text = re.sub(r"[`*$\\]", "", heading).lower()
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", "-", " ".join(text.split()))
    return re.sub(r"^[-0-9]+|-+$", "", text)


_TERM = re.compile(r"\{term\}`([^`<]*?)\s*(?:<([^`>]+)>)?`")
_CITE = re.compile(r"\{cite(?::[pt])?\}`([^`]+)`")
_ADMONITION = re.compile(r"^```\{(warning|note|tip|important|caution)\}[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
# A hint (05.x exercises): ``:::{dropdown} Hint 1 of 3: a nudge`` ... ``:::``, a collapsed
# block on the site (sphinx-design); Jupyter and Colab show the same as <details>.
_DROPDOWN = re.compile(r"^:::\{dropdown\}[ \t]*([^\n]*)\n(.*?)^:::[ \t]*$", re.M | re.S)


def _term_id(term: str) -> str:
    """The id Sphinx gives the glossary entry ``term`` (``sphinx.util.nodes.make_id``)."""
    import unicodedata

    text = unicodedata.normalize("NFKD", f"term-{term}").encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-zA-Z0-9._]+", "-", " ".join(text.split()))
    return re.sub(r"^[-0-9._]+|-+$", "", text)


def _citation_labels(root: Path) -> dict[str, str]:
    """``key -> "Zhang and Sennrich, 2019"`` for each entry of ``book/references.bib``."""
    labels = {}
    bib = (root / "book" / "references.bib").read_text(encoding="utf-8")
    for key, body in re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, re.M | re.S):
        authors = re.search(r"author\s*=\s*\{(.*)\},?\s*$", body, re.M).group(1).split(" and ")
        last = [a.split(",")[0].strip().replace("{", "").replace("}", "") for a in authors]
        names = " and ".join(last) if len(last) <= 2 else f"{last[0]} et al."
        year = re.search(r"year\s*=\s*\{(\d+)\}", body).group(1)
        labels[key] = f"{names}, {year}"
    return labels


# What the student versions add to the sources' words, in each language. The admonitions'
# titles are Sphinx's own (its zh_CN catalogue), as on the Chinese site.
_STUDENT_WORDS = {
    "en": {"stuck": "Stuck? [The solution on the course site]({url}) waits behind a toggle."},
    ZH: {"stuck": "卡住了？[课程网站上的参考答案]({url})折叠在按钮后面，点开即可查看。",
         "warning": "警告", "note": "备注", "tip": "小技巧", "important": "重要", "caution": "小心"},
}


def markdown_for_notebooks(text: str, site: str, citations: dict[str, str], language: str = "en") -> str:
    """A source's Markdown as Jupyter and Colab show it, which know no MyST: a glossary
    term becomes a link to its entry on the site, a citation a link to the references
    page, an admonition (```` ```{warning} ````) a quoted paragraph with its title (in
    ``language``), and a dropdown (a hint, ``:::{dropdown} Title``) a collapsed
    ``<details>`` block."""
    glossary, references = f"{site}book/glossary.html", f"{site}book/references.html"

    def term(m: re.Match) -> str:
        shown, target = m.group(1), m.group(2) or m.group(1)
        return f"[{shown}]({glossary}#{_term_id(target)})"

    def cite(m: re.Match) -> str:
        keys = [k.strip() for k in m.group(1).split(",")]
        unknown = [k for k in keys if k not in citations]
        if unknown:
            raise ValueError(f"citation {unknown[0]!r} is not in book/references.bib")
        return "; ".join(f"[{citations[k]}]({references})" for k in keys)

    def admonition(m: re.Match) -> str:
        body = m.group(2).rstrip("\n").splitlines()
        title = _STUDENT_WORDS[language].get(m.group(1), m.group(1).capitalize())
        return "\n".join([f"> **{title}**", ">"] + [f"> {ln}".rstrip() for ln in body])

    def dropdown(m: re.Match) -> str:
        title, body = m.group(1).strip(), m.group(2).strip("\n")
        return f"<details>\n<summary>{title}</summary>\n\n{body}\n\n</details>"

    text = _DROPDOWN.sub(dropdown, text)
    return _ADMONITION.sub(admonition, _CITE.sub(cite, _TERM.sub(term, text)))


def _for_students(nb: dict, page_url: str, site: str, citations: dict[str, str], language: str = "en",
                  translate: Callable[[str, int], str] | None = None) -> dict:
    """The source made ready for nbgrader's release: answer cells shown in Colab (no form
    title over the stub), each exercise's prompt linking to its solution on the site, and
    MyST roles and admonitions written as plain Markdown (:func:`markdown_for_notebooks`).

    ``translate(text, cell_index)``: each Markdown cell's MyST in ``language``, before it is
    made plain. The solution links keep the English headings' anchors, which the Chinese
    pages keep too (Sphinx gives a translated section its original id)."""
    nb = copy.deepcopy(nb)
    headings = {i: EXERCISE_HEADING.findall(source_text(c)) for i, c in enumerate(nb["cells"])
                if c["cell_type"] == "markdown"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            text = source_text(cell)
            words = translate(text, i) if translate else text
            plain = markdown_for_notebooks(words, site, citations, language)
            if plain != text:
                cell["source"] = plain.splitlines(keepends=True)
    for i, cell in enumerate(nb["cells"]):
        if not is_solution(cell):
            continue
        lines = [ln for ln in source_text(cell).splitlines() if not FORM_TITLE.match(ln)]
        cell["source"] = "\n".join(lines).strip("\n").splitlines(keepends=True)
        cell.get("metadata", {}).pop("cellView", None)
        at = next((j for j in range(i - 1, -1, -1) if headings.get(j)), None)
        if at is None:
            continue
        prompt, anchor = nb["cells"][at], heading_anchor(headings[at][-1])
        text = source_text(prompt).rstrip("\n")
        if f"{page_url}#{anchor}" in text:  # a second answer cell of the same exercise
            continue
        stuck = _STUDENT_WORDS[language]["stuck"].format(url=f"{page_url}#{anchor}")
        prompt["source"] = f"{text}\n\n{stuck}".splitlines(keepends=True)
    return nb


def _release_exporter() -> Any:
    """nbgrader's ``generate_assignment`` preprocessors, in its order, in this process.

    Only ``SaveCells`` (which records the cells in a gradebook database and leaves the
    notebook as it is) is left out, so the output is byte for byte what ``nbgrader
    generate_assignment`` writes (a test compares them), in a fraction of its time.
    """
    try:
        from nbconvert.exporters import NotebookExporter
        from nbgrader.preprocessors import (
            CheckCellMetadata,
            ClearHiddenTests,
            ClearMarkScheme,
            ClearOutput,
            ClearSolutions,
            ComputeChecksums,
            IncludeHeaderFooter,
            InstantiateTests,
            LockCells,
        )
        from traitlets.config import Config
    except ImportError as err:
        raise SystemExit(f"{REGENERATE} needs nbgrader: pip install -e .[instructor]") from err
    config = Config()
    config.Exporter.default_preprocessors = []
    exporter = NotebookExporter(config=config)
    for step in (IncludeHeaderFooter, InstantiateTests, LockCells, ClearSolutions, ClearOutput,
                 CheckCellMetadata, ComputeChecksums, ClearHiddenTests, ClearMarkScheme,
                 ComputeChecksums, CheckCellMetadata):
        exporter.register_preprocessor(step, enabled=True)
    return exporter


def student_notebooks(root: Path | None = None) -> dict[Path, str]:
    """Every source's student version, as the text to write at its ``student/`` path."""
    import nbformat

    root = course_root(root)
    site, exporter, citations = site_url(root), _release_exporter(), _citation_labels(root)
    out = {}
    for source in notebook_paths(root):
        page = f"{site}{NOTEBOOKS}/{source.stem}.html"
        prepared = _for_students(json.loads(source.read_text(encoding="utf-8")), page, site, citations)
        nb = nbformat.reads(json.dumps(prepared), as_version=4)
        resources = {"nbgrader": {"notebook": source.stem, "assignment": STUDENTS}, "unique_key": source.stem}
        text, _ = exporter.from_notebook_node(nb, resources=resources)
        out[student_path(source, root)] = text
    return out


def chinese_student_notebooks(english: dict[Path, str], root: Path | None = None,
                              ) -> tuple[dict[Path, str], list[str]]:
    """The Chinese student versions (``student/zh/``) of the English ones in ``english``
    (:func:`student_notebooks`), and the messages that have no translation, each naming its
    notebook, cell and catalogue (:mod:`tinyk.chinese_notebooks`).

    Each is its English student version with the Markdown cells made from the source in
    Chinese and the code cells' words translated: cells, ids, metadata and code are the same.
    """
    import nbformat

    from tinyk import chinese_notebooks as zh

    root = course_root(root)
    site, citations = f"{site_url(root)}{ZH}/", _citation_labels(root)
    out, missing = {}, []
    for source in notebook_paths(root):
        pages = root / "locale" / "zh_CN" / "LC_MESSAGES" / NOTEBOOKS / f"{source.stem}.po"
        code = zh.code_catalogue_path(root, source.stem)
        prose, words = zh.load_messages(pages), zh.load_messages(code, code=True)
        found: list[str] = []

        def translate(text: str, i: int, source: Path = source, found: list[str] = found,
                      prose: dict[str, str] = prose) -> str:
            return zh.translate_markdown(text, prose, found, f"{NOTEBOOKS}/{source.name}: cell {i}")

        page = f"{site}{NOTEBOOKS}/{source.stem}.html"
        prepared = _for_students(json.loads(source.read_text(encoding="utf-8")), page, site, citations,
                                 ZH, translate)
        missing += [f"{line}: no translation in {pages.relative_to(root)}" for line in found]
        nb = json.loads(english[student_path(source, root)])
        found = []
        for i, (cell, chinese) in enumerate(zip(nb["cells"], prepared["cells"], strict=True)):
            if cell.get("id") != chinese.get("id"):
                raise ValueError(f"{source.name}: cell {i} of the release is not the source's cell {i}")
            if cell["cell_type"] == "markdown":
                cell["source"] = chinese["source"]
            elif cell["cell_type"] == "code" and not source_text(cell).startswith(SETUP_TITLE):
                where = f"{NOTEBOOKS}/{source.name}: cell {i}"
                text = zh.translate_code(source_text(cell), words, found, where)
                if not zh.same_code(text, source_text(cell)):  # a quote in a translation, say
                    raise ValueError(f"{where}: the Chinese code differs from the English beyond its strings "
                                     f"and comments; check its translations in {code.relative_to(root)}")
                cell["source"] = text.splitlines(keepends=True)
        missing += [f"{line}: no translation in {code.relative_to(root)}" for line in found]
        out[student_path(source, root, ZH)] = nbformat.writes(nbformat.from_dict(nb)) + "\n"
    return out, missing


def _written(root: Path) -> list[Path]:
    """The student notebooks in ``student/`` and ``student/zh/`` now."""
    return sorted((root / STUDENTS).glob("*.ipynb")) + sorted((root / STUDENTS / ZH).glob("*.ipynb"))


def students(root: Path | None = None) -> tuple[list[Path], list[str]]:
    """Regenerate ``student/`` and ``student/zh/`` from ``notebooks/``: returns the files
    written or removed, and the Chinese messages without a translation (a Chinese notebook
    that lacks one is not written).

    Deterministic (the same sources give byte-identical files) and writes only what changed.
    """
    root = course_root(root)
    english = student_notebooks(root)
    chinese, missing = chinese_student_notebooks(english, root)
    incomplete = {name for line in missing for name in [line.split(": ")[0]]}
    wanted = {**english, **{p: t for p, t in chinese.items() if f"{NOTEBOOKS}/{p.name}" not in incomplete}}
    (root / STUDENTS / ZH).mkdir(parents=True, exist_ok=True)
    changed = []
    for path in _written(root):
        if path not in wanted and path not in chinese:
            path.unlink()
            changed.append(path)
    for path, text in wanted.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed, missing


def stale_students(root: Path | None = None) -> list[str]:
    """Student notebooks that are missing, stale against their source, or have no source,
    and Chinese messages without a translation."""
    root = course_root(root)
    english = student_notebooks(root)
    chinese, missing = chinese_student_notebooks(english, root)
    problems = []
    for path, text in {**english, **chinese}.items():
        rel, source = path.relative_to(root).as_posix(), f"{NOTEBOOKS}/{path.name}"
        if not path.exists():
            problems.append(f"{rel}: missing (the student version of {source})")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{rel}: stale against {source}")
    for path in _written(root):
        if path not in english and path not in chinese:
            problems.append(f"{path.relative_to(root).as_posix()}: no source {NOTEBOOKS}/{path.name}")
    if missing:
        problems += missing
        problems.append("translate them: `python -m tinyk.translations update` adds new messages to the "
                        f"catalogues; then {REGENERATE}")
    if problems:
        problems.append(f"regenerate the student notebooks: {REGENERATE} (or: make students)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyk.course", description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=None,
                        help="the course checkout (default: the package's own, or the working folder)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", parents=[common],
                   help="exit 1 if a copy of the repository address disagrees or student/ is stale")
    set_parser = sub.add_parser("set-repo", parents=[common],
                                help="rewrite the repository address everywhere")
    set_parser.add_argument("url")
    sub.add_parser("students", parents=[common],
                   help=f"regenerate {STUDENTS}/ (student versions) from {NOTEBOOKS}/")
    args = parser.parse_args(argv)
    try:
        root = course_root(args.root)
    except NotACheckout as err:
        print(err, file=sys.stderr)
        return 2
    if args.command == "set-repo":
        for path in set_repo(args.url, root):
            print("updated", path.relative_to(root))
        return 0
    if args.command == "students":
        changed, missing = students(root)
        for path in changed:
            print("updated" if path.exists() else "removed", path.relative_to(root))
        print(f"{len(notebook_paths(root))} student notebook(s) in {STUDENTS}/ and in {STUDENTS}/{ZH}/, "
              f"{len(changed)} changed")
        for line in missing:
            print(line, file=sys.stderr)
        if missing:
            print(f"{len(missing)} message(s) without a Chinese translation: their notebooks in "
                  f"{STUDENTS}/{ZH}/ were not written; `python -m tinyk.translations update` adds them "
                  f"to the catalogues", file=sys.stderr)
        return 1 if missing else 0
    problems = check(root)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"repository address {repository_url(root)} agrees everywhere; "
              f"{STUDENTS}/ and {STUDENTS}/{ZH}/ are up to date with {NOTEBOOKS}/")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
