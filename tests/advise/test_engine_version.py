"""The vLLM version a scenario names (``[deployment].engine_version``) is the one advise writes for, and a method
that version cannot run is reported as such, beside the candidates it can run: a separate draft model on vLLM
0.10-0.14 (V0 removed, V1's draft-model proposer from 0.15: vLLM PR #24322)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from tests.readme_examples import ROOT

EXAMPLE = ROOT / "examples/advise/summarize-low-qps.toml"
SCHEDULE = ROOT / "examples/advise/schedule-llama3-70b-qwama.toml"


def _scenario(tmp_path: Path, version: str) -> Path:
    text = EXAMPLE.read_text().replace("max_num_seqs = 128\n", f'max_num_seqs = 128\nengine_version = "{version}"\n')
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def _advise(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    rc = main(["advise", *args, "--json", "--processes", "1"])
    return rc, json.loads(capsys.readouterr().out)


def test_a_draft_model_on_012_is_unsupported_and_ngram_still_evaluated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc = _advise(["--scenario", str(_scenario(tmp_path, "0.12.0"))], capsys)
    verdicts = {c["candidate"]: c["verdict"] for c in doc["candidates"]}  # type: ignore[attr-defined]
    assert verdicts["draft_model:meta-llama/Llama-3.2-1B-Instruct"] == "unsupported"
    assert verdicts["ngram"] not in ("unsupported", "does_not_fit")
    assert rc in (0, 1) and doc["ranking"][0] == "ngram"  # type: ignore[index]


def test_the_config_is_written_for_the_scenarios_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The blog's Llama-3-70B / Qwama pair as if served by vLLM 0.9.2: no per-batch-size k there, and 0.9 runs a
    draft model on V0 (its fallback), on one GPU; --vllm-version still overrides the scenario's version. Operated at
    0.5 QPS, where it is enabled below a load (at the example's 1 QPS the band's low end sits on min_speedup: measure
    first, and no config is written)."""
    text = SCHEDULE.read_text().replace('engine_version = "0.6.3"', 'engine_version = "0.9.2"')
    text = text.replace("operating_qps = 1\n", "operating_qps = 0.5\n")
    path = tmp_path / "q.toml"
    path.write_text(text)
    rc, doc = _advise(["--scenario", str(path)], capsys)
    cfg = doc["vllm"]["speculative_config"]  # type: ignore[index]
    assert rc == 0 and "num_speculative_tokens_per_batch_size" not in cfg
    assert cfg["disable_by_batch_size"] > 1 and cfg["draft_tensor_parallel_size"] == 1
    rc, doc = _advise(["--scenario", str(path), "--vllm-version", "0.32"], capsys)  # V1: the draft at TP 4
    (cand,) = doc["candidates"]  # type: ignore[misc]
    assert rc == 1 and cand["verdict"] == "unsupported" and "14 attention heads" in cand["reason"]


def test_the_flag_is_the_vllm_simulated_and_written_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--vllm-version overrides the scenario's engine_version for the simulation too: a scenario saying 0.12 (no
    draft models) advised for 0.24 weighs the draft; for 0.9 the draft model is priced on V0, the engine 0.9 runs
    it on (its fallback), and the speedup says so."""
    scenario = str(_scenario(tmp_path, "0.12.1"))
    rc, doc = _advise(["--scenario", scenario, "--vllm-version", "0.24"], capsys)
    verdicts = {c["candidate"]: c["verdict"] for c in doc["candidates"]}  # type: ignore[attr-defined]
    assert rc == 0 and verdicts["draft_model:meta-llama/Llama-3.2-1B-Instruct"] not in ("unsupported", "does_not_fit")
    _, doc = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "0.9"], capsys)
    draft = next(c for c in doc["candidates"] if c["method"] == "draft_model")  # type: ignore[attr-defined]
    assert draft["sim"]["predictor"]["name"] == "published-fit (vllm-v0)"
    _, doc = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "0.20"], capsys)
    draft = next(c for c in doc["candidates"] if c["method"] == "draft_model")  # type: ignore[attr-defined]
    assert draft["sim"]["predictor"]["name"] == "published-fit (vllm-v1)"


def test_suffix_before_0_11_1_is_unsupported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's SpeculativeMethod gained "suffix" in 0.11.1 (not in 0.11.0's list)."""
    text = EXAMPLE.read_text().replace('method = "ngram"', 'method = "suffix"')
    text = text.replace("prompt_lookup_min = 2\n", "").replace("prompt_lookup_max = 4\n", "")
    path = tmp_path / "sfx.toml"
    path.write_text(text)
    _, doc = _advise(["--scenario", str(path), "--vllm-version", "0.11"], capsys)
    sfx = next(c for c in doc["candidates"] if c["method"] == "suffix")  # type: ignore[attr-defined]
    assert sfx["verdict"] == "unsupported" and "has no speculative method 'suffix'" in sfx["reason"]
    main(["advise", "--scenario", str(path), "--processes", "1", "--vllm-version", "0.11"])
    text_out = " ".join(capsys.readouterr().out.split())
    assert "unsupported suffix: vLLM 0.11.0 has no speculative method 'suffix'" in text_out  # said in the terminal


def test_sglang_runs_the_draft_in_the_targets_tp_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sg.toml"
    path.write_text(SCHEDULE.read_text().replace('engine_version = "0.6.3"', 'engine = "sglang"'))
    rc, doc = _advise(["--scenario", str(path)], capsys)
    (cand,) = doc["candidates"]  # type: ignore[misc]
    assert rc == 1 and doc["decision"] == "unsupported"
    assert cand["reason"].startswith("SGLang runs a draft at the target's tensor parallelism (4)")
    assert "vLLM before 0.10" not in cand["reason"]


def test_a_version_newer_than_any_read_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """A vLLM after the newest release whose config was read gets the config written as for that one, and says so;
    a patch release of the newest does not."""
    _, doc = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "99.0"], capsys)
    notes = doc["vllm"]["notes"]  # type: ignore[index]
    assert notes[0].startswith("vLLM 99.0.0 is newer than any release specwise has read (0.34)")
    _, doc = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "0.34.2"], capsys)
    assert not any("newer than any release" in n for n in doc["vllm"].get("notes", []))  # type: ignore[attr-defined]


def test_a_v0_command_says_why_its_token_budget_is_not_the_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On 0.9.2 the example's draft model runs on V0, which refuses max_num_batched_tokens (8192 here) below
    max_model_len (16384): the command writes 16384 and a note says why, and what the plan had sized."""
    _, doc = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "0.9.2"], capsys)
    argv, notes = doc["vllm"]["serve_argv"], doc["vllm"]["notes"]  # type: ignore[index]
    assert argv[argv.index("--max-num-batched-tokens") + 1] == argv[argv.index("--max-model-len") + 1] == "16384"
    assert any(n.startswith("--max-num-batched-tokens 16384, not the scenario's 8192: this vLLM runs") for n in notes)
    _, now = _advise(["--scenario", str(EXAMPLE), "--vllm-version", "0.32"], capsys)
    argv, notes = now["vllm"]["serve_argv"], now["vllm"].get("notes", [])  # type: ignore[index,attr-defined]
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "8192"
    assert not any("not the scenario's" in n for n in notes)
    sglang = tmp_path / "sglang.toml"  # its budget flag is --chunked-prefill-size: no vLLM V0 note about it
    sglang.write_text(EXAMPLE.read_text().replace("[deployment]\n", '[deployment]\nengine = "sglang"\n', 1))
    main(["advise", "--scenario", str(sglang), "--processes", "1"])
    said = " ".join(capsys.readouterr().out.split())  # as read, not as wrapped at 80 columns
    assert "-m sglang.launch_server" in said and "not the scenario's" not in said
