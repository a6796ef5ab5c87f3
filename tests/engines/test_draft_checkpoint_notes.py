"""A draft planned at int8/int4 (``draft_quantization``) is served from a pre-quantised checkpoint, and the commands
say so as they do for the target (review 12 #3: the int4-target example's int8 draft was priced at 1.40 GiB, and
``--speculative-config`` named the BF16 draft, 2.30 GiB, with no note). fp8 is quantised online by the config's
``quantization``."""

from __future__ import annotations

import io
import json
from html import escape as html_escape
from pathlib import Path

import pytest
from rich.console import Console

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.contracts.advice import Advice
from specwise.engines import get_engine
from specwise.engines.base import Deployment, Speculation, checkpoint_notes, launch_toml
from specwise.methods import get_method
from specwise.report.advise import render_advise
from specwise.report.advise_html import render_html

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
TARGET = Deployment("meta-llama/Llama-3.1-8B-Instruct")


def _draft(quantization: str | None, method: str = "draft_model", draft: str | None = DRAFT) -> Speculation:
    return Speculation(get_method(method), 4, draft=draft, draft_quantization=quantization)


@pytest.mark.parametrize(("quantization", "noted"), [("int8", True), ("int4", True), ("fp8", False), ("auto", False)])
def test_only_a_pre_quantised_draft_needs_another_checkpoint(quantization: str, noted: bool) -> None:
    notes = checkpoint_notes(TARGET, _draft(quantization))
    assert len(notes) == (1 if noted else 0)
    if noted:
        assert f"pre-quantised {quantization} checkpoint" in notes[0] and DRAFT in notes[0] and "draft" in notes[0]
        assert TARGET.model not in notes[0]


def test_no_draft_checkpoint_no_note() -> None:
    assert checkpoint_notes(TARGET, _draft(None)) == ()
    assert checkpoint_notes(TARGET, _draft("int4", "ngram", None)) == ()


def test_fp8_is_the_only_draft_quantisation_the_config_carries() -> None:
    engine = get_engine("vllm")
    assert engine.speculative_config(_draft("fp8"))["quantization"] == "fp8"
    assert "quantization" not in engine.speculative_config(_draft("int8"))  # hence the note


def _int4_example() -> tuple[Advice, str]:
    doc = advise(load_inputs(EXAMPLES / "int4-target.toml"), processes=1)
    out = io.StringIO()
    render_advise(doc, Console(file=out, width=120, no_color=True))
    return doc, " ".join(out.getvalue().split())


def test_the_int4_example_names_the_draft_checkpoint_everywhere_the_target_note_shows() -> None:
    doc, terminal = _int4_example()
    notes = json.loads(json.dumps(doc.to_json()))["vllm"]["notes"]
    target = [n for n in notes if "pre-quantised int4 checkpoint" in n]
    draft = [n for n in notes if "pre-quantised int8 checkpoint" in n]
    assert len(target) == 1 and len(draft) == 1
    assert DRAFT in draft[0] and "meta-llama/Llama-3.1-70B-Instruct" not in draft[0]
    spec = json.loads(doc.serve.argv[doc.serve.argv.index("--speculative-config") + 1])
    assert spec["model"] == DRAFT  # the note is about the checkpoint this config loads
    html = render_html(doc)
    for note in (target[0], draft[0]):
        assert " ".join(note.split()) in terminal
        assert html_escape(note) in html


def test_the_launch_file_carries_the_notes_as_comments(tmp_path: Path) -> None:
    d = Deployment("meta-llama/Llama-3.1-70B-Instruct", quantization="int4")
    text = launch_toml(get_engine("vllm"), d, "draft_model-k4", _draft("int8"))
    comments = [line for line in text.splitlines() if line.startswith("# note: ")]
    assert len(comments) == 2
    assert "pre-quantised int4" in comments[0] and "pre-quantised int8" in comments[1] and DRAFT in comments[1]
