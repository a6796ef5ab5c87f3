"""``advise --vllm-version``: the k-by-batch-size schedule in the form each vLLM version takes
(``specwise.engines.vllm_versions`` has the versions and their sources; the slow tier checks the current form
against vLLM 0.32's own SpeculativeConfig: tests/integration/test_vllm_versions.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specwise.catalog import catalog_models
from specwise.cli import main
from specwise.engines import Speculation, get_engine
from specwise.engines.vllm import VllmEngine
from specwise.engines.vllm_versions import (
    VllmVersion,
    draft_model_engine,
    draft_name_refusal,
    eagle3_target_refusal,
    first_off_batch,
    head_tp_refusal,
    method_refusal,
    probabilistic_drafting_key,
    schedule_form,
    served_draft_tp,
    speculation_engine,
)
from specwise.errors import SpecwiseError
from specwise.methods import get_method
from tests.readme_examples import ROOT

SCHEDULE = ((1, 34, 4), (35, 64, 2), (65, 256, 0))
SPEC = Speculation(get_method("ngram"), 2, prompt_lookup=(2, 4), schedule=SCHEDULE)


@pytest.mark.parametrize(
    ("text", "parsed", "form"),
    [
        ("0.32.0+cpu", VllmVersion(0, 32, 0), "per_batch_size"),
        ("v0.24.0rc1", VllmVersion(0, 24, 0), "per_batch_size"),
        ("0.23.1", VllmVersion(0, 23, 1), "none"),
        ("0.10", VllmVersion(0, 10, 0), "none"),
        ("0.9.2", VllmVersion(0, 9, 2), "disable_by_batch_size"),
        ("0.8.2", VllmVersion(0, 8, 2), "disable_by_batch_size"),
    ],
)
def test_versions_parse_and_pick_a_form(text: str, parsed: VllmVersion, form: str) -> None:
    assert VllmVersion.parse(text) == parsed and schedule_form(parsed) == form


def test_too_old_or_malformed_versions_are_one_line() -> None:
    with pytest.raises(SpecwiseError, match="separate --speculative-model"):
        schedule_form(VllmVersion.parse("0.6.3"))
    with pytest.raises(SpecwiseError, match="expected a version like"):
        VllmVersion.parse("latest")


@pytest.mark.parametrize("text", ["0.8", "0.8.0", "0.8.1"])
def test_before_0_8_2_there_is_no_speculative_config(text: str) -> None:
    # 0.8.0 and 0.8.1's vllm/engine/arg_utils.py have --speculative-model / --num-speculative-tokens but no
    # --speculative-config (first in 0.8.2): specwise writes no JSON they would refuse; "0.8" is its .0
    with pytest.raises(SpecwiseError, match=r"before 0\.8\.2 takes only separate --speculative-model"):
        schedule_form(VllmVersion.parse(text))
    with pytest.raises(SpecwiseError, match="give the exact version"):
        get_engine("vllm", text)
    assert schedule_form(VllmVersion.parse("0.8.2")) == "disable_by_batch_size"


@pytest.mark.parametrize(
    ("version", "method", "honoured"),
    [
        ("0.8.3", "ngram", True),  # 0.8.3-0.8.5: every speculative method on V0
        ("0.8.2", "ngram", False),  # 0.8.2 picks V1 for a --speculative-config server (its oracle reads old flags)
        ("0.8.5", "eagle3", True),
        ("0.9.1", "draft_model", True),  # 0.9.x: a draft model falls back to V0
        ("0.9.1", "ngram", False),  # the rest run on V1, which ignores the key
        ("0.9.2", "eagle", False),
    ],
)
def test_disable_by_batch_size_note_says_whether_the_engine_honours_it(
    version: str, method: str, honoured: bool
) -> None:
    (note,) = get_engine("vllm", version).schedule_notes(SCHEDULE, 2, method)
    assert "disable_by_batch_size=65 turns speculation off from batch 65" in note
    if honoured:
        assert f"runs {method} on the V0 engine, which honours it" in note and "ignores" not in note
    else:
        assert f"runs {method} on V1, which ignores it, unless the server starts with VLLM_USE_V1=0" in note
    (unknown,) = get_engine("vllm", version).schedule_notes(SCHEDULE, 2)
    assert "on the V0 engine only (V1 ignores it; 0.8.3-0.8.5 run every speculative method on V0)" in unknown


def test_each_form_of_the_schedule() -> None:
    current = get_engine("vllm").speculative_config(SPEC)
    assert current == get_engine("vllm", "0.24").speculative_config(SPEC)
    assert current["num_speculative_tokens"] == 4  # the largest k: vLLM sizes its buffers by it
    assert current["num_speculative_tokens_per_batch_size"] == [list(b) for b in SCHEDULE]
    mid = get_engine("vllm", "0.20")
    cfg = mid.speculative_config(SPEC)
    assert cfg == {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    (note,) = mid.schedule_notes(SCHEDULE, 2)
    assert "k=2 at every batch size" in note and "k=0 for batch 65-256" in note and "above batch 64" in note
    old = get_engine("vllm", "0.9").speculative_config(SPEC)
    assert old["disable_by_batch_size"] == 65 and "num_speculative_tokens_per_batch_size" not in old
    assert get_engine("vllm").schedule_notes(SCHEDULE, 2) == ()
    with pytest.raises(SpecwiseError, match="applies to the vllm engine"):
        get_engine("sglang", "0.20")


def test_first_off_batch_is_the_start_of_the_last_zero_run() -> None:
    assert first_off_batch(SCHEDULE) == 65
    assert first_off_batch(((1, 8, 0), (9, 32, 3))) is None  # k comes back: no "off from batch B"
    assert first_off_batch(((1, 8, 3), (9, 16, 0), (17, 32, 0))) == 9


def test_advise_vllm_version_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    # the blog's Llama-3-70B / Qwama pair at 1 QPS (the shipped example): enable below a load, with a schedule
    scenario = ROOT / "examples/advise/schedule-llama3-70b-qwama.toml"
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "enable_below"
    # 0.9 takes no per-batch-size k: the headline does not promise one, it names the load to stay below
    # (it clears 1.05x at 4 QPS, not at 8: interpolated between them)
    assert "schedule" not in doc["headline"]
    assert re.search(r"only while the load stays below ~[4-7]\.\d QPS", doc["headline"]), doc["headline"]
    cfg = doc["vllm"]["speculative_config"]
    assert "num_speculative_tokens_per_batch_size" not in cfg and cfg["num_speculative_tokens"] == 4
    assert cfg["disable_by_batch_size"] > 1 and cfg["draft_tensor_parallel_size"] == 1  # V0 runs it on one GPU
    assert "no per-batch-size k" in doc["vllm"]["notes"][0]
    # 0.20 (V1) would run the 0.5B draft at TP 4, which its 14 heads do not divide: no config it refuses at start
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.20"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["candidates"][0]["verdict"] == "unsupported" and "14 attention heads" in doc["candidates"][0]["reason"]
    assert doc["vllm"]["speculative_config"] is None
    assert main(["advise", "--scenario", str(scenario), "--vllm-version", "0.6"]) == 2
    assert "separate --speculative-model" in capsys.readouterr().err


def test_an_emitted_schedule_carries_vllms_cuda_graph_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.32 drops full CUDA graphs for a per-batch-size k (and the schedule under data parallelism): the
    advice says so next to the config that sets it, and not next to one that does not."""
    scenario = ROOT / "examples/advise/schedule-llama31-70b-1b.toml"
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1"]) == 0
    vllm = json.loads(capsys.readouterr().out)["vllm"]
    assert "num_speculative_tokens_per_batch_size" in vllm["speculative_config"]
    assert any("PIECEWISE" in n and "VLLM_USE_V2_MODEL_RUNNER=1" in n for n in vllm["notes"])
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.20"]) == 0
    # 0.20 takes no per-batch-size k (and at its step costs the runs' interval makes the verdict measure first: no
    # config and no notes): nothing says PIECEWISE
    assert not any("PIECEWISE" in n for n in json.loads(capsys.readouterr().out)["vllm"].get("notes", []))


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        (None, "v1"),
        ("0.8", "v0"),  # V1 by default, falls back to V0 for a draft model
        ("0.9.2", "v0"),
        ("0.10.0", "none"),  # V0 gone; "Speculative decoding with draft model is not supported yet"
        ("0.14.1", "none"),
        ("0.15.0", "v1"),  # DraftModelProposer (PR #24322)
        ("0.32.0+cpu", "v1"),
    ],
)
def test_which_engine_runs_a_draft_model(text: str | None, engine: str) -> None:
    assert draft_model_engine(VllmVersion.parse(text) if text else None) == engine


# What each release's vllm/engine/arg_utils.py (_is_v1_supported_oracle, VLLM_USE_V1 unset) ran each method on:
# 0.8.x let only ngram (0.8.0-0.8.2), eagle (0.8.3-0.8.4) and eagle3 (0.8.5) past "Speculative Decoding", then sent
# those back to V0 as experimental (_warn_or_fallback); 0.9.x kept ngram, eagle, eagle3, deepseek_mtp on V1.
_RELEASES = ("0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2")
_SPECWISE_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model")


@pytest.mark.parametrize("release", _RELEASES)
@pytest.mark.parametrize("method", _SPECWISE_METHODS)
def test_which_engine_a_speculating_server_of_0_8_or_0_9_runs(release: str, method: str) -> None:
    expected = "v0" if release.startswith("0.8.") or method == "draft_model" else "v1"
    if release == "0.8.2":  # its oracle tests --speculative-model, unset with a --speculative-config: V1 for all
        expected = "v1"
    assert speculation_engine(VllmVersion.parse(release), method) == expected


@pytest.mark.parametrize(
    ("text", "method", "engine"),
    [
        ("0.7.3", None, "v0"),  # V1 opt-in before 0.8, speculating or not
        ("0.7.3", "ngram", "v0"),
        ("0.8.2", None, "v1"),  # no speculation: 0.8 is V1
        ("0.8.2", "none", "v1"),
        ("0.8", "eagle", "v0"),  # a version without its patch is its .0
        ("0.9", "eagle", "v1"),
        ("0.9.2", "deepseek_mtp", "v1"),  # vLLM's own names
        ("0.9.2", "medusa", "v1"),
        ("0.8.5", "medusa", "v0"),
        ("0.9.2", "suffix", "v0"),  # not in 0.9's list: _raise_or_fallback
        ("0.10.0", "draft_model", "v1"),  # refused on 0.10-0.14 (draft_model_refusal); priced on V1 as before
        ("0.10.0", "eagle", "v1"),
        ("0.15.1", "draft_model", "v1"),
        (None, "draft_model", "v1"),
        (None, "eagle", "v1"),
    ],
)
def test_speculation_engine_at_the_edges(text: str | None, method: str | None, engine: str) -> None:
    assert speculation_engine(VllmVersion.parse(text) if text else None, method) == engine


def test_the_config_for_a_draft_model_follows_the_version() -> None:
    draft = Speculation(get_method("draft_model"), 4, draft="meta-llama/Llama-3.2-1B-Instruct", draft_tp=1, target_tp=4)
    assert VllmEngine(VllmVersion(0, 9)).speculative_config(draft)["draft_tensor_parallel_size"] == 1  # V0
    assert VllmEngine(VllmVersion(0, 15)).speculative_config(draft)["draft_tensor_parallel_size"] == 4  # V1: TP
    assert VllmEngine().speculative_config(draft)["draft_tensor_parallel_size"] == 4
    old = VllmEngine(VllmVersion(0, 12))
    assert old.refusal(get_method("ngram")) is None
    assert "cannot run a separate draft model" in (old.refusal(get_method("draft_model")) or "")
    with pytest.raises(SpecwiseError, match="cannot run a separate draft model"):
        old.speculative_config(draft)  # never a config the server refuses at start


def test_advise_for_a_version_without_draft_models(capsys: pytest.CaptureFixture[str]) -> None:
    """--vllm-version 0.12: a draft-model candidate is 'unsupported' (not simulated, no config); the answer is no."""
    scenario = ROOT / "examples/advise/evidence-qwen3-8b-draft-batch128.toml"
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.12"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (cand,) = doc["candidates"]
    assert cand["verdict"] == "unsupported" and "0.10 to 0.14" in cand["reason"] and cand["sim"] is None
    assert doc["decision"] == "unsupported"
    assert doc["headline"].startswith("No candidate can run on vLLM 0.12.0 as proposed")  # the version named
    assert doc["vllm"]["speculative_config"] is None


@pytest.mark.parametrize(
    ("version", "method", "refused"),
    [
        ("0.8.4", "eagle3", True),  # no "eagle3" anywhere in 0.8.4's vllm/
        ("0.8.5", "eagle3", False),  # llama_eagle3.py, SpeculativeConfig keeps method "eagle3"
        ("0.8.0", "eagle", False),
        ("0.10.2", "mtp", True),
        ("0.11.0", "mtp", False),
        ("0.11.0", "suffix", True),
        ("0.11.1", "suffix", False),  # config/speculative.py lists "suffix" and its suffix_decoding_* fields
        ("0.12.0", "suffix", False),
    ],
)
def test_the_first_release_of_each_method(version: str, method: str, refused: bool) -> None:
    why = method_refusal(VllmVersion.parse(version), method)
    assert (why is not None) == refused
    if method == "eagle3" and why is not None:
        assert why.startswith("vLLM 0.8.4 has no speculative method 'eagle3'") and "from 0.8.5)" in why


@pytest.mark.parametrize(
    ("version", "method", "draft", "runs_as"),
    [
        ("0.8.3", "eagle", "/models/llama31-8b-head", "a separate draft model"),
        ("0.8.4", "eagle", "my-org/Llama-EAGLE3-head", "a separate draft model"),  # 'eagle3-' is not 'eagle-'
        ("0.8.3", "draft_model", "/models/tiny-eagle-distilled", "an EAGLE head"),
        ("0.8.3", "eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", None),  # the name says EAGLE: as given
        ("0.8.3", "draft_model", "meta-llama/Llama-3.2-1B-Instruct", None),
        ("0.8.5", "eagle", "/models/llama31-8b-head", None),  # 0.8.5 keeps a given eagle / eagle3
        ("0.9.2", "draft_model", "/models/llama-eagle3-distilled", "an EAGLE head"),  # 0.8.5-0.10: 'eagle3-' too
        ("0.10.0", "draft_model", "/models/llama_eagle3", None),  # ...but not 'eagle3' without the dash
        ("0.11.0", "draft_model", "/models/llama_eagle3", "an EAGLE3 head"),  # 0.11-0.33: 'eagle3' anywhere
        ("0.33.0", "draft_model", "/models/tiny-eagle-distilled", "an EAGLE head"),
        ("0.34.0", "draft_model", "/models/tiny-eagle-distilled", None),  # guesses only when no method is given
        ("0.20.0", "eagle3", "/models/head", None),  # a given eagle3 is always kept
        ("0.8.1", "eagle", "/models/llama31-8b-head", None),  # no --speculative-config at all (refused elsewhere)
        (None, "draft_model", "/models/tiny-eagle-distilled", None),  # the current vLLM keeps the method
    ],
)
def test_vllm_guesses_a_drafts_method_from_its_name(
    version: str | None, method: str, draft: str, runs_as: str | None
) -> None:
    # SpeculativeConfig.__post_init__, "Automatically detect the method", in each release's wheel: 0.8.2-0.8.4
    # `if "eagle-" in self.draft_model_config.model.lower(): self.method = "eagle" ... else: "draft_model"` for
    # every method; 0.8.5-0.33 keep a given eagle/eagle3 and guess for the rest; 0.34 only when none is given.
    why = draft_name_refusal(VllmVersion.parse(version) if version else None, method, draft)
    if runs_as is None:
        assert why is None
    else:
        assert why is not None and f"would run it as {runs_as}:" in why and draft in why
        assert method_refusal(VllmVersion.parse(version or ""), method, draft) == why


def test_advise_refuses_an_eagle_head_0_8_3_would_load_as_a_draft_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = tmp_path / "llama31-8b-head"  # a local EAGLE head whose directory name lacks 'eagle-'
    head.mkdir()
    config = catalog_models()["yuhuili/EAGLE-LLaMA3.1-Instruct-8B"].config
    (head / "config.json").write_text(json.dumps(config), encoding="utf-8")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\ntp = 1\n'
        "max_model_len = 4096\nmax_num_seqs = 64\n[advise]\noperating_qps = 1\n[sweep]\nqps = [1]\n"
        'num_requests = 100\n[[workload]]\nname = "chat"\ntask = "chat"\ntemperature = 0.0\nprompt_tokens = 512\n'
        f'output_tokens = 128\n[[candidate]]\nmethod = "eagle"\ndraft = {json.dumps(str(head))}\nk = [0, 2]\n'
        "acceptance = 0.7\n",
        encoding="utf-8",
    )
    argv = ["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version"]
    assert main([*argv, "0.8.3"]) == 1
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["verdict"] == "unsupported" and "as a separate draft model" in cand["reason"]
    assert main([*argv, "0.8.5"]) == 0  # 0.8.5 keeps the method given
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["verdict"] != "unsupported"


@pytest.mark.parametrize("method", ["eagle", "eagle3", "draft_model", "mtp"])
def test_0_8_2_runs_a_speculative_config_on_v1_which_proposes_with_ngram_only(method: str) -> None:
    """vLLM 0.8.2's ``_is_v1_supported_oracle`` tests only ``--speculative-model`` / ``--num-speculative-tokens``
    (unset with a ``--speculative-config``), so the server starts V1, whose 0.8.2 runner asserts ``method ==
    "ngram"``: every other method is refused, with the two ways out; 0.8.3 reads the config's method."""
    why = method_refusal(VllmVersion.parse("0.8.2"), method, "/models/draft")
    assert why is not None and why.startswith("vLLM 0.8.2 starts a --speculative-config server on its V1 engine")
    assert "use vLLM 0.8.3+" in why and "VLLM_USE_V1=0" in why
    assert method_refusal(VllmVersion.parse("0.8.2"), "ngram") is None
    assert method_refusal(VllmVersion.parse("0.8.3"), "draft_model", "meta-llama/Llama-3.2-1B-Instruct") is None


@pytest.mark.parametrize(
    ("version", "key"),
    [
        (None, ("draft_sample_method", "probabilistic")),
        ("0.34.0", ("draft_sample_method", "probabilistic")),
        ("0.22.0", ("draft_sample_method", "probabilistic")),  # first with this value (0.21: "gumbel", V2 runner)
        ("0.21.0", None),
        ("0.20.0", ("rejection_sample_method", "probabilistic")),  # 0.18-0.20's name for it
        ("0.18.0", ("rejection_sample_method", "probabilistic")),
        ("0.16.0", None),  # no setting: greedy drafts only
        ("0.9.2", None),
    ],
)
def test_probabilistic_drafting_is_written_as_each_release_reads_it(
    version: str | None, key: tuple[str, str] | None
) -> None:
    engine = get_engine("vllm", version)
    s = Speculation(get_method("draft_model"), 3, "meta-llama/Llama-3.2-1B-Instruct", drafting="probabilistic")
    v = VllmVersion.parse(version) if version else None
    assert probabilistic_drafting_key(v) == key
    if key is None:
        why = engine.refusal(s.method, s.draft, "probabilistic")
        assert why is not None and 'set drafting = "greedy"' in why
        with pytest.raises(SpecwiseError, match="drafts probabilistically"):
            engine.speculative_config(s)
        assert engine.refusal(s.method, s.draft, "greedy") == engine.refusal(s.method, s.draft)
        return
    cfg = engine.speculative_config(s)
    assert cfg[key[0]] == key[1]
    other = {"draft_sample_method", "rejection_sample_method"} - {key[0]}
    assert not other & set(cfg)  # never the key of another release: unknown keys stop the server
    greedy = engine.speculative_config(Speculation(s.method, 3, s.draft))
    assert not {"draft_sample_method", "rejection_sample_method"} & set(greedy)


@pytest.mark.parametrize(
    ("version", "method", "budget"),
    [
        ("0.9.2", "draft_model", "16384"),  # V0 (a draft model on 0.9): no chunked prefill, budget >= max_model_len
        ("0.8.5", "eagle", "16384"),  # 0.8.3-0.8.5 run every method on V0
        ("0.9.2", "eagle", "8192"),  # V1 (chunked prefill): the plan's budget
        ("0.32.0", "draft_model", "8192"),
        ("0.9.2", None, "8192"),  # no speculation: V1
    ],
)
def test_a_v0_server_gets_a_token_budget_it_starts_with(version: str, method: str | None, budget: str) -> None:
    """vLLM V0 prefills a prompt whole when it speculates (``_set_default_args_v0``) and refuses to start with
    ``max_num_batched_tokens`` below ``max_model_len`` (``SchedulerConfig._verify_args``, 0.9.2 vllm/config.py)."""
    from specwise.engines.base import Deployment

    engine = get_engine("vllm", version)
    d = Deployment("meta-llama/Llama-3.1-8B-Instruct", max_model_len=16384, max_num_batched_tokens=8192)
    args = engine.deployment_args(d, method)
    assert args[args.index("--max-num-batched-tokens") + 1] == budget
    spec = {"method": method} if method else None
    argv = engine.serve_argv(d, spec)
    assert argv[argv.index("--max-num-batched-tokens") + 1] == budget
    unsized = engine.deployment_args(Deployment("m", max_num_batched_tokens=8192), method)
    assert ("--max-num-batched-tokens" in unsized) is (budget == "8192")  # V0 without a max_model_len: its default


def test_the_dynamic_k_caveat_says_what_the_release_does() -> None:
    """0.26 added the V2-runner escape from PIECEWISE graphs and the static-k fallback under data parallelism;
    0.24 has neither (vllm/config/vllm.py of each wheel)."""
    from specwise.engines.vllm_versions import DYNAMIC_K_CAVEAT, dynamic_k_caveat

    assert dynamic_k_caveat(None) == dynamic_k_caveat(VllmVersion(0, 32)) == DYNAMIC_K_CAVEAT
    assert "VLLM_USE_V2_MODEL_RUNNER=1" in DYNAMIC_K_CAVEAT and "static k" in DYNAMIC_K_CAVEAT
    old = dynamic_k_caveat(VllmVersion(0, 24))
    assert "vLLM 0.24.0 runs PIECEWISE" in old and "VLLM_USE_V2_MODEL_RUNNER=1" not in old
    assert "keeps the schedule with data parallelism > 1" in old


@pytest.mark.parametrize(
    ("version", "model_type", "refused"),
    [
        ("0.8.5", "llama", False),
        ("0.9.2", "qwen3", True),  # 0.9.2 vllm/config.py: "Eagle3 is only supported for Llama models"
        ("0.10.1", "qwen2", True),
        ("0.11.0", "qwen3", False),  # 0.11 to 0.15: llama, qwen, minicpm, gpt_oss
        ("0.15.0", "gemma3", True),
        ("0.15.0", "gpt_oss", False),
        ("0.16.0", "hunyuan_v1_dense", False),  # 0.16 adds the hunyuan types and afmoe
        ("0.17.0", "mistral", True),  # 0.17 not read: taken as 0.16
        ("0.18.0", "gemma3", True),  # 0.18 to 0.21: aux_hidden_states_supported (review s46c)
        ("0.18.0", "deepseek_v3", False),
        ("0.20.0", "gemma4", False),
        ("0.21.0", "mistral", True),
        ("0.22.0", "gemma3", False),  # 0.22 checks no target
    ],
)
def test_eagle3_targets_follow_each_release(version: str, model_type: str, refused: bool) -> None:
    said = eagle3_target_refusal(VllmVersion.parse(version), "eagle3", model_type)
    assert (said is not None) is refused
    if refused:
        assert f"refuses model_type {model_type!r}" in said and "0.22+ takes any target" in said
    assert eagle3_target_refusal(VllmVersion.parse(version), "eagle", model_type) is None  # EAGLE-1 is not checked
    assert eagle3_target_refusal(None, "eagle3", model_type) is None  # the current vLLM checks no target


def test_advise_refuses_an_eagle3_head_for_a_target_its_vllm_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s46b F2: advise enabled AngelSlim/Qwen3-8B_eagle3 on vLLM 0.9.2, which refuses a non-Llama target;
    the n-gram candidate is still evaluated, and simulate with the same engine_version refuses in one line."""
    path = tmp_path / "q3e3.toml"
    path.write_text(
        'name = "q3e3"\n[deployment]\ntarget = "Qwen/Qwen3-8B"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
        "[advise]\noperating_qps = 1\n[sweep]\nqps = [1]\nnum_requests = 100\n"
        '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 200\n'
        '[[candidate]]\nmethod = "eagle3"\ndraft = "AngelSlim/Qwen3-8B_eagle3"\nk = [0, 3]\n'
        '[[candidate]]\nmethod = "ngram"\nk = [0, 3]\n'
    )
    base = ["advise", "--scenario", str(path), "--json", "--processes", "1"]
    main([*base, "--vllm-version", "0.9.2"])
    by = {c["method"]: c for c in json.loads(capsys.readouterr().out)["candidates"]}
    eagle3, ngram = by["eagle3"], by["ngram"]
    assert eagle3["verdict"] == "unsupported" and "only for a llama target" in eagle3["reason"]
    assert ngram["verdict"] != "unsupported"
    main([*base, "--vllm-version", "0.12"])
    eagle3 = {c["method"]: c for c in json.loads(capsys.readouterr().out)["candidates"]}["eagle3"]
    assert eagle3["verdict"] != "unsupported"


def test_simulate_refuses_an_eagle3_head_for_a_target_its_engine_version_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q3e3.toml"
    path.write_text(
        'name = "q3e3"\n[deployment]\ntarget = "Qwen/Qwen3-8B"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
        'engine_version = "0.10.0"\n[sweep]\nqps = [1]\nnum_requests = 100\n'
        '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 200\n'
        '[speculation]\nmethod = "eagle3"\ndraft = "AngelSlim/Qwen3-8B_eagle3"\nk = [0, 3]\nacceptance = 0.7\n'
    )
    assert main(["simulate", "--scenario", str(path), "--processes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "[deployment].engine_version" in err and "only for a llama target" in err


@pytest.mark.parametrize(
    ("version", "method", "asked", "served"),
    [
        ("0.8.5", "eagle", None, 1),  # V0: "eagle does not support TP > 1 yet"
        ("0.8.5", "eagle3", 1, 1),
        ("0.9.2", "eagle", None, 4),  # V1 builds the head with the target's parallel config
        ("0.9.2", "eagle", 1, 4),  # ... and never reads draft_tensor_parallel_size for it
        (None, "eagle3", 1, 4),
        ("0.11.0", "mtp", 1, 4),
        ("0.9.2", "draft_model", 1, 1),  # V0 runs a draft model at the TP asked
        ("0.9.2", "draft_model", None, 4),
        ("0.15.0", "draft_model", 1, 4),  # V1's draft model: the target's only
    ],
)
def test_the_draft_runs_at_the_tp_each_engine_runs_it_at(
    version: str | None, method: str, asked: int | None, served: int
) -> None:
    v = None if version is None else VllmVersion.parse(version)
    assert served_draft_tp(v, method, asked, 4) == served
    s = Speculation(get_method(method), 3, "some/draft", asked, 4)
    assert VllmEngine(v).speculative_config(s)["draft_tensor_parallel_size"] == served


def test_an_eagle_head_split_on_v0_is_refused_and_a_refused_mtp_candidate_is_no_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s46b F1: on 0.8.5 (V0) advise wrote draft_tensor_parallel_size 2 for an EAGLE head, which V0 refuses at
    start. F3: an MTP candidate refused by the version made the whole advise exit 2 over a draft_tp nobody set."""
    assert head_tp_refusal(VllmVersion.parse("0.8.5"), "eagle", 2) is not None
    assert head_tp_refusal(VllmVersion.parse("0.9.2"), "eagle", 2) is None
    assert head_tp_refusal(VllmVersion.parse("0.8.5"), "eagle", 1) is None
    common = (
        "[advise]\noperating_qps = 1\n[sweep]\nqps = [1]\nnum_requests = 100\n"
        '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 200\n'
    )
    eagle = tmp_path / "eagle.toml"
    eagle.write_text(
        'name = "e"\n[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\ntp = 2\n'
        + common
        + '[[candidate]]\nmethod = "eagle"\ndraft = "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"\nk = [0, 3]\ndraft_tp = 2\n'
    )
    base = ["advise", "--scenario", str(eagle), "--json", "--processes", "1"]
    assert main([*base, "--vllm-version", "0.8.5"]) == 1
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["verdict"] == "unsupported" and "eagle does not support TP > 1 yet" in cand["reason"]
    assert main([*base, "--vllm-version", "0.9.2"]) == 0
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["speculative_config"]["draft_tensor_parallel_size"] == 2
    ds = tmp_path / "ds.toml"
    ds.write_text(
        'name = "ds"\n[deployment]\ntarget = "deepseek-ai/DeepSeek-V3"\ngpu = "H200-SXM-141GB"\ntp = 8\n'
        + common
        + '[[candidate]]\nmethod = "mtp"\nk = [0, 1]\n[[candidate]]\nmethod = "ngram"\nk = [0, 3]\n'
    )
    assert main(["advise", "--scenario", str(ds), "--json", "--processes", "1", "--vllm-version", "0.10"]) in (0, 1)
    by = {c["method"]: c for c in json.loads(capsys.readouterr().out)["candidates"]}
    assert by["mtp"]["verdict"] == "unsupported" and "no speculative method 'mtp'" in by["mtp"]["reason"]
    assert by["ngram"]["verdict"] != "unsupported"


@pytest.mark.parametrize(
    ("version", "method", "expected"),
    [
        ("0.13.0", None, False),
        ("0.14.0", None, True),
        ("0.13.0", "eagle3", False),
        ("0.14.0", "eagle", True),
        ("0.14.0", "mtp", True),
        ("0.27.1", "draft_model", False),
        ("0.28.0", "draft_model", True),
        ("0.32.0", "ngram", False),
        ("0.33.0", "ngram", True),
        ("0.33.0", "suffix", False),
        ("0.34.0", "suffix", True),
        (None, "ngram", True),  # the current release
        ("0.34.0", "medusa", False),  # a method vLLM never overlapped
    ],
)
def test_async_scheduling_by_release_and_method(version: str | None, method: str | None, expected: bool) -> None:
    from specwise.engines.vllm_versions import async_scheduling

    assert async_scheduling(None if version is None else VllmVersion.parse(version), method) is expected


def test_v0_prefills_whole_prompts_up_to_a_32k_context_and_takes_a_budget_of_its_length() -> None:
    from specwise.engines.vllm_versions import baseline_chunked_prefill, unchunked_token_budget

    old, v1 = VllmVersion.parse("0.7.3"), VllmVersion.parse("0.8.0")
    assert not baseline_chunked_prefill(old, 32768)
    assert baseline_chunked_prefill(old, 32769)
    assert baseline_chunked_prefill(v1, 4096) and baseline_chunked_prefill(None, 4096)
    assert unchunked_token_budget(None, 1024) == 2048  # vLLM's floor
    assert unchunked_token_budget(None, 32768) == 32768
    assert unchunked_token_budget(8192, 4096) == 8192 and unchunked_token_budget(8192, 16384) == 16384


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("0.10.1.1", (0, 10, 1)), ("0.6.3.post1", (0, 6, 3)), ("0.10.1.dev12+gabc123", (0, 10, 1)),
     ("0.11.0rc2.dev3", (0, 11, 0)), ("0.32.0+cpu", (0, 32, 0)), ("v0.24.0rc1", (0, 24, 0)), ("0.20", (0, 20, 0))],
)  # fmt: skip
def test_pep440_versions_parse(text: str, parsed: tuple[int, int, int]) -> None:
    assert VllmVersion.parse(text) == VllmVersion(*parsed)


@pytest.mark.parametrize("text", ["0.9.x", "0.9-foo", "0.9 beta", "latest", "0.9.2rcX"])
def test_a_version_with_words_after_it_is_refused(text: str) -> None:
    """Review s59: "0.9.x" was read as 0.9 (anything after the numbers was taken as a pre-release or local part)."""
    with pytest.raises(SpecwiseError, match=r"expected a version like 0\.20"):
        VllmVersion.parse(text)
