# poolsplit -- `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.DEFAULT_GOAL := help
.PHONY: help install demo demo-postgres test lint bench bench-profiles bench-build bench-compare mutate clean

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps make a second run fast: reinstall only when pyproject.toml changes.
$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@ $(VENV)/.core

$(VENV)/.mutate: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[mutate]"
	touch $@ $(VENV)/.dev $(VENV)/.core

install: $(VENV)/.dev  ## create .venv and install poolsplit with every extra

demo: $(VENV)/.core  ## the main job: single budget vs pool-split on the shipped store
	$(BIN)/poolsplit demo

demo-postgres: $(VENV)/.dev  ## the same demo, the sample store in a throwaway PostgreSQL
	$(BIN)/poolsplit demo --postgres

lint: $(VENV)/.dev  ## ruff, and mypy --strict on the core, the CLI and both adapters
	$(BIN)/ruff check .
	$(BIN)/mypy poolsplit_core poolsplit_integrations

test: lint  ## lint, then the whole test suite (notebooks included)
	$(BIN)/python -m pytest

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
BASE ?= c88fe01
bench-compare: $(VENV)/.dev  ## the core against revision BASE's, new/old per path (BASE=c88fe01)
	git show $(BASE):poolsplit_core/poolsplit.py > $(VENV)/base_poolsplit.py
	$(BIN)/python benchmarks/compare_cores.py $(VENV)/base_poolsplit.py

# Mutants to run: every one of the core by default, or globs of mutant names,
# e.g. make mutate MUTANTS='poolsplit_core.poolsplit.x__recency*'. Each runs the
# seeded differential (on MUTATE_STORES stores) and the spec tests ([tool.mutmut]).
MUTANTS ?=
MUTATE_STORES ?= 150

mutate: $(VENV)/.mutate  ## mutation testing of the core with mutmut (long; prints the survivors)
	POOLSPLIT_SEEDED_STORES=$(MUTATE_STORES) $(BIN)/mutmut run $(MUTANTS)
	@echo "surviving mutants (mutmut show NAME for the diff):"
	@$(BIN)/mutmut results

clean:  ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache mutants
