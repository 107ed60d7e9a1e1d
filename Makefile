# The two commands the README opens with.  Everything else is a helper for them.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PROMPT ?= Give a short tour of this repository: what it is, how it is laid out, and how to run its tests.

.PHONY: run test install install-dev lint check bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# compileall: an editable install gets no .pyc files when PYTHONDONTWRITEBYTECODE is set.
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m compileall -q src

install-dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

## run: install nestor and run its main job on this repository
run: install
	$(BIN)/nestor run "$(PROMPT)"

## test: install the dev dependencies and run the whole check
test: install-dev lint
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/pyright
	$(BIN)/lint-imports

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist
