"""Scenario inputs review 12 found mishandled: a NaN/inf arrival trace hung ``simulate`` (#1), an all-equal trace
failed at sweep time naming no file (#7), a ``--num-requests`` override was reported as the file's value (#12), and
a float seed, a table as ``name`` and an empty file were accepted or misnamed (#13)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.api import _ARGUMENTS
from specwise.cli import main
from specwise.errors import SpecError, SpecwiseError
from specwise.perfmodel import CalibratedPredictor
from specwise.scenario.overrides import with_overrides
from specwise.scenario.toml_loader import load_scenario
from specwise.sim.engine import EngineConfig, simulate
from specwise.sim.workload import RequestTable, WorkloadClass
from specwise.traffic import Arrivals, LengthDist

BASE = """name = "r12"
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
num_requests = 20
[[workload]]
name = "chat"
prompt_tokens = 500
output_tokens = 100
"""
TRACE = BASE.replace("num_requests = 20", 'num_requests = 20\narrivals = "trace"\ntrace_file = "t.csv"')


class _Hung(BaseException):
    pass


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise _Hung


@contextlib.contextmanager
def _no_hang(limit_s: int = 20) -> Iterator[None]:
    """Fail (instead of hanging the suite) when the block runs past ``limit_s``: the old code looped forever."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    try:
        yield
    except _Hung:
        pytest.fail(f"no answer in {limit_s} s: hung")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _trace_scenario(tmp_path: Path, trace: str) -> Path:
    (tmp_path / "t.csv").write_text(trace)
    path = tmp_path / "s.toml"
    path.write_text(TRACE)
    return path


@pytest.mark.parametrize(
    ("trace", "says"),
    [
        ("0.0\nnan\n1\n", r"t\.csv:2: not a finite time: 'nan'"),
        ("0\ninf\n", r"t\.csv:2: not a finite time: 'inf'"),
        ("0\n1\nnan\n", r"t\.csv:3: not a finite time: 'nan'"),
        ("time_s\n0\n-inf\n", r"t\.csv:3: not a finite time: '-inf'"),
        ("0\n0\n0\n0\n", r"t\.csv: all 4 times are 0; .*two or more distinct times"),
        ("2.5\n2.5\n", r"t\.csv: all 2 times are 2\.5"),
        # finite times, but 3 gaps in 5e-324 s: rescaling overflowed, and was said as "must be finite numbers"
        ("0\n0\n0\n5e-324\n", r"t\.csv: arrivals: the trace's 4 times span 5e-324 s, too short to be rescaled"),
    ],
)  # fmt: skip
def test_a_bad_trace_is_refused_when_read(tmp_path: Path, trace: str, says: str) -> None:
    path = _trace_scenario(tmp_path, trace)
    with pytest.raises(SpecwiseError, match=rf"s\.toml: \[sweep\]\.trace_file: .*{says}"):
        load_scenario(path)


def test_a_nan_trace_exits_2_instead_of_hanging(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace_scenario(tmp_path, "0.0\nnan\n1\n")
    with _no_hang():
        code = main(["simulate", "--scenario", str(path), "--processes", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"specwise simulate: error: {path}: [sweep].trace_file: {tmp_path / 't.csv'}:2: not a finite time: 'nan'"
    ]


def test_a_trace_saved_with_a_bom_keeps_its_first_time(tmp_path: Path) -> None:
    """'\\ufeff0' is no number, so the first line was skipped as a header: the trace silently lost its first time."""
    path = _trace_scenario(tmp_path, "")
    (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbf0\n1\n3\n")
    assert load_scenario(path).sweep.arrivals.trace_s[:1] == (0.0,)


def test_the_trace_error_names_the_line_that_goes_back(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match=r"t\.csv:4: 1 comes after 2; times must be >= 0 and non-decreasing"):
        load_scenario(_trace_scenario(tmp_path, "0\n2\n\n1\n"))
    with pytest.raises(SpecwiseError, match=r"t\.csv:1: -1 is negative"):
        load_scenario(_trace_scenario(tmp_path, "-1\n2\n"))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_arrivals_refuse_a_non_finite_trace(bad: float) -> None:
    # NaN compared False in the old `b < a` / `t[0] < 0` checks, so the library API let it through
    for trace in [(0.0, bad, 1.0), (bad, 1.0), (0.0, 1.0, bad)]:
        with pytest.raises(SpecError, match="trace times must be finite"):
            Arrivals("trace", trace_s=trace)


def test_arrivals_refuse_a_non_finite_rate() -> None:
    trace = Arrivals("trace", trace_s=(0.0, 1.0, 2.0))
    for rate in (float("nan"), float("inf"), 0.0):
        with pytest.raises(SpecError, match="rate must be > 0 and finite"):
            trace.with_rate(rate)
    with pytest.raises(SpecError, match="rate must be > 0 and finite"):
        Arrivals("poisson", float("inf"))
    with pytest.raises(SpecError, match="gamma cv must be > 0 and finite"):
        Arrivals("gamma", 1.0, float("inf"))
    with pytest.raises(SpecError, match="distinct times"):
        Arrivals("trace", trace_s=(3.0, 3.0)).with_rate(1.0)


def test_a_trace_too_short_to_rescale_says_so() -> None:
    """Finite times whose rescaling overflows (an infinite own rate, or a finite one over a tiny rate) are refused for
    that, not as non-finite times."""
    for times, rate in (((0.0, 0.0, 0.0, 5e-324), 1.0), ((0.0, 1e-300), 1e-10)):
        with pytest.raises(SpecError, match="too short to be rescaled to a request rate") as err:
            Arrivals("trace", trace_s=times).with_rate(rate)
        assert "finite numbers" not in str(err.value)
    assert Arrivals("trace", trace_s=(0.0, 1e-300)).with_rate(1.0).trace_s == pytest.approx((0.0, 1.0))


def _one_class() -> list[WorkloadClass]:
    return [WorkloadClass("c", 1.0, LengthDist("fixed", 50), LengthDist("fixed", 10), AcceptanceModel.iid(0.5))]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_the_simulator_refuses_a_non_finite_arrival(bad: float) -> None:
    """A request table built by hand (the library API) with a NaN arrival: the old loop set its clock to NaN and
    spun forever, as nothing compares <= NaN."""
    requests = RequestTable(
        np.array([0.0, bad, 2.0]), np.full(3, 50, dtype=np.int64), np.full(3, 10, dtype=np.int64), np.zeros(3, np.int64)
    )
    engine = EngineConfig(kv_capacity_tokens=100_000, max_num_seqs=8, max_num_batched_tokens=2048)
    target = CalibratedPredictor(3.926e-8, 2.101e-5, 5.886e-3)
    with _no_hang(), pytest.raises(SpecError, match="request 1: arrival time must be a finite number"):
        simulate(requests, _one_class(), engine, target, None, np.random.default_rng(0))


def test_a_closed_loop_ignores_the_arrivals_it_replaces() -> None:
    """A closed loop's later requests arrive when earlier ones finish: their ``arrival_s`` is not read."""
    requests = RequestTable(
        np.array([0.0, np.nan, np.nan]),
        np.full(3, 50, dtype=np.int64),
        np.full(3, 10, dtype=np.int64),
        np.zeros(3, np.int64),
        users=1,
    )
    engine = EngineConfig(kv_capacity_tokens=100_000, max_num_seqs=8, max_num_batched_tokens=2048)
    target = CalibratedPredictor(3.926e-8, 2.101e-5, 5.886e-3)
    with _no_hang():
        result = simulate(requests, _one_class(), engine, target, None, np.random.default_rng(0))
    assert np.isfinite(result.finish_s).all()


def test_a_num_requests_override_is_named_as_given(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(BASE.replace("num_requests = 20", "num_requests = 200"))
    scenario = load_scenario(path)
    assert not [w for w in scenario.warnings if "num_requests" in w]
    small = with_overrides(scenario, path, 5, None)
    flagged = small.warnings
    assert [w.split(":")[0] for w in flagged if "so few requests" in w] == ["--num-requests 5"]
    api = with_overrides(scenario, path, 5, None, _ARGUMENTS).warnings  # the API names its argument (review C 9a)
    assert [w.split(":")[0] for w in api if "so few requests" in w] == ["num_requests=5"]
    back = with_overrides(small, path, 500, None).warnings
    assert not [w for w in back if "so few requests" in w]  # a larger override drops the smaller one's warning
    path.write_text(BASE)  # the file's own count is still named as the file's
    assert [w.split(":")[0] for w in load_scenario(path).warnings if "so few requests" in w] == [
        "[sweep].num_requests = 20"
    ]


def test_an_override_of_a_small_file_count_replaces_its_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    warnings = with_overrides(load_scenario(path), path, 7, None).warnings
    assert [w.split(":")[0] for w in warnings if "so few requests" in w] == ["--num-requests 7"]


def test_the_cli_names_the_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = tmp_path / "s.toml"
    path.write_text(BASE.replace("num_requests = 20", "num_requests = 200"))
    assert main(["simulate", "--scenario", str(path), "--num-requests", "5", "--json", "--processes", "1"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    few = [w for w in warnings if "so few requests" in w]
    assert len(few) == 1 and few[0].startswith("--num-requests 5: ")


def _seed(value: str) -> str:
    return BASE.replace("num_requests = 20", f"num_requests = 20\nseed = {value}")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_seed("1.5"), r"\[sweep\]\.seed: must be an integer >= 0, got 1\.5"),
        (_seed("1.0"), r"\[sweep\]\.seed: must be an integer >= 0, got 1\.0"),
        (_seed("-1"), r"\[sweep\]\.seed: must be an integer >= 0, got -1"),
        (_seed('"7"'), r"\[sweep\]\.seed: must be an integer >= 0, got '7'"),
        (BASE.replace('name = "r12"', "name = {a=1}"), r"s\.toml: name: must be a non-empty string, got a table"),
        (BASE.replace('name = "r12"', "name = 3"), r"s\.toml: name: must be a non-empty string, got 3"),
        (BASE.replace('name = "r12"', 'name = ""'), r"s\.toml: name: must be a non-empty string, got ''"),
        ("", r"s\.toml: \[deployment\]: required table is missing"),
        ('name = "x"\n', r"s\.toml: \[deployment\]: required table is missing"),
        (BASE.split("[speculation]")[0], r"s\.toml: \[speculation\]: required table is missing"),
    ],
)  # fmt: skip
def test_wrong_types_are_refused(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SpecwiseError, match=says):
        load_scenario(path)


def test_an_integer_seed_and_the_default_name_still_load(tmp_path: Path) -> None:
    path = tmp_path / "named-by-file.toml"
    path.write_text(BASE.replace('name = "r12"\n', "").replace("num_requests = 20", "num_requests = 20\nseed = 7"))
    scenario = load_scenario(path)
    assert scenario.sweep.seed == 7 and scenario.name == "named-by-file"


def test_an_empty_file_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"specwise simulate: error: {path}: [deployment]: required table is missing"]
