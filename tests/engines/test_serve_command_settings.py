"""The serve command advise prints, and the launch file it writes, carry every deployment setting the memory plan and
the simulation used (review 12 #2: with ``kv_cache_dtype = "fp8"`` and ``max_num_batched_tokens = 16384`` the pasted
``vllm serve`` had neither, so vLLM kept a BF16 KV cache -- half the tokens planned -- and its own token budget)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import parse_inputs
from specwise.engines import get_engine
from specwise.engines.base import Deployment
from specwise.engines.sglang import KV_CACHE_DTYPES as SGLANG_KV_CACHE_DTYPES
from specwise.engines.sglang import chunked_prefill_size
from specwise.loadgen.launcher import load_launch_file
from specwise.units import KV_CACHE_DTYPES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


def _flag(argv: list[str] | tuple[str, ...], flag: str) -> str | None:
    """The value after ``flag`` (None: absent); a flag given twice fails."""
    assert list(argv).count(flag) <= 1, argv
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_vllm_passes_the_kv_cache_dtype_and_the_token_budget() -> None:
    d = Deployment("m", max_num_seqs=64, max_num_batched_tokens=16384, kv_cache_dtype="fp8_e5m2")
    engine = get_engine("vllm")
    for argv in (engine.serve_argv(d, None), engine.deployment_args(d)):
        assert _flag(argv, "--kv-cache-dtype") == "fp8_e5m2"
        assert _flag(argv, "--max-num-batched-tokens") == "16384"
        assert _flag(argv, "--max-num-seqs") == "64"


def test_vllm_leaves_an_auto_kv_cache_dtype_to_the_model() -> None:
    argv = get_engine("vllm").serve_argv(Deployment("m"), None)
    assert "--kv-cache-dtype" not in argv and "--max-num-batched-tokens" not in argv  # nothing planned: defaults


def _scenario(tmp_path: Path, deployment: str, min_speedup: float = 1.05) -> Path:
    """summarize-low-qps with ``deployment`` lines added to [deployment]; a high ``min_speedup`` makes it measure
    first (the band's low end misses it), so advise writes a launch file."""
    text = (EXAMPLES / "summarize-low-qps.toml").read_text()
    text = text.replace("[deployment]\n", f"[deployment]\n{deployment}", 1)
    text = text.replace("min_speedup = 1.05\n", f"min_speedup = {min_speedup}\n", 1)
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


def _advise(path: Path) -> dict[str, Any]:
    data = tomllib.loads(path.read_text())
    return advise(parse_inputs(data, str(path), path.parent), processes=1).to_json()


SETTINGS = 'kv_cache_dtype = "fp8"\nmax_num_batched_tokens = 16384\nquantization = "fp8"\n'


def test_the_advised_command_serves_what_was_planned(tmp_path: Path) -> None:
    doc = _advise(_scenario(tmp_path, SETTINGS))
    assert doc["decision"] == "enable"
    top = next(c for c in doc["candidates"] if c["candidate"] == doc["recommended"])
    assert top["memory"]["kv_cache_dtype"] == "fp8"  # what the plan sized the KV cache for
    argv = doc["vllm"]["serve_argv"]
    assert _flag(argv, "--kv-cache-dtype") == "fp8"
    assert _flag(argv, "--max-num-batched-tokens") == "16384"
    assert _flag(argv, "--quantization") == "fp8"
    assert "--kv-cache-dtype fp8" in doc["vllm"]["serve_command"]


def test_the_launch_file_serves_what_was_planned(tmp_path: Path) -> None:
    doc = _advise(_scenario(tmp_path, SETTINGS, min_speedup=1.5))
    assert doc["decision"] == "measure_first"
    launch_path = tmp_path / "measure.toml"
    launch_path.write_text(doc["measure"]["launch_toml"])
    launch = load_launch_file(launch_path)
    assert _flag(launch.extra_args, "--kv-cache-dtype") == "fp8"
    assert _flag(launch.extra_args, "--max-num-batched-tokens") == "16384"
    assert _flag(launch.extra_args, "--quantization") == "fp8"  # the fp8 target: quantised online in the bench too
    assert _flag(launch.extra_args, "--max-num-seqs") == "128"


@pytest.mark.parametrize(("kv", "flag"), [("fp8_e4m3", "fp8_e4m3"), ("bfloat16", None), ("float16", None)])
def test_a_default_token_budget_is_still_written(kv: str, flag: str | None, tmp_path: Path) -> None:
    """vLLM's own default depends on the GPU (2,048 on an A100 or L4, 8,192 on an H100, 16,384 on a B200:
    ``EngineArgs.get_batch_defaults``); the plan and the simulation used the scenario's (default 8,192). A 16-bit KV
    cache beside the bf16 model is vLLM's auto: no flag. The model's own name would stop vLLM 0.8 to 0.10 (review
    s46b F5); float16 beside a bf16 model, every vLLM but 0.18 to 0.32 (review s48a F1), and the note says why it
    is left out."""
    doc = _advise(_scenario(tmp_path, f'kv_cache_dtype = "{kv}"\n'))
    argv = doc["vllm"]["serve_argv"]
    assert _flag(argv, "--max-num-batched-tokens") == "8192"
    assert _flag(argv, "--kv-cache-dtype") == flag
    assert json.loads(_flag(argv, "--speculative-config") or "{}")["method"] == "draft_model"
    notes = doc["vllm"].get("notes", [])
    assert len([n for n in notes if n.startswith("no --kv-cache-dtype")]) == (kv == "float16"), notes


def test_a_16_bit_cache_beside_a_16_bit_model_is_always_auto() -> None:
    from specwise.advisor.commands import _kv_flag

    assert [_kv_flag(kv, "bf16") for kv in ("float16", "bfloat16", "fp8_e5m2", "auto")] == [
        "auto",
        "auto",
        "fp8_e5m2",
        "auto",
    ]
    assert _kv_flag("bfloat16", "float16") == "auto"
    assert _kv_flag("float16", "fp32") == "float16"  # an fp32 model: the choice is a real change, written


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_launch_files_flags_quantise_online_as_the_command_does(engine: str) -> None:
    """An fp8 target's launch file loaded the bf16 checkpoint: ``extra_args`` had no ``--quantization fp8``."""
    e = get_engine(engine)
    d = Deployment("m", quantization="fp8", max_num_seqs=32)
    assert _flag(e.deployment_args(d), "--quantization") == "fp8"
    assert _flag(e.serve_argv(d, None), "--quantization") == "fp8"


@pytest.mark.parametrize(
    ("kv", "sglang_kv"),
    [
        ("fp8", "fp8_e4m3"),
        ("fp8_e4m3", "fp8_e4m3"),
        ("fp8_e5m2", "fp8_e5m2"),
        ("bfloat16", "bfloat16"),
        ("float16", None),  # SGLang has no float16 KV cache: auto keeps an fp16 model's own 2 bytes (review 13 #4)
    ],
)
def test_sglang_passes_the_kv_cache_dtype_and_the_token_budget_in_its_own_words(kv: str, sglang_kv: str | None) -> None:
    """SGLang's command had neither (the leftover of review 12 #2): its --kv-cache-dtype has no "fp8" or "float16",
    and its token budget is --chunked-prefill-size."""
    d = Deployment("m", max_num_seqs=64, max_num_batched_tokens=16384, kv_cache_dtype=kv)
    engine = get_engine("sglang")
    for argv in (engine.serve_argv(d, None), engine.deployment_args(d)):
        assert _flag(argv, "--kv-cache-dtype") == sglang_kv
        assert _flag(argv, "--chunked-prefill-size") == "16384"
        assert _flag(argv, "--max-running-requests") == "64"
        assert "--max-num-batched-tokens" not in argv
    bare = engine.serve_argv(Deployment("m"), None)
    assert "--kv-cache-dtype" not in bare and "--chunked-prefill-size" not in bare  # nothing planned: defaults


@pytest.mark.parametrize(("budget", "chunk"), [(16384, 16384), (8192, 8192), (2000, 1984), (100, 64), (1, 64)])
def test_sglang_chunk_size_is_a_multiple_of_every_backends_page_size(budget: int, chunk: int) -> None:
    """SGLang asserts chunked_prefill_size % page_size == 0 at start-up, and its page size is 16-64 on some attention
    backends: an odd budget is rounded down to a multiple of 64, so a chunk stays within the planned budget (64 at
    least)."""
    assert chunked_prefill_size(budget) == chunk
    argv = get_engine("sglang").deployment_args(Deployment("m", max_num_batched_tokens=budget))
    assert _flag(argv, "--chunked-prefill-size") == str(chunk)
    assert all(chunk % page == 0 for page in (1, 16, 32, 64))


def test_every_scenario_kv_cache_dtype_has_an_sglang_name() -> None:
    assert set(SGLANG_KV_CACHE_DTYPES) == set(KV_CACHE_DTYPES) - {"auto"}
    # SGLang's own choices (python/sglang/srt/server_args.py, ServerArgs.kv_cache_dtype): no "fp8", no "float16"
    sglang_choices = {"auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16"}
    sglang_choices.add("fp4_e2m1")
    assert {v for v in SGLANG_KV_CACHE_DTYPES.values() if v is not None} <= sglang_choices


def test_the_advised_sglang_command_serves_what_was_planned(tmp_path: Path) -> None:
    doc = _advise(_scenario(tmp_path, 'engine = "sglang"\n' + SETTINGS))
    argv = doc["sglang"]["serve_argv"]
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert _flag(argv, "--kv-cache-dtype") == "fp8_e4m3"
    assert _flag(argv, "--chunked-prefill-size") == "16384"
    assert _flag(argv, "--quantization") == "fp8"
