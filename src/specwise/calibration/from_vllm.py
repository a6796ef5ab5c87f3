"""Calibrate from ``vllm bench serve --save-result --save-detailed`` files (I/O edge: reads the files).

The files keep per request the send time, TTFT and one inter-chunk gap per streamed chunk
(:mod:`specwise.contracts.vllm_detailed`), so a request's chunks arrived at ``start + ttft + cumsum(itls)`` and
the gaps between them are the engine steps :mod:`specwise.calibration.steps` reads (vLLM streams one chunk per
engine step per running request). One run is one level of one configuration: its configuration is the
``--metadata speculative_config='{...}'`` it carries (none: the baseline), its level the rank of its
``request_rate`` and ``max_concurrency`` among all the runs given (so the baseline and the speculative run at one
load are compared);
spec-decode counts are the run's ``spec_decode_*`` fields. What cannot be calibrated from (runs of two models, no
baseline, rates without a baseline, unknown methods, a speculative run without spec-decode counts, impossible
numbers) is refused first (:mod:`specwise.calibration.vllm_checks`), and so are batch limits vLLM would refuse.

Assumption: vLLM does not keep how many tokens each chunk carried. The first chunk is taken to carry one token
(the prefill's) and the other ``output_len - 1`` are spread evenly over the later chunks (with speculation a chunk
carries a step's accepted tokens plus one; the file gives only their sum per request), so the context a step ran
over is exact at each request's end and off by less than one step's tokens in between. Server settings the files
do not record (``--max-num-seqs``, ``--max-num-batched-tokens``, the vLLM version) come from the caller, vLLM's
defaults otherwise, and are recorded in the calibration as assumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

from specwise.calibration.fit import ConfigRun, LevelRun, NoBaseStepsError
from specwise.calibration.from_bench import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    DEFAULT_MAX_NUM_SEQS,
    engine_limits,
    fitted_doc,
)
from specwise.calibration.vllm_checks import check_models, check_runs
from specwise.contracts.bench_formats import CONFIG_NAME
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc
from specwise.contracts.vllm_detailed import DetailedRun, RequestTiming, read_detailed_runs
from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord, summarize_level
from specwise.sim.scheduler import MAX_NUM_BATCHED_TOKENS_LIMIT, MAX_NUM_SEQS_LIMIT

TOKENS_PER_CHUNK = "1 in the first chunk, output_len - 1 spread evenly over the later chunks"


@dataclass(frozen=True)
class VllmCalibrationInput:
    paths: tuple[Path, ...]
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    engine_version: str | None = None
    assumed: tuple[str, ...] = ("max_num_seqs", "max_num_batched_tokens")  # settings the user did not give

    def __post_init__(self) -> None:
        """The batch limits a scenario accepts (:func:`specwise.scenario.parse.parse_deployment`), one line each."""
        for name, value, high in (
            ("max_num_seqs", self.max_num_seqs, MAX_NUM_SEQS_LIMIT),
            ("max_num_batched_tokens", self.max_num_batched_tokens, MAX_NUM_BATCHED_TOKENS_LIMIT),
        ):
            if not 1 <= value <= high:
                raise SpecwiseError(f"{self._setting(name)}: must be in 1..{high:,}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise SpecwiseError(
                f"{self._setting('max_num_batched_tokens')} must be at least {self._setting('max_num_seqs')}: "
                "vLLM's SchedulerConfig refuses less (vllm/config/scheduler.py); give the server's "
                "--max-num-batched-tokens and --max-num-seqs"
            )

    def _setting(self, name: str) -> str:
        """``--max-num-seqs 256 (vLLM's default)``: the flag, its value and whether the user gave it."""
        value = getattr(self, name)
        return f"--{name.replace('_', '-')} {value:,}" + (" (vLLM's default)" if name in self.assumed else "")


def spread_tokens(output_tokens: int, chunks: int) -> tuple[int, ...]:
    """Tokens per chunk: 1 in the first, the other ``output_tokens - 1`` spread evenly over the rest."""
    if chunks <= 0:
        return ()
    rest, later = max(0, output_tokens - 1), chunks - 1
    return (1, *(rest // later + (1 if i < rest % later else 0) for i in range(later))) if later else (1,)


def request_record(t: RequestTiming, level: int, request_id: str) -> RequestRecord:
    """One request with chunk arrival times ``start + ttft + cumsum(itls)`` (seconds on vLLM's ``perf_counter``
    clock) and tokens per chunk by :func:`spread_tokens`; a request without a first token is kept as failed."""
    if t.error or t.ttft_s is None:
        s = t.start_s
        return RequestRecord("vllm", level, request_id, None, s, s, s, error=t.error or "no first token")
    times = list(accumulate(t.itls_s, initial=t.start_s + t.ttft_s))
    tokens = spread_tokens(t.output_tokens, len(times))
    return RequestRecord(
        run_id="vllm",
        level=level,
        request_id=request_id,
        workload_class=None,
        scheduled_s=t.start_s,
        start_s=t.start_s,
        end_s=times[-1],
        first_token_s=times[0],
        output_tokens=sum(tokens),
        prompt_tokens=t.prompt_tokens,
        chunks=tuple(zip(times, tokens, strict=True)),
        tokens_exact=False,
    )


def _level(run: DetailedRun, level: int) -> LevelRun:
    records = tuple(request_record(t, level, str(i)) for i, t in enumerate(run.requests))
    counts = run.summary.spec_decode.counts if run.summary.spec_decode else None
    return LevelRun(
        level=level,
        rate_per_s=run.rate_per_s,
        records=records,
        drafts=counts.drafts if counts else None,
        draft_tokens=counts.draft_tokens if counts else None,
        per_position=counts.per_position_rates if counts else (),
        measured_tpot_p50_s=summarize_level(records, level, run.rate_per_s).tpot_s.p50,
        concurrency=run.max_concurrency,
    )


def config_runs(runs: Sequence[DetailedRun]) -> list[tuple[ConfigRun, DetailedRun]]:
    """One configuration per speculative config (the baseline first), one level per run -- a level is one
    (request rate, max concurrency) -- each with a run of it."""
    loads = sorted({r.load_key for r in runs})
    groups: dict[str, list[DetailedRun]] = {}
    for r in sorted(runs, key=lambda r: r.method is not None):
        groups.setdefault(r.spec_key, []).append(r)
    out: list[tuple[ConfigRun, DetailedRun]] = []
    for group in groups.values():
        levels: list[LevelRun] = []
        for r in sorted(group, key=lambda r: r.load_key):
            level = loads.index(r.load_key)
            if any(lv.level == level for lv in levels):
                raise SpecwiseError(
                    f"{r.where}: a second run of one configuration at {r.load_text}: give one run per "
                    "--request-rate and --max-concurrency"
                )
            levels.append(_level(r, level))
        first = group[0]
        taken = {c.name for c, _ in out}
        name = "baseline" if first.method is None else first.method
        name = name if name not in taken else f"{name}-k{first.k}"
        out.append((ConfigRun(name, first.method, first.k, tuple(levels)), first))
    return out


def _baseline_name(raw: Sequence[DetailedRun], paths: Sequence[Path]) -> str:
    """The calibration's name: the first baseline run's file (the law is fitted to the baseline's steps)."""
    base = next((r for r in raw if r.method is None), None)
    return Path(base.where.split("[")[0]).stem if base else paths[0].stem


def _fitted(request: VllmCalibrationInput, runs: list[ConfigRun], raw: Sequence[DetailedRun]) -> CalibrationDoc:
    engine = engine_limits(request.max_num_seqs, request.max_num_batched_tokens)
    try:
        return fitted_doc(_baseline_name(raw, request.paths), runs, engine)
    except NoBaseStepsError:
        base = ", ".join(r.where for r in raw if r.method is None)
        raise SpecwiseError(
            f"no engine steps in the baseline runs ({base}): no successful request streamed two or more chunks"
        ) from None


def batch_warnings(cal: CalibrationDoc, request: VllmCalibrationInput) -> list[str]:
    """What the replay may have got wrong: more requests decoding in one measured step than ``--max-num-seqs``
    lets the replay run (the server ran with a larger limit, or preempted requests; a preempted request still
    counts as running while its stream waits)."""
    peak = max((p.num_seqs for p in cal.points), default=0)
    if peak <= request.max_num_seqs:
        return []
    return [
        f"the runs show {peak} requests decoding in one engine step, more than {request._setting('max_num_seqs')} "
        "the replay caps its batch at: give the server's --max-num-seqs (its simulated TPOT and speedups assume the "
        "smaller batch)"
    ]


BASELINE_REPLAY_TOLERANCE = 0.15  # a baseline level replayed further than this from its measured TPOT is said


def replay_warnings(cal: CalibrationDoc, request: VllmCalibrationInput) -> list[str]:
    """Baseline levels whose replayed TPOT p50 is more than :data:`BASELINE_REPLAY_TOLERANCE` from the measured one:
    the law fits the steps, so the replay ran another server -- its batch limits first (review s47d F2: a server
    capped at 8 sequences replayed at vLLM's default 256 missed by +63% and +83%, and the speedup error column, which
    compares each config with the baseline, read 0)."""
    misses = [
        (r, r.predicted_tpot_p50_s / r.measured_tpot_p50_s - 1.0)
        for r in cal.rows
        if r.config == cal.base_config and r.measured_tpot_p50_s and r.predicted_tpot_p50_s is not None
    ]
    off = [(r, miss) for r, miss in misses if abs(miss) > BASELINE_REPLAY_TOLERANCE]
    if not off:
        return []
    worst = max(off, key=lambda rm: abs(rm[1]))
    return [
        f"the replay misses the baseline's measured TPOT p50 at {len(off)} of {len(misses)} levels (worst "
        f"{worst[1]:+.0%} at level {worst[0].level}), though the law fits the steps: the replay ran another server "
        f"than the runs did; first suspects {request._setting('max_num_seqs')} and "
        f"{request._setting('max_num_batched_tokens')}: give them as the server ran"
    ]


def calibrate_vllm(request: VllmCalibrationInput) -> CalibrationDoc:
    """The fitted step-time law, draft scales and per-level prediction error of ``vllm bench serve`` runs."""
    raw = read_detailed_runs(request.paths)  # its numbers checked where vLLM's file is read
    target = check_models(raw)
    check_runs(raw)
    pairs = config_runs(raw)
    cal = _fitted(request, [run for run, _ in pairs], raw)
    warnings = batch_warnings(cal, request) + replay_warnings(cal, request)
    return replace(
        cal,
        configs=tuple(CalibratedConfig(c.name, c.method, r.draft_model, c.k) for c, r in pairs),
        engine_version=request.engine_version,
        target=target,
        extra={
            "source": CONFIG_NAME,
            "source_files": [str(p) for p in request.paths],
            "source_dates": sorted({r.date for r in raw if r.date}),
            "server": {"max_num_seqs": request.max_num_seqs, "max_num_batched_tokens": request.max_num_batched_tokens},
            "assumed": {
                **{k: getattr(request, k) for k in request.assumed},
                **({} if request.engine_version else {"engine_version": "unknown (not in the result files)"}),
                "tokens_per_chunk": TOKENS_PER_CHUNK,
            },
            **({"warnings": warnings} if warnings else {}),
        },
    )
