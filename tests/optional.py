"""Optional parts of the course: a test that needs one skips, with the reason and the install line.

``make test`` sets ``TINYK_REQUIRE_ALL=1`` in each of its test stages: there every part is
installed, so a missing one fails the run instead of hiding tests behind a skip. Every skip of
the tests goes through :func:`missing` (``tests/test_optional.py`` checks it).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

INSTALL = {
    "transformers": "pip install -e '.[hf]'",
    "gguf": "pip install -e '.[gguf]'",
    "accelerate": "pip install accelerate",
    "nbgrader": "pip install -e '.[instructor]'",
    "onnxscript": "pip install -e '.[web]'",
    "onnxruntime": "pip install -e '.[web]'",
    "kubernetes_validate": "pip install kubernetes-validate",
    "copydetect": "pip install -e '.[instructor]'",
    "jupyterlab": "pip install -r requirements.txt",
    "jupyter_cache": "pip install -r requirements.txt (it comes with jupyter-book)",
}


def missing(reason: str) -> None:
    """Skip the calling test (or module) for ``reason``; fail it under ``TINYK_REQUIRE_ALL``."""
    if os.environ.get("TINYK_REQUIRE_ALL"):
        pytest.fail(f"{reason} (TINYK_REQUIRE_ALL is set: make test needs every part)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need(module: str) -> ModuleType:
    """Import ``module`` or skip the calling test module with how to install it."""
    try:
        return __import__(module)
    except ImportError:
        missing(f"needs {module}: {INSTALL.get(module, 'pip install ' + module)}")
        raise


def smollm2_file() -> Path:
    """The SmolLM2-135M GGUF file, or a skip that says how to install it."""
    from tinyk.interop.gguf import smollm2_path

    try:
        return smollm2_path()
    except FileNotFoundError as err:
        missing(str(err))
        raise
