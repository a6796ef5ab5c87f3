"""The "measure first" commands: a ``specwise bench --launch`` run that sends the scenario's traffic (its
temperature, replies about as long as its mean) to the advised launch file at the operating loads, and -- where
the engine's ``/metrics`` allow it -- calibrates the step-time law on that run and advises again from it.

The follow-up advise takes the run's JSON twice: ``--bench`` (the acceptance it measured) and ``--calibration`` (the
step-time law ``--calibrate`` fitted, carried in the same file; :meth:`CalibrationDoc.read` reads a bench result's
``calibration`` block). The calibration is of the very server being decided on, so it replaces whatever step-time
model this advice ran on (the scenario's, or a ``--predictor`` / ``--calibration`` given on the command line).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specwise.advisor.evidence import TEMPERATURE_TOLERANCE
from specwise.engines import Engine
from specwise.engines.base import calibration_refusal, shell
from specwise.scenario.model import WorkloadSpec
from specwise.traffic import LengthDist

REQUESTS_PER_LEVEL = 200
PROMPTS = "YOUR_PROMPTS.jsonl"  # the operator's own prompts: a placeholder the command says to replace
# the bench table's speedup column for each decision metric (report/bench.py render_comparison)
_COLUMN = {"e2e": "xE2E", "tpot": "xTPOT", "throughput": "xtok/s"}


@dataclass(frozen=True)
class BenchTraffic:
    """What the bench run sends: one temperature and a reply length cap, and what that leaves out."""

    temperature: float
    max_tokens: int
    notes: tuple[str, ...] = ()


def _mean_tokens(d: LengthDist) -> float:
    return (d.min + d.max) / 2 if d.kind == "uniform" else d.mean


def bench_traffic(workloads: Sequence[WorkloadSpec]) -> BenchTraffic:
    """The temperature that carries the most traffic (by share; the first workload's on a tie) and ``--max-tokens``
    at the traffic-weighted mean reply length. A bench run pools its acceptance over every request, and advise
    applies it to every workload, so a run at one temperature is what the follow-up can use; workloads more than
    :data:`TEMPERATURE_TOLERANCE` away are named (the follow-up marks their acceptance as measured at another
    temperature)."""
    total = sum(w.share for w in workloads)
    by_temperature: dict[float, float] = {}
    for w in workloads:
        by_temperature[w.temperature] = by_temperature.get(w.temperature, 0.0) + w.share
    temperature = max(by_temperature, key=lambda t: by_temperature[t])  # max keeps the first of equals
    mean = sum(w.share * _mean_tokens(w.output_tokens) for w in workloads) / total
    far = [w for w in workloads if abs(w.temperature - temperature) > TEMPERATURE_TOLERANCE]
    notes: tuple[str, ...] = ()
    if far:
        named = ", ".join(f"{w.name!r} (T={w.temperature:g})" for w in far)
        share = sum(w.share for w in far) / total
        notes = (
            f"the run samples at T={temperature:g}, the temperature of {1 - share:.0%} of the traffic; workload(s) "
            f"{named} run more than {TEMPERATURE_TOLERANCE:g} away: the follow-up advise applies this run's "
            "acceptance to them too and says so in their evidence -- to measure theirs, run the bench again with "
            "their --temperature",
        )
    return BenchTraffic(temperature, max(1, round(mean)), notes)


@dataclass(frozen=True)
class MeasureRun:
    """The bench run to write a command for: the scenario and launch files, the rates, and the engine."""

    scenario_file: str
    launch_file: str
    out_file: str
    rates: str
    engine: Engine
    engine_version: str | None = None  # advise's --vllm-version, carried into the follow-up advise


def measure_command(
    run: MeasureRun, traffic: BenchTraffic, candidate: str, operating_qps: float, min_speedup: float, metric: str
) -> tuple[str, tuple[str, ...]]:
    """The command line (shell-quoted words; the redirection and ``&&`` as such) and its notes. With an engine whose
    counters give a calibration: bench with ``--calibrate``, then advise from its JSON; without
    (:func:`calibration_refusal`): the bench alone, whose A/B table is the measurement to read."""
    bench = ["specwise", "bench", "--launch", run.launch_file, "--rates", run.rates]
    bench += ["--requests-per-level", str(REQUESTS_PER_LEVEL), "--prompts", PROMPTS]
    bench += ["--temperature", f"{traffic.temperature:g}", "--max-tokens", str(traffic.max_tokens)]
    why = calibration_refusal(run.engine)
    if why is not None:
        column = _COLUMN.get(metric, "xE2E")
        note = (
            f"no --calibrate and no advise afterwards: {why}. Read the run's A/B table instead: enable {candidate} "
            f"if its measured speedup over the baseline ({column}) at {operating_qps:g} req/s clears {min_speedup:g}x"
        )
        return shell(bench), (*traffic.notes, note)
    advise = ["specwise", "advise", "--scenario", run.scenario_file, "--calibration", run.out_file]
    advise += ["--bench", run.out_file]
    if run.engine_version is not None:
        advise += ["--vllm-version", run.engine_version]
    command = f"{shell([*bench, '--calibrate', '--json'])} > {shell([run.out_file])} && {shell(advise)}"
    return command, traffic.notes
