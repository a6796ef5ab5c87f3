"""Requests longer than max_model_len (review item A9): vLLM rejects a prompt of max_model_len tokens or more and
cuts an output where the sequence reaches it; a scenario whose prompts mostly exceed it is an input error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.scenario import parse_scenario
from specwise.sim.workload import RequestTable, admit
from specwise.study.sweep import run_cell

SCENARIO = """
name = "overlen"
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
max_model_len = 8192
[speculation]
method = "ngram"
k = [0, 2]
acceptance = 0.6
[sweep]
qps = [1]
num_requests = 200
[[workload]]
name = "code"
prompt_tokens = {PROMPT}
output_tokens = { dist = "lognormal", mean = 400, cv = 0.6, min = 8, max = 2000 }
"""
ALL_OVER = '{ dist = "lognormal", mean = 25000, cv = 0.2, min = 20000, max = 30000 }'
TAIL_OVER = '{ dist = "lognormal", mean = 3000, cv = 0.8, min = 16, max = 40000 }'


def _data(prompt: str) -> dict[str, object]:
    import tomllib

    return tomllib.loads(SCENARIO.replace("{PROMPT}", prompt))


def test_prompts_all_longer_than_max_model_len_are_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "overlen.toml"
    path.write_text(SCENARIO.replace("{PROMPT}", ALL_OVER))
    assert main(["simulate", "--scenario", str(path), "--processes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "[[workload]] 'code': 100% of its prompts" in err
    assert "mean 25000, min 20000, max 30000" in err and "max_model_len 8192" in err
    assert "KV" not in err  # not blamed on the cache


def test_a_tail_longer_than_max_model_len_is_rejected_as_vllm_does_and_said() -> None:
    sc = parse_scenario(_data(TAIL_OVER))
    warning = next(w for w in sc.warnings if w.startswith("workload 'code'"))
    assert "of its prompts" in warning and "vLLM rejects them" in warning and "max_model_len 8192" in warning
    cell = run_cell(sc, 1.0, 0)
    assert 100 < cell.summary.overall.requests < 0.9 * 200  # the warm-up's 20 and the rejected ones left out


def test_admit_drops_prompts_of_max_model_len_and_cuts_outputs_there() -> None:
    table = RequestTable(
        arrival_s=np.arange(4.0),
        prompt_tokens=np.array([100, 8192, 8000, 9000]),
        output_tokens=np.array([50, 10, 500, 10]),
        class_index=np.zeros(4, dtype=np.int64),
    )
    kept = admit(table, 8192)
    assert kept.arrival_s.tolist() == [0.0, 2.0]
    assert kept.output_tokens.tolist() == [50, 192]
    assert admit(kept, 8192) is kept  # nothing to change: the same table


def test_none_admitted_is_an_error() -> None:
    table = RequestTable(np.zeros(1), np.array([9000]), np.array([1]), np.zeros(1, dtype=np.int64))
    with pytest.raises(SpecwiseError, match="max_model_len"):
        admit(table, 8192)
