"""Scenario settings review s44b found misread: the few-requests warning counted requests before the warmup was
cut (10 measured per cell went unwarned), a share of 1e308 crashed the sweep (exit 3), a trace file or a burstiness
the arrivals never read was ignored without a word, a k-by-batch-size schedule's k above the sweep's was priced on
a memory plan sized for the smaller k, a draft TP error named a field the file did not set, and the length warning said
"~0.0% of its prompts ... are rejected"."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.scenario.build import (
    FEW_MEASURED,
    FEW_REQUESTS,
    enough_requests,
    few_requests_warning,
    measured_requests,
)
from specwise.scenario.toml_loader import load_scenario

BASE = """name = "s44"
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
max_model_len = 8192
[speculation]
method = "ngram"
k = [0, 2]
acceptance = 0.6
[sweep]
qps = [1.0]
num_requests = 120
[[workload]]
name = "chat"
prompt_tokens = 500
output_tokens = 100
"""


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_scenario(path)


def test_the_few_requests_rule_counts_the_requests_measured_after_the_warmup() -> None:
    assert measured_requests(100, 0.9) == 10 and measured_requests(100, 0.1) == FEW_MEASURED == 90
    assert enough_requests(0.1) == FEW_REQUESTS == enough_requests(0.0) == 100  # as before at the default warmup
    assert enough_requests(0.5) == 179 and enough_requests(0.9) == 891  # the fewest that leave 90 measured
    assert measured_requests(179, 0.5) == measured_requests(891, 0.9) == 90 == measured_requests(178, 0.5) + 1
    said = few_requests_warning(100, warmup_fraction=0.9)
    assert said is not None and "(10 measured after the warmup_fraction 0.9)" in said and "use 891 or more" in said
    assert few_requests_warning(891, warmup_fraction=0.9) is None and few_requests_warning(100) is None
    assert few_requests_warning(60) == (  # the default warmup: worded as it always was
        "[sweep].num_requests = 60: percentiles of so few requests per (QPS, k) cell are noisy, and the speedup band "
        "does not include that noise; use 100 or more"
    )


def test_a_sweep_measuring_few_requests_is_warned_of(tmp_path: Path) -> None:
    scenario = _load(tmp_path, BASE.replace("num_requests = 120", "num_requests = 120\nwarmup_fraction = 0.9"))
    assert any("(12 measured after the warmup_fraction 0.9)" in w for w in scenario.warnings)  # type: ignore[attr-defined]
    assert not any("measured after" in w for w in _load(tmp_path, BASE).warnings)  # type: ignore[attr-defined]


def test_settings_no_arrival_process_reads_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match=r'\[sweep\]\.trace_file: read only with arrivals = "trace" \(arrivals is'):
        _load(tmp_path, BASE.replace("num_requests = 120", 'num_requests = 120\ntrace_file = "nope.csv"'))
    with pytest.raises(SpecwiseError, match=r'\[sweep\]\.burstiness_cv: read only with arrivals = "gamma"'):
        _load(tmp_path, BASE.replace("num_requests = 120", "num_requests = 120\nburstiness_cv = 5"))
    gamma = BASE.replace("num_requests = 120", 'num_requests = 120\narrivals = "gamma"\nburstiness_cv = 5')
    assert _load(tmp_path, gamma).sweep.arrivals.cv == 5  # type: ignore[attr-defined]


def test_a_huge_share_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(BASE.replace('name = "chat"', 'name = "chat"\nshare = 1e308'))
    assert main(["simulate", "--scenario", str(path)]) == 2  # an OverflowError, exit 3, before
    assert "[[workload]] #1 'chat'.share: must be <= 1000000000000.0" in capsys.readouterr().err


def test_a_schedules_larger_k_sizes_the_memory_plan(tmp_path: Path) -> None:
    draft = BASE.replace('method = "ngram"', 'method = "draft_model"\ndraft = "meta-llama/Llama-3.2-1B-Instruct"')
    scheduled = draft.replace("acceptance = 0.6", "acceptance = 0.6\nk_schedule = [[1, 256, 12]]")
    listed = scheduled.replace("k = [0, 2]", "k = [0, 2, 12]")
    plan, expected = _load(tmp_path, scheduled).memory_plan, _load(tmp_path, listed).memory_plan  # type: ignore[attr-defined]
    assert plan.kv_cache_tokens == expected.kv_cache_tokens
    assert plan.kv_cache_tokens < _load(tmp_path, draft).memory_plan.kv_cache_tokens  # type: ignore[attr-defined]


def test_an_implied_draft_tp_is_named_as_the_targets(tmp_path: Path) -> None:
    text = BASE.replace('target = "meta-llama/Llama-3.1-70B-Instruct"', "")
    text = text.replace('"meta-llama/Llama-3.1-8B-Instruct"', '"meta-llama/Llama-3.1-70B-Instruct"\ntp = 64')
    text = text.replace('method = "ngram"', 'method = "draft_model"\ndraft = "meta-llama/Llama-3.2-1B-Instruct"')
    with pytest.raises(SpecwiseError) as refused:
        _load(tmp_path, text)
    said = str(refused.value)
    assert "the target's [deployment].tp = 64 (the default draft TP) is impossible for the draft" in said
    assert "[speculation].draft_tp = 64" not in said  # the file sets no draft_tp


def test_the_length_warning_says_only_what_happens(tmp_path: Path) -> None:
    cut_only = _load(tmp_path, BASE.replace("output_tokens = 100", "output_tokens = 9000"))
    (said,) = [w for w in cut_only.warnings if "max_model_len" in w]  # type: ignore[attr-defined]
    assert "of its outputs are cut" in said and "prompts" not in said and "rejects" not in said


def test_one_token_outputs_print_no_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        BASE.replace("output_tokens = 100", "output_tokens = 1").replace(
            "acceptance = 0.6", "acceptance = 0.6\nk_schedule = [[1, 256, 2]]"
        )
    )
    assert main(["simulate", "--scenario", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    assert "([speculation].k_schedule)" in " ".join(out.split())  # rich took [speculation] for a style tag
