"""A plan sized for pre-quantised weights (int4 GPTQ/AWQ, int8) is served from such a checkpoint: the serve command
says so instead of loading the bf16 checkpoint the plan did not size (review: an INT4 70B on one H100 got
``vllm serve meta-llama/Llama-3.1-70B-Instruct`` with nothing else); fp8 is quantised online by the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.engines import get_engine
from specwise.engines.base import Deployment, checkpoint_notes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


@pytest.mark.parametrize(("quantization", "noted"), [("int4", True), ("int8", True), ("fp8", False), ("auto", False)])
def test_only_pre_quantised_weights_need_another_checkpoint(quantization: str, noted: bool) -> None:
    notes = checkpoint_notes(Deployment("meta-llama/Llama-3.1-70B-Instruct", quantization=quantization))
    assert bool(notes) == noted
    assert not notes or f"pre-quantised {quantization} checkpoint" in notes[0]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_serve_command_passes_only_online_quantisation(engine: str) -> None:
    e = get_engine(engine)
    for q, flag in (("fp8", True), ("int4", False), ("auto", False)):
        argv = e.serve_argv(Deployment("m", quantization=q), None)
        assert ("--quantization" in argv) == flag, (engine, q, argv)


def test_the_int4_example_says_which_checkpoint_to_serve() -> None:
    doc = advise(load_inputs(EXAMPLES / "int4-target.toml"), processes=1)
    assert any("pre-quantised int4 checkpoint" in n for n in doc.serve.notes)


def test_the_scenario_engine_writes_the_commands(tmp_path: Path) -> None:
    text = (EXAMPLES / "summarize-low-qps.toml").read_text().replace("tp = 4\n", 'tp = 4\nengine = "sglang"\n', 1)
    text = text.replace("min_speedup = 1.05\n", "min_speedup = 1.5\n", 1)  # above the band's low end: measure first
    path = tmp_path / "sglang.toml"
    path.write_text(text)
    doc = advise(load_inputs(path), processes=1)
    assert doc.serve.engine == "sglang" and "sglang.launch_server" in doc.serve.argv
    assert doc.decision == "measure_first" and doc.measure is not None  # SGLang's band is wide (held-back error)
    assert 'engine = "sglang"' in doc.measure.launch_toml and "speculative_algorithm" in doc.measure.launch_toml
