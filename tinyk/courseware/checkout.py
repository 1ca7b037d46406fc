"""Where the course's files are (the book's *For instructors* page): the course checkout, its
chapter notebooks' sources and their student versions.

The course commands (``python -m tinyk.courseware.course``, ``python -m tinyk.translations``) need the
course's source checkout. The package itself does not: installed from a wheel, ``ROOT`` is
``site-packages``, and :func:`course_root` looks for the checkout in the working folder
instead, or says clearly that there is none.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["LANGUAGES", "NOTEBOOKS", "REGENERATE", "ROOT", "STUDENTS", "ZH", "NotACheckout", "course_root",
           "is_checkout", "notebook_paths", "student_path"]

# The folder above the package: the course checkout in a clone or an editable install,
# ``site-packages`` in a wheel install (see :func:`course_root`).
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = "notebooks"
STUDENTS = "student"
ZH = "zh"  # the Chinese edition's folder: of the site (zh/) and of the student notebooks (student/zh/)
LANGUAGES = ("en", ZH)
REGENERATE = "python -m tinyk.courseware.course students"


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
