"""Review 16, finding 3: a scenario whose ``[deployment].engine_version`` is older than any vLLM specwise writes a
config for (before 0.8.2: only separate ``--speculative-model`` flags) is simulated on that version (V0), but its
command is written for the current vLLM -- which the output never said. The shipped
``schedule-llama3-70b-qwama.toml`` (0.6.3) then exited "No candidate can run on this engine as proposed ... change
the engine version", suggesting a V0 vLLM the scenario already declares. Now a note (text and JSON ``vllm.notes``)
says which vLLM the command is for and why, and the headline names it and what to give instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from tests.readme_examples import ROOT

EXAMPLE = ROOT / "examples/advise/summarize-low-qps.toml"
SCHEDULE = ROOT / "examples/advise/schedule-llama3-70b-qwama.toml"
WRITTEN_FOR = "this command is written for the current vLLM (V1), not the scenario's [deployment].engine_version"


def _advise(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    rc = main(["advise", *args, "--json", "--processes", "1"])
    return rc, json.loads(capsys.readouterr().out)


def _text(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("COLUMNS", "400")
    rc = main(["advise", *args, "--processes", "1"])
    return rc, " ".join(capsys.readouterr().out.split())


def _scenario(tmp_path: Path, version: str) -> Path:
    text = EXAMPLE.read_text().replace("max_num_seqs = 128\n", f'max_num_seqs = 128\nengine_version = "{version}"\n')
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("version", ["0.5", "0.6.3", "0.8.1"])
def test_a_pre_082_scenario_is_told_its_command_is_for_the_current_vllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    path = _scenario(tmp_path, version)
    rc, doc = _advise(["--scenario", str(path)], capsys)
    assert rc == 0 and doc["vllm"]["speculative_config"] is not None
    (note,) = [n for n in doc["vllm"]["notes"] if n.startswith(WRITTEN_FOR)]
    assert f"engine_version {version}, which the simulation replays (on the V0 engine)" in note
    assert "takes only separate --speculative-model / --num-speculative-tokens flags" in note
    assert "give --vllm-version 0.8.2 to 0.9" in note and "disable_by_batch_size" in note
    draft = next(c for c in doc["candidates"] if c["method"] == "draft_model")
    assert draft["sim"]["predictor"]["name"] == "published-fit (vllm-v0)"  # the simulation still replays V0
    rc, text = _text(["--scenario", str(path)], capsys, monkeypatch)
    assert rc == 0 and f"note: {WRITTEN_FOR} {version}" in text


@pytest.mark.parametrize("version", [None, "0.8.2", "0.20"])
def test_no_note_when_the_command_is_for_the_declared_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str | None
) -> None:
    path = EXAMPLE if version is None else _scenario(tmp_path, version)
    _, doc = _advise(["--scenario", str(path)], capsys)
    assert not any(n.startswith(WRITTEN_FOR) for n in doc["vllm"].get("notes", []))


def test_given_vllm_version_replaces_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = _advise(["--scenario", str(_scenario(tmp_path, "0.6.3")), "--vllm-version", "0.9"], capsys)
    assert not any(n.startswith(WRITTEN_FOR) for n in doc["vllm"].get("notes", []))


def test_the_shipped_062_example_names_the_vllm_its_command_is_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rc, doc = _advise(["--scenario", str(SCHEDULE)], capsys)
    assert rc == 1 and doc["decision"] == "unsupported"
    assert doc["headline"] == (
        "No candidate can run on the current vLLM (V1) as proposed (why below): give --vllm-version 0.8.2 to 0.9 "
        "for a V0-era command (the scenario's [deployment].engine_version 0.6.3 takes no --speculative-config, so "
        "the command is written for the current vLLM), or change the method"
    )
    assert any(n.startswith(f"{WRITTEN_FOR} 0.6.3") for n in doc["vllm"]["notes"])
    (cand,) = doc["candidates"]
    assert "specwise writes its command for --vllm-version 0.8.2 to 0.9" in cand["reason"]
    rc, text = _text(["--scenario", str(SCHEDULE)], capsys, monkeypatch)
    assert rc == 1 and "No candidate can run on the current vLLM (V1) as proposed" in text
    assert f"note: {WRITTEN_FOR} 0.6.3" in text
    rc, doc = _advise(["--scenario", str(SCHEDULE), "--vllm-version", "0.9"], capsys)  # what the note suggests works
    assert rc == 0 and doc["decision"] == "enable_below"
    assert doc["vllm"]["speculative_config"]["disable_by_batch_size"] > 1
