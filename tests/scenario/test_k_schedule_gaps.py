"""A ``[speculation].k_schedule`` that leaves batch sizes within 1..max_num_seqs uncovered is accepted, and each
uncovered range is said with its consequence in the scenario's warnings, which simulate prints and writes to
``--json`` (review C, finding 4: it was silent). The consequence is vLLM's: a gap, and the tail after the last entry,
carry the previous entry's k forward (``build_dynamic_sd_schedule_lookup``; review s45c: specwise ran them at k = 0,
and told users to end a schedule early to switch speculation off, which on vLLM leaves it on); a schedule not
starting at batch 1 is refused, as vLLM refuses it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.errors import SpecError, SpecwiseError
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
        ([[1, 32, 4], [40, 1024, 2]], 256, "covers no batch 33-39 at k = 4: vLLM carries the previous entry's k"),
        ([[1, 32, 4]], 256, "covers no batch 33-256 (max_num_seqs) at k = 4: vLLM carries"),
        ([[1, 32, 4], [34, 34, 2], [36, 64, 1]], 128,
         "covers no batch 33 at k = 4, 35 at k = 2, 65-128 (max_num_seqs) at k = 1:"),
        ([[1, 16, 4], [300, 400, 2]], 64, "covers no batch 17-64 (max_num_seqs) at k = 4:"),  # within 1..64
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


def test_the_ranges_said_run_at_the_k_said() -> None:
    schedule = ((1, 10, 4), (14, 20, 2), (25, 40, 0), (50, 60, 3))
    spec = SpecConfig(k=4, draft_cost=None, schedule=schedule)  # type: ignore[arg-type]
    gaps = k_schedule_gaps(schedule, 64)
    assert [(a, z) for a, z, _ in gaps] == [(11, 13), (21, 24), (41, 49), (61, 64)]
    for a, z, k in gaps:
        assert {spec.k_for_batch(b) for b in range(a, z + 1)} == {k}
    assert [k for *_, k in gaps] == [4, 2, 0, 3]  # after [25, 40, 0] speculation stays off until the next entry


def test_vllm_carries_k_forward_through_gaps_and_the_tail() -> None:
    """vLLM's own example (``build_dynamic_sd_schedule_lookup``): [(1, 16, 4), (32, 128, 2)] runs k = 4 at batch
    17-31 and k = 2 past 128."""
    spec = SpecConfig(k=4, draft_cost=None, schedule=((1, 16, 4), (32, 128, 2)))  # type: ignore[arg-type]
    assert [spec.k_for_batch(b) for b in (1, 16, 17, 31, 32, 128, 129, 512)] == [4, 4, 4, 4, 2, 2, 2, 2]


@pytest.mark.parametrize("schedule", [[[5, 1024, 4]], [[2, 32, 4], [33, 256, 0]]])
def test_a_schedule_not_starting_at_batch_1_is_refused(schedule: list[list[int]]) -> None:
    data = copy.deepcopy(BASE)
    data["speculation"]["k_schedule"] = schedule
    with pytest.raises(SpecwiseError, match=r"k_schedule.*the first entry must start at batch 1, as vLLM requires"):
        parse_scenario(data)
    with pytest.raises(SpecError, match="must start at batch 1"):
        SpecConfig(k=4, draft_cost=None, schedule=tuple(tuple(e) for e in schedule))  # type: ignore[arg-type]


def test_simulate_prints_and_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
        '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.6\nk_schedule = [[1, 32, 2], [40, 1024, 2]]\n'
        '[sweep]\nqps = [1.0]\nnum_requests = 100\n[[workload]]\nname = "chat"\nprompt_tokens = 500\n'
        "output_tokens = 50\n"
    )
    said = "[speculation].k_schedule covers no batch 33-39 at k = 2: vLLM carries the previous entry's k over a gap"
    args = ["simulate", "--scenario", str(path), "--predictor", "roofline", "--processes", "1"]
    assert main([*args, "--json"]) == 0
    assert any(w.startswith(said) for w in json.loads(capsys.readouterr().out)["warnings"])
    assert main(args) == 0
    assert "warning: " + said in " ".join(capsys.readouterr().out.split())
