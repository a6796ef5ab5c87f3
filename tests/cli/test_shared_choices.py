"""One set of ``--kv-cache-dtype`` choices and one limit on k, from one place, in every command, scenario field and
API argument that takes them (review: plan-memory refused bf16 while inspect refused fp8_e4m3, and
plan-memory took --num-speculative-tokens 100 while a scenario's k stops at 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import specwise
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.methods import MAX_K
from specwise.scenario import load_scenario
from specwise.units import KV_CACHE_DTYPES

# vLLM 0.32's --kv-cache-dtype choices (CacheDType in vllm/config/cache.py), the version specwise targets
VLLM_CACHE_DTYPES = (
    "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla",
    "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc", "ultraquant_4bit",
    "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head", "nvfp4", "nvfp4_4over6",
)  # fmt: skip
BYTES_PER_ELEMENT = {"auto": "bf16", "float16": "fp16", "bfloat16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8",
                     "fp8_e5m2": "fp8"}  # fmt: skip  # Qwen3-8B is bf16
TARGET, GPU = "Qwen/Qwen3-8B", "L40S"
SCENARIO = (
    '[deployment]\ntarget = "Qwen/Qwen3-8B"\ngpu = "L40S"\nmax_model_len = 8192\nkv_cache_dtype = "{dtype}"\n'
    '[speculation]\nmethod = "ngram"\nk = {k}\nacceptance = 0.6\n[sweep]\nqps = [1.0]\nnum_requests = 20\n'
    '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 100\n'
)


def _scenario(tmp_path: Path, dtype: str = "auto", k: str = "[0, 2]") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(dtype=dtype, k=k))
    return path


def test_the_choices_are_vllms_names() -> None:
    assert set(KV_CACHE_DTYPES) <= set(VLLM_CACHE_DTYPES)  # never a name vllm serve --kv-cache-dtype refuses
    assert set(KV_CACHE_DTYPES) == set(BYTES_PER_ELEMENT)


@pytest.mark.parametrize("dtype", KV_CACHE_DTYPES)
def test_every_command_scenario_and_function_takes_every_choice_alike(
    dtype: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: plan-memory refused bfloat16 / float16, inspect refused fp8_e4m3 / fp8_e5m2 / float16 / bfloat16
    assert main(["plan-memory", "--target", TARGET, "--gpu", GPU, "--kv-cache-dtype", dtype, "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)["kv_cache_dtype"]
    assert main(["inspect", TARGET, "--kv-cache-dtype", dtype, "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)["kv_cache_dtype"]
    scenario = load_scenario(_scenario(tmp_path, dtype))
    assert planned == inspected == scenario.memory_plan.kv_cache_dtype == BYTES_PER_ELEMENT[dtype]
    assert specwise.plan_memory(TARGET, GPU, kv_cache_dtype=dtype).kv_cache_dtype == planned
    assert specwise.inspect(TARGET, kv_cache_dtype=dtype).kv_dtype == planned


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "int8", "nvfp4"])  # not vLLM's names / vLLM's, not priced here
def test_every_command_scenario_and_function_refuses_the_same_values(
    dtype: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = []
    for argv in (["plan-memory", "--target", TARGET, "--gpu", GPU], ["inspect", TARGET]):
        assert main([*argv, "--kv-cache-dtype", dtype]) == 2
        said.append(capsys.readouterr().err)
    for call in (
        lambda: load_scenario(_scenario(tmp_path, dtype)),
        lambda: specwise.plan_memory(TARGET, GPU, kv_cache_dtype=dtype),
        lambda: specwise.inspect(TARGET, kv_cache_dtype=dtype),
    ):
        with pytest.raises(SpecwiseError) as exc:
            call()
        said.append(str(exc.value))
    for message in said:
        assert dtype in message and all(choice in message for choice in KV_CACHE_DTYPES), message


def test_num_speculative_tokens_has_the_scenarios_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["plan-memory", "--target", TARGET, "--gpu", GPU, "--draft", "Qwen/Qwen3-0.6B", "--json"]
    assert main([*base, "--num-speculative-tokens", str(MAX_K)]) == 0
    capsys.readouterr()
    assert load_scenario(_scenario(tmp_path, k=f"[0, {MAX_K}]")).sweep.k_values[-1] == MAX_K
    # before: --num-speculative-tokens 100 was planned, while k = [100] is refused in a scenario
    assert main([*base, "--num-speculative-tokens", str(MAX_K + 1)]) == 2
    assert f"expected an integer in 1..{MAX_K}, got '{MAX_K + 1}'" in capsys.readouterr().err
    with pytest.raises(
        SpecwiseError, match=rf"\[speculation\]\.k: must be a non-empty list of integers in 0\.\.{MAX_K}"
    ):
        load_scenario(_scenario(tmp_path, k=f"[0, {MAX_K + 1}]"))
    # the API checks the argument with the flag's own check (review 12), so it reads as the flag's message
    with pytest.raises(SpecwiseError, match=rf"num_speculative_tokens: expected an integer in 1\.\.{MAX_K}, got '17'"):
        specwise.plan_memory(TARGET, GPU, num_speculative_tokens=MAX_K + 1)
