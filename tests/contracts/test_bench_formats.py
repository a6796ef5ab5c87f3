"""``--bench`` reads vLLM's own result file (``vllm bench serve --save-result``, recorded in tests/fixtures) as well
as specwise's; a file it cannot read acceptance from is refused in one line, never ignored."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from specwise.contracts.bench_formats import read_bench
from specwise.contracts.document import DocumentError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve" / "eagle3-on-mock.json"


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def _write(tmp_path: Path, *objects: dict[str, Any], name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(o) for o in objects))
    return path


def test_recorded_vllm_result_reads_as_one_config_with_counts() -> None:
    doc = read_bench(FIXTURE)
    assert doc.model == "meta-llama/Llama-3.1-8B-Instruct"
    (cfg,) = doc.configs
    assert cfg.method == "eagle3" and cfg.draft == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    (level,) = cfg.levels
    s = level.summary
    assert s.requests == 40 and s.failed == 0 and level.concurrency == 8 and s.target_rate_per_s == 20.0
    assert s.ttft_s.p50 == pytest.approx(7.515756997236167e-3)  # median_ttft_ms, in seconds
    assert s.tpot_s.p99 == pytest.approx(0.8911849003204024e-3)
    assert math.isnan(s.ttft_s.p90)  # vLLM wrote no p90 (--metric-percentiles default: 99)
    assert s.output_tokens_per_s == pytest.approx(1168.7003692509206)
    pooled = cfg.pooled_acceptance()
    assert pooled is not None
    # vLLM writes spec_decode_acceptance_rate = 48.75 (percent); specwise's rates are fractions
    assert pooled.acceptance_rate == pytest.approx(0.4875)
    assert pooled.mean_acceptance_length == pytest.approx(2.95)
    assert pooled.per_position_rates == pytest.approx((1.0, 0.95, 0.0, 0.0))


def test_measured_acceptance_from_the_recorded_file() -> None:
    doc = read_bench(FIXTURE)
    m = doc.measured_acceptance("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", lambda a, b: a == b)
    assert m is not None and m.config == "vllm bench serve"
    assert "800 drafts, AL 2.95" in m.source
    assert m.model.per_position(4) == pytest.approx((1.0, 0.95, 0.0, 0.0))


def test_append_result_lines_are_levels_pooled(tmp_path: Path) -> None:
    first = recorded()
    second = dict(
        first,
        request_rate="inf",
        max_concurrency=None,
        spec_decode_num_drafts=200,
        spec_decode_draft_tokens=800,
        spec_decode_accepted_tokens=200,
        spec_decode_per_position_acceptance_rates=[0.5, 0.25, 0.125, 0.125],
    )
    doc = read_bench(_write(tmp_path, first, second))
    (cfg,) = doc.configs
    assert [lv.summary.level for lv in cfg.levels] == [0, 1]
    assert cfg.levels[1].summary.target_rate_per_s is None and cfg.levels[1].concurrency is None  # "inf"
    pooled = cfg.pooled_acceptance()
    assert pooled is not None and pooled.drafts == 1000
    assert pooled.per_position_rates[0] == pytest.approx((800 + 100) / 1000)


def test_without_metadata_the_method_is_unknown(tmp_path: Path) -> None:
    data = recorded()
    del data["speculative_config"]
    (cfg,) = read_bench(_write(tmp_path, data)).configs
    assert cfg.method is None and cfg.pooled_acceptance() is not None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"drop_spec": True}, "without spec_decode_* fields"),
        ({"spec_decode_per_position_acceptance_rates": [100.0, 95.0, 0.0, 0.0]}, "must be fractions"),
        ({"speculative_config": "eagle3"}, "metadata speculative_config is not JSON"),
        ({"speculative_config": '{"model": "x"}'}, "must be a JSON object with a 'method'"),
    ],
)
def test_unusable_vllm_results_are_refused(tmp_path: Path, change: dict[str, Any], fragment: str) -> None:
    data = recorded()
    if change.pop("drop_spec", False):
        data = {k: v for k, v in data.items() if not k.startswith("spec_decode_")}
    data.update(change)
    with pytest.raises(DocumentError, match=fragment.replace("*", r"\*")):
        read_bench(_write(tmp_path, data))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"benchmarks": [{"type_": "generative_benchmark"}]}', r"benchmarks\[0\]\.config\.strategy: missing"),
        ('{"hello": 1}', "not a bench result specwise reads"),
        ("[1, 2]", "must be an object, got list"),
        ("", "empty file; expected a bench JSON"),
        ("{broken", "not a readable bench JSON"),
        ('{"model_id": "m", "completed": 1, "spec_decode_num_drafts": 1}\nnot json', "line 2: not JSON"),
    ],
)
def test_other_files_are_refused_in_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(DocumentError, match=fragment) as exc:
        read_bench(path)
    assert "\n" not in str(exc.value) and str(path) in str(exc.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spec_decode_num_drafts": -5}, r"spec_decode_num_drafts: a count cannot be negative, got -5"),
        ({"spec_decode_accepted_tokens": 1e9}, r"spec_decode_accepted_tokens: 1e\+09 accepted of .* drafted"),
        # a misspelt key is missing, not 0 (review s47b F5)
        ({"spec_decode_draft_tokens": None}, r"spec_decode_draft_tokens: missing beside spec_decode_num_drafts"),
        ({"spec_decode_accepted_tokens": None}, r"spec_decode_accepted_tokens: missing beside spec_decode_num_drafts"),
    ],
)
def test_impossible_counts_are_refused_naming_the_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(DocumentError, match=rf"r\.json: {message}"):
        read_bench(_write(tmp_path, recorded() | change))


def test_a_speculative_config_written_as_an_object_reads_as_the_string(tmp_path: Path) -> None:
    data = recorded()
    as_text = read_bench(_write(tmp_path, data, name="s.json")).configs[0]
    as_object = read_bench(
        _write(tmp_path, data | {"speculative_config": json.loads(data["speculative_config"])}, name="o.json")
    ).configs[0]
    assert as_object.method == as_text.method == "eagle3" and as_object.draft == as_text.draft


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # vLLM asserts a request rate > 0 (vllm/benchmarks/serve.py get_request) and caps with asyncio.Semaphore
        ({"request_rate": -1}, r'request_rate: must be > 0 \(or "inf"\), got -1'),
        ({"request_rate": 0.0}, r'request_rate: must be > 0 \(or "inf"\), got 0.0'),
        ({"max_concurrency": -8}, r"max_concurrency: must be an integer >= 1 \(null or 0: no cap\), got -8"),
        ({"completed": -40}, r"completed: -40: must be at least 0 \(a count\)"),
        ({"failed": -1}, r"failed: -1: must be at least 0 \(a count\)"),
    ],
)
def test_an_impossible_load_is_refused_naming_the_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(DocumentError, match=rf"r\.json: {message}$"):
        read_bench(_write(tmp_path, recorded() | change))


def test_max_concurrency_0_is_no_cap_as_vllm_runs_it(tmp_path: Path) -> None:
    """vLLM: ``asyncio.Semaphore(max_concurrency) if max_concurrency else contextlib.nullcontext()``."""
    (level,) = read_bench(_write(tmp_path, recorded() | {"max_concurrency": 0})).configs[0].levels
    assert level.concurrency is None
