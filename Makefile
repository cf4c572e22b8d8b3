# Everything installs itself on a fresh machine: `make demo`, `make test`, `make bench`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: deps jars bytecode lint test demo bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,connect]'
	touch $(STAMP)

deps: $(STAMP)

# RocketMQ 5.3.3 jars from Maven Central into the cache (reused when present).
jars: deps
	$(VENV)/bin/rmq-console sandbox fetch

# The project's bytecode, written as `pip install` writes an installed package's: every command
# is a new process, and where the environment says not to write bytecode on import
# (PYTHONDONTWRITEBYTECODE) each of them would compile every module it imports again.
bytecode: deps
	$(PY) -m compileall -q -j 0 console jobs tests

lint: deps
	$(VENV)/bin/ruff check console jobs tests
	$(VENV)/bin/ruff format --check console jobs tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: lint jars bytecode
	$(PY) -m tests.streams

demo: jars bytecode
	$(VENV)/bin/rmq-console demo

bench: jars bytecode
	$(PY) -m tests.benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
