"""The package's layout by job (README, "Layout"): each import between subpackages goes the way
the README's layering says, ``import tinyk`` loads nothing of grading, reports or translations,
and each subpackage says in its docstring what lives there and what it may import."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tinyk"

# What each part of the package may import of the others: the README's layout table, as data.
# "core" is the top level's modules (the model, its configuration's rules, generation, the 05.7
# experiment's data and training, the run-time switches); tinyk/__init__.py and __main__.py
# stand above everything. Every layer may also import the package's words
# (WORDS: the one small function the model's refusals are said with, and its catalogue).
LAYERS = {
    "core": set(),
    "interop": {"core"},
    "web": {"core", "interop"},
    "courseware": {"core"},
    "lessons": {"core", "courseware"},
    "learner": {"core", "interop", "courseware"},
    "reports": {"core", "courseware", "learner"},
    "grading": {"core", "interop", "courseware", "learner", "reports"},
    "translations": {"core", "courseware", "lessons", "learner", "reports"},
}
WORDS = "tinyk.translations.package_catalogue"
TOP = {"tinyk", "tinyk.__main__"}
MAX_TOP_LEVEL = 16


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    """The layer a dotted module of the package belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "core"


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """The package's modules ``source`` imports, function-level and relative imports included."""
    found = set()
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*here[:len(here) - node.level + 1], node.module or ""]).strip(".") \
                if node.level else node.module or ""
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return {m for m in found if m == "tinyk" or m.startswith("tinyk.")}


def wrong_way(sources: dict[str, tuple[str, bool]], modules: set[str]) -> list[str]:
    """Each import between layers the table does not allow: ``importer -> imported``."""
    wrong = []
    for module, (source, is_package) in sorted(sources.items()):
        if module in TOP:
            continue
        mine = layer_of(module)
        for target in sorted(imports_of(source, module, is_package) & modules):
            theirs = layer_of(target)
            if target in TOP - {"tinyk"} or (target == "tinyk" and mine == "core"):
                wrong.append(f"{module} -> {target}")
            elif theirs != mine and target != WORDS and not target.startswith(f"tinyk.{mine}") \
                    and theirs not in LAYERS[mine] and target != f"tinyk.{theirs}":
                wrong.append(f"{module} -> {target}")
    return wrong


def _sources() -> dict[str, tuple[str, bool]]:
    return {_module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in PACKAGE.rglob("*.py")}


def test_every_import_between_layers_goes_the_way_the_readme_draws():
    sources = _sources()
    assert len(sources) > 60
    assert wrong_way(sources, set(sources)) == []


def test_the_layering_check_fails_on_a_wrong_way_import():
    sources = _sources()
    planted = dict(sources)
    source, is_package = planted["tinyk.interop.hf"]
    planted["tinyk.interop.hf"] = (source + "\nfrom tinyk.grading.verdict import Verdict\n", is_package)
    assert wrong_way(planted, set(planted)) == ["tinyk.interop.hf -> tinyk.grading.verdict"]
    source, is_package = planted["tinyk.model"]
    late = "\ndef f():\n    from tinyk.learner import parts\n"  # a function-level import counts too
    planted = dict(sources, **{"tinyk.model": (source + late, False)})
    assert wrong_way(planted, set(planted)) == ["tinyk.model -> tinyk.learner.parts"]


def test_the_layers_themselves_have_no_circle():
    order: list[str] = []
    while len(order) < len(LAYERS):
        ready = [name for name, needs in LAYERS.items() if name not in order and needs <= set(order)]
        assert ready, f"a circle among {set(LAYERS) - set(order)}"
        order += ready
    assert len(order) == 9


def test_the_readme_layout_table_is_the_package_tree_and_its_layering():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):text.index("\n## ", text.index("## Layout") + 1)]
    rows = re.findall(r"^\| `tinyk/(\w+/|\*\.py)`[^|]* \| .+ \| ([\w, ]+) \|$", layout, re.M)
    table = {name.strip("/").replace("*.py", "core"): {w.strip() for w in allowed.split(",")} - {"nothing"}
             for name, allowed in rows}
    assert table == LAYERS
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS) - {"core"}
    top = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert len(top) <= MAX_TOP_LEVEL, sorted(top)
    named = top - {"__init__.py", "__main__.py"}
    assert len(named) == len(top) - 2
    for name in named:  # every module and subpackage is in the table
        assert f"`{name.removesuffix('.py')}" in layout or f"`tinyk/{name}" in layout, name


def test_each_subpackage_says_what_lives_there_and_what_it_may_import_and_re_exports_nothing():
    folders = sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert len(folders) == 8
    for folder in folders:
        tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree) or ""
        assert "May import" in doc, folder.name
        modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
        assert all(f"{folder.name}.{m}" in doc or f"~tinyk.{folder.name}.{m}" in doc or m in doc
                   for m in modules), (folder.name, [m for m in modules if m not in doc])
        assert [type(n).__name__ for n in tree.body if not isinstance(n, ast.Expr)] in ([], ["ImportFrom"]), \
            folder.name  # a docstring (and ``from __future__``) only: no name re-exported


def test_import_tinyk_loads_nothing_of_grading_reports_or_translations():
    code = ("import sys, json, tinyk; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tinyk'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                       text=True, cwd=ROOT).stdout)
    assert "tinyk.model" in loaded and "tinyk.generation" in loaded
    heavy = [m for m in loaded if m.split(".")[1:2] in (["grading"], ["reports"], ["translations"])]
    # the one function the model says its refusals with, in the language layer's package (which
    # imports nothing itself): nothing else of the three
    assert heavy == ["tinyk.translations", WORDS], heavy


@pytest.mark.parametrize("module", ["tinyk.translations", "tinyk.grading"])
def test_importing_a_subpackage_imports_none_of_its_modules(module):
    code = (f"import sys, tinyk; before = set(sys.modules); import {module}; "
            f"print(sum(m.startswith('{module}.') for m in set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "0"


def unmarked_part_holders(package: Path) -> list[str]:
    """The modules under ``package`` that define one of the package's versions of a part at
    their top level (a class, a function or a name of :data:`tinyk.learner.own_code.REFERENCES`)
    without the ``HOLDS_PARTS = True`` marker that withholds them from a graded run."""
    from tinyk.grading.learner_process import MARKER
    from tinyk.learner.own_code import REFERENCES

    references = {name for names in REFERENCES.values() for name in names}
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
        if defined & references and not MARKER.search(text):
            found.append(path.relative_to(package.parent).with_suffix("").as_posix().replace("/", "."))
    return found


def test_what_a_graded_run_withholds_comes_from_the_modules_own_marker():
    from tinyk.grading.learner_process import HIDDEN, holding_parts

    assert "tinyk.model" in HIDDEN and "tinyk.learner.part_checks" in HIDDEN and len(HIDDEN) == 7
    assert set(HIDDEN) == set(holding_parts(str(PACKAGE)))
    assert unmarked_part_holders(PACKAGE) == []


def test_a_new_module_holding_a_part_is_caught_without_moving_anything(tmp_path):
    from tinyk.grading.learner_process import holding_parts

    copy = tmp_path / "tinyk"
    (copy / "learner").mkdir(parents=True)
    (copy / "learner" / "fast_parts.py").write_text("def repeat_kv(x, n):\n    return x\n")
    assert unmarked_part_holders(copy) == ["tinyk.learner.fast_parts"]
    assert holding_parts(str(copy)) == ()
    marked = "HOLDS_PARTS = True\n\n\ndef repeat_kv(x, n):\n    return x\n"
    (copy / "learner" / "fast_parts.py").write_text(marked)
    assert unmarked_part_holders(copy) == []
    assert holding_parts(str(copy)) == ("tinyk.learner.fast_parts",)


def test_a_borrowed_call_into_a_subpackage_is_named_by_its_dotted_module():
    import torch

    from tinyk.interop.hf import permute_half_to_adjacent
    from tinyk.learner.own_code import BorrowedCall, run_own

    weight = torch.zeros(8, 4)
    with pytest.raises(BorrowedCall, match=r"tinyk\.interop\.hf\.permute_half_to_adjacent"):
        run_own("the part", lambda w: permute_half_to_adjacent(w, 2), weight)


def test_the_graders_transport_is_marked_and_never_the_learners_code():
    from tinyk.grading import answer_server, functions_for_proxies, proxies, verdict
    from tinyk.learner import own_code

    modules = (answer_server, functions_for_proxies, proxies, verdict, own_code)
    assert [m.GRADER_TRANSPORT for m in modules] == [True] * 5
    marked = [p.name for p in PACKAGE.rglob("*.py")
              if "\nGRADER_TRANSPORT = True" in p.read_text(encoding="utf-8")]
    assert sorted(marked) == sorted(f"{m.__name__.rsplit('.', 1)[1]}.py" for m in modules)


def words_the_core_takes(sources: dict[str, tuple[str, bool]]) -> set[str]:
    """The names the model core's modules import from the package's words."""
    taken = set()
    for module, (source, _) in sources.items():
        if layer_of(module) == "core" and module not in TOP:
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ImportFrom) and node.module == WORDS:
                    taken |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module == "tinyk.translations":
                    taken |= {f"tinyk.translations.{a.name}" for a in node.names}
    return taken


def test_the_model_core_takes_one_small_function_of_the_language_layer():
    sources = _sources()
    assert words_the_core_takes(sources) == {"say"}
    source, _ = sources["tinyk.model"]
    more = "\nfrom tinyk.translations.package_catalogue import chinese\n"
    planted = dict(sources, **{"tinyk.model": (source + more, False)})
    assert words_the_core_takes(planted) == {"say", "chinese"}
    # the function itself imports nothing of the package's but the switch that picks the language
    words, _ = sources[WORDS]
    assert imports_of(words, WORDS, False) == {"tinyk.environment", "tinyk.environment.feedback_in_chinese"}


def reexported(source: str) -> set[str]:
    """The names of a module's ``__all__`` that it imports from another of the package's."""
    tree = ast.parse(source)
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("tinyk") for a in n.names}
    listed = {e.value for n in tree.body if isinstance(n, ast.Assign)
              and any(getattr(t, "id", None) == "__all__" for t in n.targets)
              for e in getattr(n.value, "elts", []) if isinstance(e, ast.Constant)}
    return listed & imported


def test_no_module_but_tinyk_re_exports_another_ones_names():
    sources = _sources()
    found = {m: names for m, (source, _) in sources.items() if m != "tinyk" and (names := reexported(source))}
    assert found == {}
    assert reexported('from tinyk.model import RMSNorm\n__all__ = ["RMSNorm", "f"]\n') == {"RMSNorm"}
