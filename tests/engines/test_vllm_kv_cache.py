"""An fp8 KV cache on a vLLM release and GPU that cannot serve it as written (review s48a F2, F3; s48c F1-F5): 0.8.2
to 0.10.2 send a non-auto KV cache to V0 unless FlashAttention 3 takes it (compute capability 9.0; 10.0 from 0.10),
where 0.10.x refuse speculation and 0.8.2 to 0.9 run it on V0, and any V0 server needs V0's token budget; 0.8.2 to
0.21 on Hopper read an e5m2 cache as e4m3 (to 0.10.0) or stop (0.10.1 on)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.catalog import catalog_gpus
from specwise.cli import main
from specwise.engines.vllm_kv_cache import kv_cache_engine, kv_cache_notes, kv_cache_refusal
from specwise.engines.vllm_versions import VllmVersion
from tests.readme_examples import ROOT

V = VllmVersion.parse
GPUS = catalog_gpus()


@pytest.mark.parametrize(
    ("version", "gpu", "kv", "engine"),
    [
        ("0.9.2", "A100-SXM-80GB", "fp8", "v0"),
        ("0.9.2", "L40S", "fp8_e4m3", "v0"),  # Ada has fp8 tensor cores, but no FlashAttention 3
        ("0.9.2", "H100-SXM-80GB", "fp8", "as-written"),
        ("0.9.2", "B200-SXM-180GB", "fp8", "v0"),  # 0.9's test is compute capability 9.0 only
        ("0.10.1", "B200-SXM-180GB", "fp8", "as-written"),
        ("0.10.2", "A100-SXM-40GB", "fp8_e5m2", "v0"),
        ("0.10.2", "MI300X", "fp8", "as-written"),  # ROCm
        ("0.11.0", "A100-SXM-80GB", "fp8", "as-written"),  # V0 gone: Triton off Hopper
        ("0.8.5", "A100-SXM-80GB", "fp8", "v0"),
        ("0.8.2", "L4", "fp8", "v0"),
        ("0.8.5", "H100-SXM-80GB", "fp8_e5m2", "as-written"),
        ("0.7.3", "A100-SXM-80GB", "fp8", "as-written"),  # V0 already, whatever the cache
        ("0.10.1", "A100-SXM-80GB", "auto", "as-written"),
        ("0.10.1", "A100-SXM-80GB", "bfloat16", "as-written"),  # written as auto beside a 16-bit model
    ],
)
def test_which_engine_serves_the_kv_cache(version: str, gpu: str, kv: str, engine: str) -> None:
    assert kv_cache_engine(V(version), kv, GPUS[gpu]) == engine


def test_a_gpu_of_unknown_capability_is_not_guessed_at() -> None:
    unknown = replace(GPUS["A100-SXM-80GB"], compute_capability=None)
    assert kv_cache_engine(V("0.10.1"), "fp8", unknown) == "as-written"
    assert kv_cache_engine(None, "fp8", GPUS["A100-SXM-80GB"]) == "as-written"  # the current vLLM


def test_the_refusal_says_what_the_release_does_and_the_remedy() -> None:
    a100 = GPUS["A100-SXM-80GB"]
    on_010 = kv_cache_refusal(V("0.10.1"), "fp8", a100, "eagle3") or ""
    on_09 = kv_cache_refusal(V("0.9.2"), "fp8", a100, "ngram") or ""
    on_082 = kv_cache_refusal(V("0.8.2"), "fp8", a100, "ngram") or ""
    assert "Speculative decoding is not supported on vLLM V0" in on_010 and "compute capability 8.0" in on_010
    assert all("prices on V1" in r for r in (on_09, on_082))
    assert all('kv_cache_dtype = "auto", or engine_version to 0.11' in r for r in (on_010, on_09, on_082))
    assert kv_cache_refusal(V("0.10.1"), "fp8", a100, "none") is None  # plain decoding runs on V0
    assert kv_cache_refusal(V("0.10.1"), "fp8", GPUS["H100-SXM-80GB"], "eagle3") is None


def test_a_method_already_priced_on_v0_is_not_refused() -> None:
    """A draft model on 0.9 and every method on 0.8.3 to 0.8.5 run on V0 anyway, and are priced so (review s48c
    F3); the remedy for a draft model names the release that runs one on V1."""
    a100 = GPUS["A100-SXM-80GB"]
    assert kv_cache_refusal(V("0.9.2"), "fp8", a100, "draft_model") is None
    assert kv_cache_refusal(V("0.8.5"), "fp8", a100, "eagle") is None
    assert "engine_version to 0.15 or later" in (kv_cache_refusal(V("0.10.1"), "fp8", a100, "draft_model") or "")


@pytest.mark.parametrize(
    ("version", "gpu", "said"),
    [
        ("0.8.5", "H100-SXM-80GB", "wrong output"),
        ("0.9.2", "H100-SXM-80GB", "wrong output"),
        ("0.10.0", "H100-SXM-80GB", "wrong output"),
        ("0.10.1", "H100-SXM-80GB", "Unrecognized FP8 dtype"),
        ("0.11.0", "H200-SXM-141GB", "Unrecognized FP8 dtype"),
        ("0.17.1", "H100-PCIe-80GB", "Unrecognized FP8 dtype"),
        ("0.18.0", "H100-SXM-80GB", "Unrecognized FP8 dtype"),
        ("0.20.0", "H100-SXM-80GB", "Unrecognized FP8 dtype"),
        ("0.22.0", "H100-SXM-80GB", None),
        ("0.11.0", "A100-SXM-80GB", None),
        ("0.7.3", "H100-SXM-80GB", None),
    ],
)
def test_an_e5m2_cache_on_hopper_is_warned_of(version: str, gpu: str, said: str | None) -> None:
    notes = kv_cache_notes(V(version), "fp8_e5m2", GPUS[gpu])
    assert (said is None and notes == ()) or (said is not None and len(notes) == 1 and said in notes[0])
    assert kv_cache_notes(V(version), "fp8", GPUS[gpu]) == ()


def _scenario(tmp_path: Path, lines: str) -> Path:
    text = (ROOT / "tests/advise/scenarios/l8-eagle3.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(text.replace("[deployment]\n", f"[deployment]\n{lines}", 1))
    return path


def test_advise_marks_the_candidate_unsupported_and_simulate_refuses_the_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _scenario(tmp_path, 'kv_cache_dtype = "fp8"\nengine_version = "0.10.1"\n')
    path.write_text(path.read_text().replace('gpu = "H100-SXM-80GB"', 'gpu = "A100-SXM-80GB"'))
    rc = main(["advise", str(path), "--json", "--processes", "1"])
    doc = json.loads(capsys.readouterr().out)
    (cand,) = doc["candidates"]
    assert rc == 1 and cand["verdict"] == "unsupported" and "V0 engine" in cand["reason"]
    sim = tmp_path / "sim.toml"
    text = (ROOT / "examples/llama70b-ngram.toml").read_text().replace('gpu = "H100-SXM-80GB"', 'gpu = "A100-SXM-80GB"')
    sim.write_text(text.replace("tp = 4\n", 'tp = 4\nkv_cache_dtype = "fp8"\nengine_version = "0.10.1"\n'))
    rc = main(["simulate", "--scenario", str(sim)])
    err = capsys.readouterr().err
    assert rc == 2 and "[deployment].kv_cache_dtype" in err and "Traceback" not in err


def test_the_serve_command_carries_the_e5m2_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scenario(tmp_path, 'kv_cache_dtype = "fp8_e5m2"\nengine_version = "0.11.0"\n')
    main(["advise", str(path), "--json", "--processes", "1"])
    doc = json.loads(capsys.readouterr().out)
    notes = doc["vllm"].get("notes", [])
    assert any("Unrecognized FP8 dtype" in n for n in notes), notes


def test_the_plain_command_of_a_v0_server_takes_v0s_token_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM 0.10.1 serves an fp8 cache on an A100 on V0 with or without speculation; V0 refuses a token budget
    below --max-model-len (review s48c F2): the plain command left after the refusal raises it, and says why."""
    path = _scenario(tmp_path, 'kv_cache_dtype = "fp8"\nengine_version = "0.10.1"\n')
    text = path.read_text().replace('gpu = "H100-SXM-80GB"', 'gpu = "A100-SXM-80GB"')
    path.write_text(text.replace("max_model_len = 8192", "max_model_len = 16384"))
    main(["advise", str(path), "--json", "--processes", "1"])
    doc = json.loads(capsys.readouterr().out)
    argv = doc["vllm"]["serve_argv"]
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "16384"
    assert any("runs the whole server" in n for n in doc["vllm"].get("notes", [])), doc["vllm"]


@pytest.mark.parametrize(
    ("gpu", "version", "chunked"),
    [
        ("A100-SXM-80GB", "0.9.0", False),  # fp8 off FA3's cards: the whole server on V0, whole prompts up to 32K
        ("H100-SXM-80GB", "0.9.0", True),  # FA3 takes the fp8 cache: the plain server stays on V1
        ("A100-SXM-80GB", "0.15.0", True),  # V1 takes it from 0.11 (and a draft model from 0.15)
    ],
)
def test_a_plain_server_sent_to_v0_by_its_kv_cache_is_simulated_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: str, version: str, chunked: bool
) -> None:
    """A draft model on 0.9 runs on V0 anyway, so the scenario is not refused; its plain server, sent to V0 by the
    fp8 cache on an A100, prefills whole prompts with V0's budget (at least max_model_len), as the plain command
    written for it does (review s49a M4)."""
    from specwise.scenario.toml_loader import load_scenario
    from specwise.study import sweep

    text = (ROOT / "examples/llama70b-4xh100.toml").read_text().replace('gpu = "H100-SXM-80GB"', f'gpu = "{gpu}"')
    path = tmp_path / "s.toml"
    path.write_text(text.replace("tp = 4 ", f'kv_cache_dtype = "fp8"\nengine_version = "{version}"\ntp = 4 ', 1))
    sc = load_scenario(path)
    assert sc.baseline_chunked_prefill is chunked
    seen = []
    monkeypatch.setattr(sweep, "simulate", lambda requests, classes, engine, *rest: seen.append(engine))
    sweep._simulate(sc, None, 0, None)  # type: ignore[arg-type]
    (engine,) = seen
    assert engine.chunked_prefill is chunked
    assert engine.max_num_batched_tokens == (8192 if chunked else 16384)  # max(budget, max_model_len)
