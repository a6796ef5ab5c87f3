"""With ``--json``, a command whose answer is "no" (exit 1) before it could write its own document prints a
``specwise.no/1`` document on stdout, so a script reading stdout always gets JSON (first-hour audit 2026-12-07:
``simulate --json`` and ``advise --json`` printed nothing on stdout, ``plan-memory --json`` its own document)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main

NOT_FITTING = """
name = "too-small"
[deployment]
target = "meta-llama/Llama-3.1-70B-Instruct"
gpu = "H100-SXM-80GB"
tp = 4
max_model_len = 16384
gpu_memory_utilization = 0.05
{method}
[sweep]
qps = [1]
num_requests = 10
[[workload]]
name = "w"
prompt_tokens = 200
output_tokens = 50
"""
SIMULATE = '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.5'
ADVISE = '[[candidate]]\nmethod = "ngram"\nk = [2]\nacceptance = 0.5'


@pytest.mark.parametrize("command,method", [("simulate", SIMULATE), ("advise", ADVISE)])
def test_a_no_in_json_is_a_document_on_stdout(
    command: str, method: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(NOT_FITTING.format(method=method))
    assert main([command, str(scenario), "--json"]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["schema"] == "specwise.no/1" and doc["command"] == command and doc["answer"] == "no"
    assert "does not fit" in doc["why"]
    assert f"specwise {command}: no: " in err  # the line on stderr stays


def test_without_json_stdout_stays_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(NOT_FITTING.format(method=SIMULATE))
    assert main(["simulate", str(scenario)]) == 1
    assert capsys.readouterr().out == ""


def test_a_command_with_its_own_no_document_gets_no_second_one(capsys: pytest.CaptureFixture[str]) -> None:
    """plan-memory writes its own document (with ``why``) and returns 1: stdout holds that one document only."""
    argv = ["plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp", "4"]
    assert main([*argv, "--draft", "mtp", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False
    assert doc.get("schema") != "specwise.no/1"
