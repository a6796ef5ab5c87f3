"""simulate refuses what vLLM would not start, instead of reporting a speedup with a warning beside it: a draft that
fails the pair checks, or a deployment that fits without the draft but not with it (review 5). The input is fine and
the answer is no: :class:`NegativeAnswer`, exit 1 (it was exit 2 until a first-hour review)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import NegativeAnswer, SpecwiseError
from specwise.scenario import parse_scenario


def _scenario(tp: int, draft: str, max_model_len: int) -> dict[str, object]:
    return {
        "name": "deployable",
        "deployment": {"target": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100-SXM-80GB", "tp": tp,
                       "max_model_len": max_model_len},
        "speculation": {"method": "draft_model", "draft": draft, "k": [0, 4], "acceptance": 0.7},
        "sweep": {"qps": [1.0], "num_requests": 20},
        "workload": [{"name": "chat", "prompt_tokens": 500, "output_tokens": 100}],
    }  # fmt: skip


def test_a_draft_whose_weights_do_not_fit_is_refused_naming_the_shortfall() -> None:
    # 70B at TP 2 fits alone; with an 8B draft the weights miss (before: "engine.kv_capacity_tokens: must be >= 1")
    with pytest.raises(NegativeAnswer, match="with the draft the deployment does not fit, so vLLM would not start"):
        parse_scenario(_scenario(2, "meta-llama/Llama-3.1-8B-Instruct", 8192))


def test_a_draft_that_leaves_no_room_for_one_sequence_is_refused() -> None:
    # 70B at TP 2 with a 1B draft and 16k context: too little KV for one sequence (before: "speculation pays")
    with pytest.raises(SpecwiseError, match="does not fit"):
        parse_scenario(_scenario(2, "meta-llama/Llama-3.2-1B-Instruct", 16384))


def test_a_pair_vllm_refuses_is_refused() -> None:
    with pytest.raises(
        NegativeAnswer, match=r"\[speculation\]\.draft: vLLM refuses this draft .*different vocabularies"
    ):
        parse_scenario(_scenario(4, "Qwen/Qwen3-0.6B", 8192))


def test_the_same_deployment_at_tp_4_is_simulated() -> None:
    assert parse_scenario(_scenario(4, "meta-llama/Llama-3.2-1B-Instruct", 16384)).memory_plan.fits


def test_a_target_that_does_not_fit_says_why_the_target_alone_misses() -> None:
    # review 5: "the target does not fit: target + draft weights and reserve need 77.07 GiB" -- the draft's figures;
    # alone, the 70B at TP 2 misses on one 32k sequence's KV
    with pytest.raises(NegativeAnswer, match="the target does not fit: ") as err:
        parse_scenario(_scenario(2, "meta-llama/Llama-3.1-8B-Instruct", 32768))
    assert "draft" not in str(err.value).split("the target does not fit: ")[1]


def _file(tmp_path: Path, tp: int, draft: str) -> Path:
    """:func:`_scenario` at 8k context as a TOML file."""
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "deployable"\n[deployment]\ntarget = "meta-llama/Llama-3.1-70B-Instruct"\ngpu = "H100-SXM-80GB"\n'
        f'tp = {tp}\nmax_model_len = 8192\n[speculation]\nmethod = "draft_model"\ndraft = "{draft}"\nk = [0, 4]\n'
        "acceptance = 0.7\n[sweep]\nqps = [1.0]\nnum_requests = 20\n"
        '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 100\n'
    )
    return path


@pytest.mark.parametrize(
    ("tp", "draft", "said"),
    [
        (2, "meta-llama/Llama-3.1-8B-Instruct", "with the draft the deployment does not fit"),
        (4, "Qwen/Qwen3-0.6B", "vLLM refuses this draft"),
        (1, "meta-llama/Llama-3.2-1B-Instruct", "the target does not fit"),
    ],
)
def test_simulate_exits_1_with_one_line(
    tp: int, draft: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, tp, draft)
    assert main(["simulate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("specwise simulate: no: ") and said in err and err.count("\n") == 1


def test_export_reads_the_same_file_as_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """For export (and monitor) the scenario is an input to something else: no "no" to give, an input error (exit 2).
    Review: export prometheus-rules exited 1 "no" on such a file."""
    path = _file(tmp_path, 4, "Qwen/Qwen3-0.6B")
    assert main(["export", "prometheus-rules", "--scenario", str(path), "--out", str(tmp_path / "r.yml")]) == 2
    assert capsys.readouterr().err.startswith("specwise export: error: ")


def test_an_input_error_is_said_before_the_no(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with an incompatible draft and a malformed engine_version: the input error first (exit 2), not the
    "no" (review of the NegativeAnswer change)."""
    path = _file(tmp_path, 4, "Qwen/Qwen3-0.6B")
    path.write_text(path.read_text().replace("max_model_len = 8192", 'max_model_len = 8192\nengine_version = "new"'))
    assert main(["simulate", str(path)]) == 2
    assert "[deployment].engine_version: 'new': expected a vLLM version" in capsys.readouterr().err
