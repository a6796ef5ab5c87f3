"""``specwise drafts``: catalog drafts ranked for a target -- same vocabulary, size ratio, memory -- with reasons;
exit 1 when no draft model or head fits."""

from __future__ import annotations

import json
from typing import Any

import pytest

import specwise
from specwise.catalog import resolve_gpu, resolve_model
from specwise.cli import main
from specwise.compat.drafts import memory_check, placement_check, rank_drafts, suggest_drafts
from specwise.memory import MemoryPlanRequest

LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["drafts", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_llama_70b_on_4_h100s(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(capsys, "--target", LLAMA70, "--gpu", "H100-SXM-80GB", "--tp", "4")
    assert code == 0
    names = [d["draft"] for d in doc["drafts"]]
    # the EAGLE-3 head trained for this target first; a draft model inside 1:8-1:12 before smaller ones
    assert names[0] == "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B" and doc["drafts"][0]["method"] == "eagle3"
    assert names.index("meta-llama/Llama-3.1-8B-Instruct") < names.index("meta-llama/Llama-3.2-1B-Instruct")
    assert names[-2:] == ["ngram", "suffix"]
    assert not any(n.startswith(("Qwen/", "google/")) for n in names)  # other vocabularies never listed as fitting
    head_for_llama3 = next(d for d in doc["drafts"] if d["draft"] == "yuhuili/EAGLE-LLaMA3-Instruct-70B")
    assert "trained for meta-llama/Meta-Llama-3-70B-Instruct" in head_for_llama3["summary"]
    assert all(d["fits"] and 0.0 <= d["kv_cache_cost"] < 1.0 for d in doc["drafts"])


def test_all_shows_why_the_others_do_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(capsys, "--target", LLAMA70, "--all")
    gemma = next(d for d in doc["drafts"] if d["draft"] == "google/gemma-3-1b-it")
    assert code == 0 and not gemma["fits"] and "different vocabularies" in gemma["summary"]
    assert any(r.startswith("fail: different vocabularies") for r in gemma["reasons"])


def test_memory_can_leave_only_lookup_methods(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(capsys, "--target", "Qwen/Qwen3-8B", "--gpu", "L4", "--max-model-len", "8192")
    assert code == 1 and [d["draft"] for d in doc["drafts"]] == ["ngram", "suffix"]
    code, doc = _run(capsys, "--target", "Qwen/Qwen3-8B", "--gpu", "L40S", "--max-model-len", "16384")
    assert code == 0 and doc["drafts"][0]["draft"] == "AngelSlim/Qwen3-8B_eagle3"


def test_a_target_that_cannot_be_served_is_said_not_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 7: --tp 3 for a 64-head target was "no draft fits" (exit 1) with n-gram "fits: yes"."""
    assert main(["drafts", "--target", LLAMA70, "--gpu", "H100-SXM-80GB", "--tp", "3"]) == 2
    assert "64 attention heads do not divide evenly over 3 GPUs" in capsys.readouterr().err
    code, doc = _run(capsys, "--target", LLAMA70, "--gpu", "L4")  # 70B on one L4: nothing to draft for
    assert code == 1 and doc["target_fits"] is False and "misses by" in doc["why"] and "drafts" not in doc


def test_mtp_layers_and_a_draft_that_needs_tp_1() -> None:
    v3 = resolve_model("deepseek-ai/DeepSeek-V3")
    found = suggest_drafts(v3, plan_for=memory_check(MemoryPlanRequest(v3, resolve_gpu("H200"), tp=8)))
    assert found[0].draft == "mtp" and found[0].fits
    # Qwama's 14 heads do not split over 4 GPUs, and vLLM V1 runs a draft only at the target's TP: not placeable
    # (V0, before vLLM 0.10, ran it on one GPU; a draft on one GPU is no longer offered as if it would run)
    llama = resolve_model(LLAMA70)
    plan_for = memory_check(MemoryPlanRequest(llama, resolve_gpu("H100-SXM-80GB"), tp=4))
    qwama = next(s for s in suggest_drafts(llama, plan_for=plan_for) if s.draft == "turboderp/Qwama-0.5B-Instruct")
    assert not qwama.fits and "14 attention heads" in qwama.summary and "target's tensor parallelism" in qwama.summary
    one_b = next(s for s in suggest_drafts(llama, plan_for=plan_for) if s.draft == "meta-llama/Llama-3.2-1B-Instruct")
    assert one_b.fits  # 32 heads split over 4


def test_tp_and_context_apply_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """Review: --tp and --max-model-len were read only with --gpu (yet --json echoed "tp": 4): Qwama's 14 heads were
    "fits: yes" at --tp 4, and --tp 3 or a context past the target's positions exited 0. Only memory needs a GPU."""
    qwama = "turboderp/Qwama-0.5B-Instruct"
    code, doc = _run(capsys, "--target", LLAMA70, "--tp", "4", "--all")
    rows = {d["draft"]: d for d in doc["drafts"]}
    assert code == 0 and doc["tp"] == 4 and doc["gpu"] is None
    assert not rows[qwama]["fits"] and "14 attention heads do not divide evenly over 4 GPUs" in rows[qwama]["summary"]
    assert rows["meta-llama/Llama-3.2-1B-Instruct"]["fits"]  # 32 heads split over 4
    assert rows["meta-llama/Llama-3.2-1B-Instruct"]["kv_cache_cost"] is None  # memory not checked
    # the placement refusal is the one the memory plan gives with a GPU, word for word
    _, with_gpu = _run(capsys, "--target", LLAMA70, "--tp", "4", "--all", "--gpu", "H100-SXM-80GB")
    placed = [r for r in rows[qwama]["reasons"] if r.startswith("cannot be placed")]
    assert placed and placed == [
        r for d in with_gpu["drafts"] if d["draft"] == qwama for r in d["reasons"] if r.startswith("cannot be placed")
    ]
    _, at_tp1 = _run(capsys, "--target", LLAMA70, "--all")
    assert next(d for d in at_tp1["drafts"] if d["draft"] == qwama)["fits"]  # on one GPU its heads are no bar
    for argv, said in (
        (["--tp", "3"], "64 attention heads do not divide evenly over 3 GPUs"),
        (["--max-model-len", "99999999999"], "exceeds meta-llama/Llama-3.1-70B-Instruct's max_position_embeddings"),
    ):
        assert main(["drafts", "--target", LLAMA70, *argv]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err


def test_a_head_is_no_target_with_or_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    for gpu in ([], ["--gpu", "H100"]):
        assert main(["drafts", "--target", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", *gpu]) == 2
        assert "is an eagle3 head, a draft" in capsys.readouterr().err


def test_json_names_the_catalog_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """--gpu h100 is the table's H100-SXM-80GB; --json said "h100"."""
    code, doc = _run(capsys, "--target", LLAMA70, "--gpu", "h100", "--tp", "4")
    assert code == 0 and doc["gpu"] == resolve_gpu("h100").name == "H100-SXM-80GB"
    code, doc = _run(capsys, "--target", LLAMA70, "--gpu", "l4")
    assert code == 1 and doc["gpu"] == "L4" and doc["target_fits"] is False


def test_placement_without_memory_is_the_library_answer() -> None:
    llama = resolve_model(LLAMA70)
    report = rank_drafts(llama, tp=4)
    assert not report.memory_checked and report.a_model_fits and report.tp == 4
    rows = {s.draft: s for s in report.drafts}
    assert not rows["turboderp/Qwama-0.5B-Instruct"].fits and rows["ngram"].fits and rows["ngram"].kv_cost == 0.0
    assert [s.draft for s in suggest_drafts(llama, plan_for=placement_check(4))] == [s.draft for s in report.drafts]


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drafts", "--target", LLAMA70]) == 0
    out = capsys.readouterr().out
    assert "memory not checked: give --gpu" in out and "EAGLE3-LLaMA3.3-Instruct-70B" in out


def test_a_moe_targets_ratio_is_by_active_parameters() -> None:
    """The 1:8-1:12 advice is about per-token cost, which a MoE target's active parameters set: the drafts table
    shows that ratio (Qwen3-30B-A3B over Qwen2.5-0.5B: 61.8:1 by all parameters, ~6.8:1 by active ones)."""
    rows = {s.draft: s for s in suggest_drafts(resolve_model("Qwen/Qwen3-30B-A3B"))}
    row = rows["Qwen/Qwen2.5-0.5B-Instruct"]
    assert row.ratio_of == "active params" and row.param_ratio is not None and 5 < row.param_ratio < 9
    dense = {s.draft: s for s in suggest_drafts(resolve_model("Qwen/Qwen3-8B"))}
    assert dense["Qwen/Qwen3-0.6B"].ratio_of == "params"


@pytest.mark.parametrize("gpu", [[], ["--gpu", "H100-SXM-80GB"]])
def test_lookup_methods_cost_no_kv_in_text_and_json(gpu: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Review D #2: n-gram and suffix take no KV cache whether or not memory is checked; the table's "0%" and the
    JSON's kv_cache_cost say the same (it was null without --gpu, the table "-" beside other rows' "-")."""
    code, doc = _run(capsys, "--target", LLAMA70, "--tp", "4", *gpu)
    rows = {d["draft"]: d for d in doc["drafts"]}
    assert code == 0 and rows["ngram"]["kv_cache_cost"] == 0.0 and rows["suffix"]["kv_cache_cost"] == 0.0
    assert main(["drafts", "--target", LLAMA70, "--tp", "4", "--wide", *gpu]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if " ngram " in line or " suffix " in line]
    assert len(lines) == 2 and all("│ 0%" in line for line in lines), lines


@pytest.mark.parametrize("target", ["deepseek-ai/DeepSeek-V3", "zai-org/GLM-4.5-Air"])
def test_the_mtp_row_shows_the_ratio_check_pair_computes(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Review D #2: the MTP row's target:draft was "-" while check-pair --draft mtp reports its ratios; the row
    shows check-pair's (active parameters for these MoE targets, as every MoE row), its findings among the reasons."""
    pair = specwise.check_pair(target, "mtp")
    code, doc = _run(capsys, "--target", target)
    mtp = next(d for d in doc["drafts"] if d["draft"] == "mtp")
    assert code == 0 and mtp["fits"]
    assert mtp["param_ratio"] == pair.active_param_ratio and mtp["param_ratio_of"] == "active params"
    size = next(f for f in pair.findings if f.check == "size_ratio")
    assert f"{size.status}: {size.message}" in mtp["reasons"]
    assert main(["drafts", "--target", target, "--wide"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if " mtp " in line)
    assert f"1:{pair.active_param_ratio:.1f} active" in row  # draft:target, as check-pair writes it


def test_without_a_gpu_nothing_claims_it_fits_in_memory(capsys: pytest.CaptureFixture[str]) -> None:
    """A first-hour review: without --gpu every row said "fits yes" under a title saying memory was not checked.
    The column then says what was checked (vLLM can serve the pair) and the JSON says memory was not."""
    code, doc = _run(capsys, "--target", "Qwen/Qwen3-8B")
    assert code == 0 and doc["memory_checked"] is False and doc["gpu"] is None
    _, on_gpu = _run(capsys, "--target", "Qwen/Qwen3-8B", "--gpu", "H100-SXM-80GB")
    assert on_gpu["memory_checked"] is True
    for argv, column in (((), "serves"), (("--gpu", "H100-SXM-80GB"), "fits")):
        assert main(["drafts", "--target", "Qwen/Qwen3-8B", "--wide", *argv]) == 0
        header = next(line for line in capsys.readouterr().out.splitlines() if "draft" in line and "method" in line)
        assert column in header.split() and ({"serves", "fits"} - {column}).isdisjoint(header.split()), header
