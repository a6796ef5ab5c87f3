from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BASE = """
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100"

[speculation]
method = "ngram"
acceptance = 0.6

[sweep]
qps = [1, 4]
num_requests = 50

[[workload]]
name = "chat"
prompt_tokens = 200
output_tokens = { dist = "uniform", min = 10, max = 100 }
"""


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(text)
    return f


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_examples_load(example: Path) -> None:
    sc = load_scenario(example)
    assert sc.classes and sc.sweep.qps and 0 in sc.sweep.k_values
    assert sc.kv_cache_tokens_without_draft >= sc.kv_cache_tokens > 0


def test_minimal_scenario_and_defaults(tmp_path: Path) -> None:
    sc = load_scenario(_write(tmp_path, BASE))
    assert sc.method.name == "ngram" and sc.draft is None and sc.sweep.k_values == tuple(range(9))
    assert sc.classes[0].acceptance.conditional == (0.6,)


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ('gpu = "H100"', 'gpu = "H1000"', "unknown GPU 'H1000'"),
        ('gpu = "H100"\n', "", "[deployment].gpu: required field is missing"),
        ("qps = [1, 4]", "qps = [1, -4]", "[sweep].qps: rates must be > 0"),
        ("acceptance = 0.6", "acceptance = 1.3", "[speculation].acceptance: must be <= 1.0"),
        ("acceptance = 0.6", "per_position = [0.5, 0.7]", "per_position[1]: 0.7 is above"),
        ("acceptance = 0.6", "", "[[workload]] #1 'chat'.acceptance: no acceptance given"),
        ('method = "ngram"', 'method = "magic"', "[speculation].method: expected one of"),
        ("prompt_tokens = 200", "prompt_tokens = -5", "prompt_tokens: must be >= 1"),
        ("prompt_tokens = 200", "", "'chat'.prompt_tokens: required field is missing"),
        ("num_requests = 50", "num_requests = 0", "[sweep].num_requests: must be a positive integer"),
        ('name = "chat"', 'name = "chat"\nshare = -1', "share: must be > 0.0"),
        ('name = "chat"', 'name = "chat"\nslo_tpot_s = 0', "slo_tpot_s: must be > 0.0"),
        ("[sweep]", "bogus = 1\n[sweep]", "[speculation]: unknown key(s): bogus"),
        ("[deployment]", "bogus = 1\n[deployment]", "unknown top-level key(s): bogus"),
        ("prompt_tokens = 200", "prompt_tokens = { dist = 'fixed', mean = 5, mena = 3 }", "unknown key(s): mena"),
        ('method = "ngram"', 'method = "mtp"', "has no MTP layers"),
        ('method = "ngram"', 'method = "draft_model"', "[speculation].draft: method draft_model needs a draft model"),
        ("[sweep]", "k_schedule = [[1, 8, 4], [4, 16, 2]]\n[sweep]", "overlapping entry [4, 16, 2]"),
        (
            'target = "meta-llama/Llama-3.1-8B-Instruct"',
            'target = "meta-llama/Llama-3.1-405B-Instruct"',
            "the target does not fit",
        ),
        ("[deployment]", "[deployment", "invalid TOML"),
        ("num_requests = 50", 'num_requests = 50\ndecision_metric = "speed"', "decision_metric: expected one of"),
        ("num_requests = 50", 'num_requests = 50\ndecision_metric = "goodput"', "goodput needs slo_ttft_s"),
    ],
)
def test_bad_scenarios_name_the_field(tmp_path: Path, old: str, new: str, fragment: str) -> None:
    assert old in BASE
    with pytest.raises(SpecwiseError, match=re.escape(fragment)) as err:
        load_scenario(_write(tmp_path, BASE.replace(old, new, 1)))
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match="no such scenario file"):
        load_scenario(tmp_path / "nope.toml")


def test_profile_file_picks_nearest_temperature_and_class(tmp_path: Path) -> None:
    results = [
        {"temperature": 0.0, "drafting": "greedy", "class": None, "per_position_acceptance": [0.9, 0.8]},
        {"temperature": 1.0, "drafting": "greedy", "class": None, "per_position_acceptance": [0.5, 0.3]},
        {"temperature": 1.0, "drafting": "greedy", "class": "chat", "per_position_acceptance": [0.4, 0.1]},
        {"temperature": 1.0, "drafting": "probabilistic", "class": None, "per_position_acceptance": [0.7, 0.5]},
    ]
    profile = {
        "schema": "specwise.profile/1",
        "target": "t",
        "draft": None,
        "method": "ngram",  # the scenario's method: a profile of another one is refused (test_profile_of_another_pair)
        "results": [
            {**r, "by_k": [{"k": 2, "per_position_acceptance": r["per_position_acceptance"]}]} for r in results
        ],
    }
    (tmp_path / "p.json").write_text(json.dumps(profile))
    text = BASE.replace("acceptance = 0.6", 'profile = "p.json"').replace(
        'name = "chat"', 'name = "chat"\ntemperature = 0.9'
    )
    sc = load_scenario(_write(tmp_path, text))
    assert sc.classes[0].acceptance.per_position(2) == pytest.approx((0.4, 0.1))
    other = text.replace('name = "chat"', 'name = "code"')
    assert load_scenario(_write(tmp_path, other)).classes[0].acceptance.per_position(2) == pytest.approx((0.5, 0.3))
    bad = text.replace('profile = "p.json"', 'profile = "missing.json"')
    with pytest.raises(SpecwiseError, match=r"missing\.json: no such profile file"):
        load_scenario(_write(tmp_path, bad))


def test_profile_of_another_pair(tmp_path: Path) -> None:
    # review 5: a profile of Qwen2.5-Coder 1.5B + 0.5B drove a Llama-3.1-8B + 1B scenario with no word
    doc = {"schema": "specwise.profile/1", "target": "Qwen/Qwen2.5-Coder-1.5B", "draft": "Qwen/Qwen2.5-0.5B",
           "method": "draft_model", "results": [
        {"temperature": 0.0, "drafting": "greedy", "class": None, "per_position_acceptance": [0.9, 0.8],
         "by_k": [{"k": 2, "per_position_acceptance": [0.9, 0.8]}]}]}  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(doc))
    lookup = BASE.replace("acceptance = 0.6", 'profile = "p.json"')
    with pytest.raises(SpecwiseError, match=r"\[speculation\]\.profile: it measured draft_model, not ngram"):
        load_scenario(_write(tmp_path, lookup))
    (tmp_path / "p.json").write_text(json.dumps({**doc, "method": "ngram", "draft": None}))
    sc = load_scenario(_write(tmp_path, lookup))
    assert any("p.json measured Qwen/Qwen2.5-Coder-1.5B with ngram, not" in w for w in sc.warnings)


def test_trace_arrivals_are_replayed_at_each_rate(tmp_path: Path) -> None:
    (tmp_path / "arrivals.csv").write_text("time_s,other\n0.0,a\n0.5,b\n# comment\n1.0,c\n3.0,d\n")
    text = BASE.replace("num_requests = 50", 'num_requests = 50\narrivals = "trace"\ntrace_file = "arrivals.csv"')
    sc = load_scenario(_write(tmp_path, text))
    import numpy as np

    times = sc.sweep.arrivals.with_rate(2.0).times(np.random.default_rng(0), 10)
    assert times.tolist() == pytest.approx([0.0, 0.25, 0.5, 1.5])  # 3 gaps over 1.5 s = 2 QPS
    (tmp_path / "arrivals.csv").write_text("0\n2\n1\n")
    with pytest.raises(SpecwiseError, match="non-decreasing"):
        load_scenario(_write(tmp_path, text))
    (tmp_path / "arrivals.csv").write_text("0\n1\nsoon\n")
    with pytest.raises(SpecwiseError, match=r"arrivals\.csv:3: not a time"):
        load_scenario(_write(tmp_path, text))
