"""vLLM V1 runs a draft model only at the target's tensor parallelism (``DraftModelProposer``
``_raise_if_draft_tp_mismatch``); V0 ran one on a single GPU. A scenario asking V1 for draft_tp = 1 under TP 4 is
refused with the field named (exit 2), not simulated and written into a config vLLM refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.scenario import parse_scenario

SCENARIO = {
    "name": "v1-draft-tp",
    "deployment": {"target": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100-SXM-80GB", "tp": 4},
    "speculation": {
        "method": "draft_model",
        "draft": "meta-llama/Llama-3.2-1B-Instruct",
        "draft_tp": 1,
        "k": [0, 4],
        "acceptance": 0.7,
    },
    "sweep": {"qps": [1.0], "num_requests": 50},
    "workload": [
        {
            "name": "chat",
            "prompt_tokens": {"dist": "fixed", "mean": 500},
            "output_tokens": {"dist": "fixed", "mean": 100},
        }
    ],
}


def _with_version(version: str | None) -> dict[str, object]:
    deployment = dict(SCENARIO["deployment"])  # type: ignore[call-overload]
    if version:
        deployment["engine_version"] = version
    return {**SCENARIO, "deployment": deployment}


def test_v1_refuses_a_draft_on_one_gpu_under_a_tp4_target() -> None:
    with pytest.raises(SpecwiseError, match=r"draft_tp: 1, but vLLM V1 runs a draft model only at the target's"):
        parse_scenario(_with_version("0.20.0"))
    with pytest.raises(SpecwiseError, match="draft_tp"):
        parse_scenario(_with_version(None))  # the default engine is V1


def test_v0_ran_a_draft_on_one_gpu() -> None:
    assert parse_scenario(_with_version("0.6.3")).memory_plan.fits


def test_the_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        "name = 'x'\n[deployment]\ntarget = 'meta-llama/Llama-3.1-70B-Instruct'\ngpu = 'H100-SXM-80GB'\ntp = 4\n"
        "[speculation]\nmethod = 'draft_model'\ndraft = 'meta-llama/Llama-3.2-1B-Instruct'\ndraft_tp = 1\n"
        "k = [0, 4]\nacceptance = 0.7\n[sweep]\nqps = [1]\nnum_requests = 50\n"
        "[[workload]]\nname = 'chat'\nprompt_tokens = 500\noutput_tokens = 100\n"
    )
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert "draft_tp" in err and "Traceback" not in err


def test_09_falls_back_to_v0_which_ran_a_draft_on_one_gpu() -> None:
    """0.8 and 0.9 default to V1 but fall back to V0 for a draft model (arg_utils ``_raise_or_fallback``)."""
    assert parse_scenario(_with_version("0.9.2")).memory_plan.fits


@pytest.mark.parametrize("version", ["0.15.0", "0.32"])
def test_v1_from_015_runs_a_draft_only_at_the_targets_tp(version: str) -> None:
    with pytest.raises(SpecwiseError, match="draft_tp: 1, but vLLM V1"):
        parse_scenario(_with_version(version))


@pytest.mark.parametrize("version", ["0.10.0", "0.12", "0.14.1"])
def test_010_to_014_cannot_run_a_draft_model(version: str) -> None:
    """V0 gone, V1's draft-model proposer not yet there (PR #24322 is in 0.15): the server refuses at start."""
    scenario = _with_version(version)
    speculation = {**SCENARIO["speculation"], "draft_tp": 4}  # type: ignore[dict-item]
    with pytest.raises(SpecwiseError, match=r"\[deployment\]\.engine_version: vLLM .* cannot run a separate draft"):
        parse_scenario({**scenario, "speculation": speculation})


def test_a_malformed_engine_version_names_the_field() -> None:
    with pytest.raises(SpecwiseError, match=r"\[deployment\]\.engine_version: 'latest': expected a vLLM version"):
        parse_scenario(_with_version("latest"))


def test_a_method_before_the_release_that_named_it_is_refused() -> None:
    """vLLM's SpeculativeMethod: "suffix" from 0.11.1, "mtp" from 0.11.0 (0.10 knew only "deepseek_mtp")."""
    suffix = {**SCENARIO["speculation"], "method": "suffix"}  # type: ignore[dict-item]
    for key in ("draft", "draft_tp"):
        suffix.pop(key)
    scenario = {**_with_version("0.11.0"), "speculation": suffix}
    with pytest.raises(SpecwiseError, match=r"engine_version: vLLM 0.11.0 has no speculative method 'suffix'"):
        parse_scenario(scenario)
    assert parse_scenario({**_with_version("0.11.1"), "speculation": suffix}).method.name == "suffix"


@pytest.mark.parametrize(("version", "refused"), [("0.16.0", True), ("0.21.0", True), ("0.20.0", False), (None, False)])
def test_probabilistic_drafting_is_refused_where_advise_refuses_it(version: str | None, refused: bool) -> None:
    """simulate priced probabilistic drafting on a vLLM with no setting for it, which advise marks unsupported
    (VllmEngine.refusal): the scenario is refused the same way, naming [deployment].engine_version."""
    scenario = _with_version(version)
    draft_tp = {"draft_tp": 4}  # V1 (0.15+) runs a draft model at the target's TP
    scenario["speculation"] = {**SCENARIO["speculation"], **draft_tp, "drafting": "probabilistic"}  # type: ignore[dict-item]
    if not refused:
        assert parse_scenario(scenario).name == "v1-draft-tp"
        return
    with pytest.raises(SpecwiseError, match=r"engine_version: vLLM 0\.\d+\.0 drafts probabilistically"):
        parse_scenario(scenario)
    greedy = {**scenario, "speculation": {**scenario["speculation"], "drafting": "greedy"}}  # type: ignore[dict-item]
    assert parse_scenario(greedy).name == "v1-draft-tp"
