# Shopping Arena: set-up, checks and the local network. `make test` is what CI runs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_LLM_STAMP := $(VENV)/.local-llm
TRAIN_STAMP := $(VENV)/.train
# llama.cpp's native build segfaults on some CPUs; this portable AVX2 build works everywhere we run.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF
DEMO_ARGS ?=
PYTEST_ARGS ?=
LEARN_ARGS ?=

.PHONY: install install-local-llm install-train tools lint test test-slow test-local-llm test-train test-openenv demo bench learn learn-quick clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

install-local-llm: $(LOCAL_LLM_STAMP)

$(LOCAL_LLM_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q -e '.[dev,local-llm]'
	@touch $@

install-train: $(TRAIN_STAMP)

$(TRAIN_STAMP): $(LOCAL_LLM_STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,local-llm,train]'
	@touch $@

# promtool and docker-compose (Debian packages) for the deploy/ checks; a no-op when present.
tools:
	@bash deploy/tools.sh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: install lint tools
	$(BIN)/pytest $(PYTEST_ARGS)

test-slow: install
	$(BIN)/pytest -m slow $(PYTEST_ARGS)

test-local-llm: install-local-llm
	$(BIN)/pytest -m local_llm $(PYTEST_ARGS)

test-train: install
	$(BIN)/python -m pip install -q -e '.[dev,train]'
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(BIN)/pytest -m train $(PYTEST_ARGS)

# OpenEnv's own client against `arena env serve --openenv` on loopback (installs the openenv extra).
test-openenv: install
	$(BIN)/python -m pip install -q -e '.[dev,openenv]'
	$(BIN)/pytest -m openenv $(PYTEST_ARGS)

# The install's output goes to stderr, so that `make demo DEMO_ARGS=--json` prints only the JSON on stdout.
demo:
	@$(MAKE) --no-print-directory install-local-llm >&2
	@$(BIN)/arena demo $(DEMO_ARGS)

# learn.py trains a model for up to two hours: it has its own targets.
bench: install
	@for b in bench/*.py; do [ "$$b" = bench/learn.py ] && continue; echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The learning proof: fine-tune the embedded model on the export, evaluate base and tuned on held-out tasks.
learn: install-train
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(BIN)/python bench/learn.py $(LEARN_ARGS)

learn-quick: install-train
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(BIN)/python bench/learn.py --quick $(LEARN_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build *.egg-info
