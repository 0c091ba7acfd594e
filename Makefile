# poolsplit -- `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.DEFAULT_GOAL := help
.PHONY: help install demo demo-postgres test lint docs docs-serve bench bench-profiles bench-build bench-compare mutate clean

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps make a second run fast: reinstall only when pyproject.toml changes.
$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[docs]"
	touch $@ $(VENV)/.core

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@ $(VENV)/.core $(VENV)/.docs

$(VENV)/.mutate: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[mutate]"
	touch $@ $(VENV)/.dev $(VENV)/.core $(VENV)/.docs

install: $(VENV)/.dev  ## create .venv and install poolsplit with every extra

demo: $(VENV)/.core  ## the main job: single budget vs pool-split on the shipped store
	$(BIN)/poolsplit demo

demo-postgres: $(VENV)/.dev  ## the same demo, the sample store in a throwaway PostgreSQL
	$(BIN)/poolsplit demo --postgres

lint: $(VENV)/.dev  ## ruff, and mypy --strict on the core, the CLI and both adapters
	$(BIN)/ruff check .
	$(BIN)/mypy poolsplit_core poolsplit_integrations

# The browser tests/test_site_browser.py renders the site in: Debian's chromium, and a CJK
# font so that the Chinese pages measure as a reader's browser draws them.
$(VENV)/.browser: | $(BIN)/python
	dpkg -s chromium fonts-wqy-microhei >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); $$sudo apt-get update -q \
	  && $$sudo apt-get install -y -q chromium fonts-wqy-microhei; }
	touch $@

test: lint $(VENV)/.browser  ## lint, then the whole test suite (notebooks, the docs' strict build and the site in a browser included)
	$(BIN)/python -m pytest

# The documentation site (mkdocs.yml, docs/): a warning fails the build.
docs: $(VENV)/.docs  ## build the documentation site into site/ (mkdocs build --strict)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(VENV)/.docs  ## serve the documentation at http://127.0.0.1:8000, rebuilt as you edit
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

bench: $(VENV)/.dev  ## speed: every path, the adapters per turn, LangGraph on PostgreSQL, every store profile
	$(BIN)/python benchmarks/bench_retrieve.py
	$(BIN)/python benchmarks/bench_adapters.py
	$(BIN)/python benchmarks/bench_langgraph.py
	$(BIN)/python benchmarks/bench_profiles.py

bench-profiles: $(VENV)/.dev  ## speed on seven store profiles, each prepared engine: every path and adapter, p95, BM25 peers, plot
	$(BIN)/python benchmarks/bench_profiles.py

bench-build: $(VENV)/.dev  ## what a pure-Python word index costs to build, next to PreparedStore's build
	$(BIN)/python benchmarks/build_floor.py

# The core file against an earlier revision's, timed side by side in one process.
BASE ?= d1a50f3
# A revision without poolsplit_core/prepared.py holds the prepared store in its core file.
bench-compare: $(VENV)/.dev  ## the core against an earlier revision's (BASE=REV), new/old per path
	git show $(BASE):poolsplit_core/poolsplit.py > $(VENV)/base_poolsplit.py
	set --; if git cat-file -e $(BASE):poolsplit_core/prepared.py 2>/dev/null; then \
	  git show $(BASE):poolsplit_core/prepared.py > $(VENV)/base_prepared.py; \
	  set -- --old-prepared $(VENV)/base_prepared.py; fi; \
	$(BIN)/python benchmarks/compare_cores.py $(VENV)/base_poolsplit.py "$$@"

# Mutants to run: every one of the core by default, or globs of mutant names,
# e.g. make mutate MUTANTS='poolsplit_core.poolsplit.x__recency*'. Each runs the
# seeded differential (on MUTATE_STORES stores) and the spec tests ([tool.mutmut]).
MUTANTS ?=
MUTATE_STORES ?= 150

mutate: $(VENV)/.mutate  ## mutation testing of the core with mutmut (long; prints the survivors)
	POOLSPLIT_SEEDED_STORES=$(MUTATE_STORES) $(BIN)/mutmut run $(MUTANTS)
	@echo "surviving mutants (mutmut show NAME for the diff):"
	@$(BIN)/mutmut results

clean:  ## remove the virtualenv, the caches and the built site
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache mutants site
