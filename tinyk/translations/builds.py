"""The Sphinx runs of the Chinese edition (the book's *For instructors* page): extracting the
English pages' messages (``update``, ``check``) and building the Chinese site
(``python -m tinyk.translations build``) with its interface's words as Sphinx settings."""

from __future__ import annotations

from pathlib import Path

from tinyk.addresses import site_url
from tinyk.catalogues import LANGUAGE, interface_catalogue, read_catalogue
from tinyk.checkout import course_root

__all__ = ["build", "extract", "interface_settings", "run_sphinx"]

# The Sphinx settings of the Chinese edition that are words, by their English value (the
# book's _config.yml and myst-nb's defaults), translated in the interface's catalogue.
_INTERFACE_SETTINGS = {"html_title": "title", "author": "author",
                       "nb_code_prompt_show": "Show code cell {type}",
                       "nb_code_prompt_hide": "Hide code cell {type}"}


def run_sphinx(root: Path, outdir: Path, doctrees: Path, builder: str, overrides: dict, **kwargs) -> int:
    """One Jupyter Book build of the course with extra Sphinx settings (its CLI's defaults)."""
    from jupyter_book.sphinx import build_sphinx

    settings = {"external_toc_path": str(root / "_toc.yml"), "latex_individualpages": False,
                "gettext_compact": False, **overrides}
    result = build_sphinx(root, outdir, noconfig=True, path_config=str(root / "_config.yml"),
                          confoverrides=settings, doctreedir=str(doctrees), builder=builder, **kwargs)
    if isinstance(result, Exception):
        raise result
    return int(result)


def extract(root: Path, folder: Path) -> None:
    """The English messages of every page, as ``.pot`` files under ``folder / "gettext"``."""
    status = run_sphinx(root, folder / "gettext", folder / "doctrees", "gettext",
                        {"nb_execution_mode": "off", "gettext_uuid": False, "gettext_location": False,
                         "project": "tinyk course", "version": "", "release": ""},
                        freshenv=True, really_quiet=True)
    if status != 0:
        raise SystemExit(f"extracting the messages failed (Sphinx exit status {status})")


def interface_settings(root: Path | None = None) -> dict[str, str]:
    """The Chinese edition's Sphinx settings that are words (the site's title, its author, the
    code toggles' labels), from the interface's catalogue; a ``KeyError`` names a missing one."""
    import yaml

    root = course_root(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    words = {str(m.id): str(m.string) for m in read_catalogue(interface_catalogue(root)) if m.id and m.string}
    settings = {}
    for name, english in _INTERFACE_SETTINGS.items():
        english = config.get(english, english)
        if english not in words:
            raise KeyError(f"{interface_catalogue(root).name} has no translation of {english!r} ({name})")
        settings[name] = words[english]
    return settings


def build(root: Path | None = None, *, everything: bool = False) -> int:
    """Build the Chinese edition into ``_build/html/zh``: the English build's settings with
    ``language`` set, its notebooks' outputs taken from the same execution cache (nothing
    executes that the English build or the notebook stage already ran), warnings are errors."""
    root = course_root(root)
    overrides = {"language": LANGUAGE, "locale_dirs": [str(root / "locale")], "nitpicky": True,
                 "nb_execution_cache_path": str(root / "_build" / ".jupyter_cache"),
                 "html_baseurl": f"{site_url(root)}zh/", **interface_settings(root)}
    return run_sphinx(root, root / "_build" / "html" / "zh", root / "_build" / ".doctrees-zh", "html",
                      overrides, warningiserror=True, keep_going=True, force_all=everything)
