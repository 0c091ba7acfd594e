# poolsplit -- `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.DEFAULT_GOAL := help
.PHONY: help install demo demo-postgres test test-latest lock package lint docs docs-serve bench bench-profiles bench-build bench-compare mutate clean

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# Every install pins every package, transitive ones included, to the committed lock, so that
# nobody else's release changes what the tests run on. `make lock` refreshes it on purpose;
# LOCK= (what `make test-latest` passes) installs the newest releases pyproject.toml's ranges allow.
LOCK ?= requirements/lock.txt
PIN   = $(if $(LOCK),-c $(LOCK),--upgrade --upgrade-strategy eager)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps make a second run fast: reinstall only when pyproject.toml or the lock changes.
$(VENV)/.core: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIN) -e .
	touch $@

$(VENV)/.docs: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIN) -e ".[docs]"
	touch $@ $(VENV)/.core

$(VENV)/.dev: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIN) -e ".[dev]"
	touch $@ $(VENV)/.core $(VENV)/.docs

$(VENV)/.mutate: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIN) -e ".[mutate]"
	touch $@ $(VENV)/.dev $(VENV)/.core $(VENV)/.docs

# The wheels the package tests install into clean virtualenvs, offline: what the README's
# quickstarts need (the framework extras and everything they pull in).
$(VENV)/.wheelhouse: pyproject.toml $(LOCK) | $(BIN)/python
	rm -rf $(VENV)/wheelhouse
	$(BIN)/python -m pip download -q $(if $(LOCK),-c $(LOCK)) -d $(VENV)/wheelhouse \
	  ".[langchain,llamaindex,langgraph]"
	touch $@

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

test: lint $(VENV)/.wheelhouse $(VENV)/.browser  ## lint, then every test (notebooks, the docs' strict build, the site in a browser, the built package)
	$(BIN)/python -m pytest

# The same checks in a virtualenv of their own, on the newest releases the ranges allow: what a
# user who runs `pip install poolsplit[...]` today gets. Run it before refreshing the lock.
test-latest:  ## make test on the newest releases pyproject.toml allows (in .venv-latest, no lock)
	rm -f .venv-latest/.core .venv-latest/.docs .venv-latest/.dev .venv-latest/.wheelhouse
	$(MAKE) test VENV=.venv-latest LOCK=

lock: $(VENV)/.dev  ## refresh requirements/lock.txt: the newest releases every extra allows
	$(BIN)/uv pip compile pyproject.toml --all-extras --universal --python-version 3.10 \
	  --upgrade --quiet --output-file $(LOCK)

package: $(VENV)/.dev  ## build the sdist and the wheel into dist/ and check them with twine
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist
	$(BIN)/twine check --strict dist/*

# The documentation site (mkdocs.yml, docs/): a warning fails the build.
docs: $(VENV)/.docs  ## build the documentation site into site/ (mkdocs build --strict)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(VENV)/.docs  ## serve the documentation at http://127.0.0.1:8000, rebuilt as you edit
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

bench: $(VENV)/.dev  ## speed: every path, the adapters per turn, LangGraph on PostgreSQL, every store profile, what tracing costs a read
	$(BIN)/python benchmarks/bench_retrieve.py
	$(BIN)/python benchmarks/bench_adapters.py
	$(BIN)/python benchmarks/bench_langgraph.py
	$(BIN)/python benchmarks/bench_profiles.py
	$(BIN)/python benchmarks/bench_tracing.py

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

clean:  ## remove the virtualenvs, the caches, the built site and the built package
	rm -rf $(VENV) .venv-latest .pytest_cache .hypothesis .mypy_cache .ruff_cache mutants site dist
