"""Review 12, defects 5, 6 and 8: plan-memory refuses what vLLM refuses, as the scenario loader does, and a fit
broken by the activations of a huge ``max_num_batched_tokens`` says so, naming the setting.

* #5 ``--max-num-batched-tokens`` below ``--max-num-seqs``: vLLM's SchedulerConfig refuses it and so does a
  scenario; plan-memory said "fits" (with a smaller reserve, even more KV).
* #6 ``--draft-tp 1`` for a full draft model at ``--tp 4``: vLLM V1 refuses it (``_raise_if_draft_tp_mismatch``)
  and so do simulate and advise; plan-memory said "fits". An EAGLE head keeps the choice of 1 or the target's TP.
* #8 ``max_num_batched_tokens = 100000000``: "the target does not fit: the weights and reserve need 11078 GiB",
  naming neither the setting nor that its activation reserve is the 11 TB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.catalog import resolve_gpu, resolve_model
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.memory.vllm_rules import batched_tokens_refusal
from specwise.scenario import load_scenario

LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"
LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
EAGLE3 = "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"
H100 = "H100-SXM-80GB"
SCHEDULER = "vLLM's SchedulerConfig refuses less (vllm/config/scheduler.py)"

SCENARIO = """
name = "huge"
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
max_model_len = 8192
{deployment}

[speculation]
method = "ngram"
acceptance = 0.6

[sweep]
qps = [1]
num_requests = 100

[[workload]]
name = "chat"
prompt_tokens = 500
output_tokens = 200
"""


def _plan_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["plan-memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- #5: max_num_batched_tokens below max_num_seqs ----


def test_plan_memory_refuses_fewer_batched_tokens_than_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    # before: rc 0, "fits: 489,296 KV tokens"
    code, out, err = _plan_cli(
        capsys, "--target", LLAMA70, "--gpu", H100, "--tp", "4", "--max-num-batched-tokens", "10",
        "--max-num-seqs", "256",
    )  # fmt: skip
    assert code == 2 and not out
    assert f"--max-num-batched-tokens 10: must be at least --max-num-seqs (256): {SCHEDULER}" in err
    assert len(err.strip().splitlines()) == 1
    code, _, _ = _plan_cli(capsys, "--target", LLAMA70, "--gpu", H100, "--tp", "4", "--max-num-batched-tokens", "256")
    assert code == 0  # as many tokens as sequences is what vLLM takes


def test_the_loader_and_plan_memory_state_one_rule(tmp_path: Path) -> None:
    # the scenario loader's words are the shared rule's (parse.py still states them itself: not this fix's file)
    path = tmp_path / "lt.toml"
    path.write_text(SCENARIO.format(deployment="max_num_batched_tokens = 300\nmax_num_seqs = 512"))
    with pytest.raises(SpecwiseError) as exc:
        load_scenario(path)
    assert f"[deployment].max_num_batched_tokens: {batched_tokens_refusal(512, 300)}" in str(exc.value)
    assert batched_tokens_refusal(512, 512) is None
    with pytest.raises(SpecwiseError, match=r"must be at least --max-num-seqs \(512\)"):
        MemoryPlanRequest(target=resolve_model(LLAMA8), gpu=resolve_gpu(H100), max_num_batched_tokens=300,
                          max_num_seqs=512)  # fmt: skip


# ---- #6: a draft model at a TP other than the target's ----


def test_plan_memory_refuses_a_draft_model_off_the_targets_tp(capsys: pytest.CaptureFixture[str]) -> None:
    # before: rc 0, "fits: 308,704 KV tokens"; --draft-tp 3 said "vLLM allows 1 or the target's --tp (4)"
    for draft_tp in ("1", "2"):
        code, out, err = _plan_cli(
            capsys, "--target", LLAMA70, "--gpu", H100, "--tp", "4", "--draft", DRAFT, "--draft-tp", draft_tp
        )
        assert code == 2 and not out
        assert (
            f"--draft-tp {draft_tp}, but vLLM V1 runs a draft model only at the target's tensor parallelism (4): "
            "set --draft-tp 4 or leave it out" in err
        )
    code, _, _ = _plan_cli(capsys, "--target", LLAMA70, "--gpu", H100, "--tp", "4", "--draft", DRAFT, "--draft-tp", "4")
    assert code == 0


def test_an_eagle_head_may_still_sit_on_one_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    # simulate applies the V1 rule to draft_model only; a head keeps vLLM's 1-or-the-target's choice
    code, out, _ = _plan_cli(
        capsys, "--target", LLAMA70, "--gpu", H100, "--tp", "4", "--draft", EAGLE3, "--draft-tp", "1", "--json"
    )
    assert code == 0 and json.loads(out)["draft"]["tp"] == 1


# ---- #8: the activation reserve of max_num_batched_tokens breaks the fit ----


def test_a_huge_token_budget_is_named_in_the_scenario_error(tmp_path: Path) -> None:
    # before: "[deployment]: the target does not fit: the weights and reserve need 11078.57 GiB per GPU ..."
    path = tmp_path / "huge.toml"
    path.write_text(SCENARIO.format(deployment="max_num_batched_tokens = 100000000"))
    with pytest.raises(SpecwiseError) as exc:
        load_scenario(path)
    message = str(exc.value)
    assert "the target does not fit: [deployment].max_num_batched_tokens = 100000000 breaks the fit" in message
    assert "\n" not in message


def test_plan_memory_names_the_token_budget_and_the_largest_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _plan_cli(
        capsys, "--target", LLAMA8, "--gpu", H100, "--max-model-len", "8192", "--max-num-batched-tokens",
        "100000000", "--json",
    )  # fmt: skip
    problems = json.loads(out)["problems"]
    assert code == 1 and problems[0].startswith("--max-num-batched-tokens 100000000 breaks the fit: activations")
    largest = int(problems[0].split("; --max-num-batched-tokens ")[1].split()[0])
    request = MemoryPlanRequest(
        target=resolve_model(LLAMA8), gpu=resolve_gpu(H100), max_model_len=8192, max_num_batched_tokens=largest
    )
    assert plan_memory(request).fits  # the value it names fits, one more does not
    from dataclasses import replace

    assert not plan_memory(replace(request, max_num_batched_tokens=largest + 1)).fits


def test_no_token_budget_hint_where_the_weights_are_what_miss(capsys: pytest.CaptureFixture[str]) -> None:
    # 70B on one H100: no max_num_batched_tokens would fit it, so the setting is not blamed
    code, out, _ = _plan_cli(capsys, "--target", LLAMA70, "--gpu", H100, "--json")
    assert code == 1 and not any("max-num-batched-tokens" in p for p in json.loads(out)["problems"])
    code, out, _ = _plan_cli(
        capsys, "--target", LLAMA8, "--gpu", H100, "--max-num-batched-tokens", "100000000", "--reserve-gib", "75",
        "--json",
    )  # fmt: skip
    assert code == 1 and not any("max-num-batched-tokens" in p for p in json.loads(out)["problems"])  # overridden
