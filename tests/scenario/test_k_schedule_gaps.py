"""A ``[speculation].k_schedule`` that leaves batch sizes within 1..max_num_seqs uncovered is accepted, and each
uncovered range is said with its consequence -- those batches run with k = 0 (``SpecConfig.k_for_batch``) -- in the
scenario's warnings, which simulate prints and writes to ``--json`` (review C, finding 4: it was silent)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.scenario import parse_scenario
from specwise.scenario.parse import k_schedule_gaps
from specwise.sim.engine import SpecConfig

BASE: dict[str, Any] = {
    "name": "gaps",
    "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192},
    "speculation": {"method": "ngram", "k": [0, 2, 4], "acceptance": 0.6},
    "sweep": {"qps": [1.0], "num_requests": 20},
    "workload": [{"name": "chat", "prompt_tokens": 500, "output_tokens": 100}],
}


def _warnings(schedule: list[list[int]], max_num_seqs: int = 256) -> list[str]:
    data = copy.deepcopy(BASE)
    data["speculation"]["k_schedule"] = schedule
    data["deployment"]["max_num_seqs"] = max_num_seqs
    return [w for w in parse_scenario(data).warnings if "k_schedule" in w]


@pytest.mark.parametrize(
    ("schedule", "max_num_seqs", "said"),
    [
        ([[1, 32, 4], [40, 1024, 2]], 256, "covers no batch 33-39: speculation off there (k = 0)"),
        ([[5, 1024, 4]], 256, "covers no batch 1-4: speculation off there (k = 0)"),
        ([[1, 32, 4]], 256, "covers no batch 33-256 (max_num_seqs): speculation off there (k = 0)"),
        ([[2, 32, 4], [34, 34, 2], [36, 64, 1]], 128, "covers no batch 1, 33, 35, 65-128 (max_num_seqs): speculation"),
        ([[1, 16, 4], [300, 400, 2]], 64, "covers no batch 17-64 (max_num_seqs): speculation off"),  # within 1..64
    ],
)  # fmt: skip
def test_each_uncovered_batch_range_is_said(schedule: list[list[int]], max_num_seqs: int, said: str) -> None:
    (warning,) = _warnings(schedule, max_num_seqs)
    assert warning.startswith("[speculation].k_schedule " + said)


@pytest.mark.parametrize(
    ("schedule", "max_num_seqs"),
    [([[1, 32, 4], [33, 256, 0]], 256), ([[1, 8, 4]], 8), ([[1, 1024, 2]], 256), ([], 256)],
)
def test_a_schedule_covering_every_batch_says_nothing(schedule: list[list[int]], max_num_seqs: int) -> None:
    assert _warnings(schedule, max_num_seqs) == []


def test_the_ranges_said_are_those_the_simulator_runs_at_k_0() -> None:
    schedule = ((3, 10, 4), (14, 20, 2), (25, 40, 0))
    spec = SpecConfig(k=4, draft_cost=None, schedule=schedule)  # type: ignore[arg-type]
    off = {b for b in range(1, 33) if spec.k_for_batch(b) == 0}
    said = {b for a, z in k_schedule_gaps(schedule, 32) for b in range(a, z + 1)}
    assert said == off - set(range(25, 33))  # the [25, 40, 0] entry is covered, at k = 0 by choice


def test_simulate_prints_and_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
        '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.6\nk_schedule = [[1, 32, 2], [40, 1024, 2]]\n'
        '[sweep]\nqps = [1.0]\nnum_requests = 100\n[[workload]]\nname = "chat"\nprompt_tokens = 500\n'
        "output_tokens = 50\n"
    )
    said = "[speculation].k_schedule covers no batch 33-39: speculation off there (k = 0)"
    args = ["simulate", "--scenario", str(path), "--predictor", "roofline", "--processes", "1"]
    assert main([*args, "--json"]) == 0
    assert said in json.loads(capsys.readouterr().out)["warnings"]
    assert main(args) == 0
    assert "warning: " + said in " ".join(capsys.readouterr().out.split())
