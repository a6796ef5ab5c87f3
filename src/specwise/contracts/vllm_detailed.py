"""``vllm bench serve --save-result --save-detailed`` runs as typed per-request timings (reads the files).

vLLM 0.32 ``vllm/benchmarks/serve.py`` (``benchmark()``, the ``result`` dict) saves per request ``start_times``
(``time.perf_counter()`` when the request was sent, after the ``--max-concurrency`` gate), ``ttfts`` (s), ``itls``
(s; ``benchmarks/lib/endpoint_request_func.py`` appends one gap per streamed chunk that carries ``choices``),
``input_lens``, ``output_lens`` (tokens; 0 for a failed request) and ``errors``; ``main()`` deletes them unless
``--save-detailed`` was given. The run's summary, spec-decode counts and ``--metadata speculative_config``
are read as :mod:`specwise.contracts.bench_formats` reads them; the vLLM version is not in the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specwise.contracts.bench import BenchLevel
from specwise.contracts.bench_formats import is_vllm_result, level_from_result, parse_speculative_config, read_objects
from specwise.contracts.document import CALIBRATE_A_BENCH_RUN, DocumentError, Fields, JsonObject, is_bench_result
from specwise.contracts.vllm_detailed_values import check_values
from specwise.methods import row_name

DETAILED = ("start_times", "ttfts", "itls", "input_lens", "output_lens")


@dataclass(frozen=True)
class RequestTiming:
    start_s: float
    ttft_s: float | None  # None: no first token
    itls_s: tuple[float, ...]  # one gap per later chunk
    prompt_tokens: int | None
    output_tokens: int
    error: str  # "" when the request succeeded


@dataclass(frozen=True)
class DetailedRun:
    where: str  # file (and [line] of an --append-result file)
    spec_key: str  # the metadata speculative_config as written ("" without speculation)
    method: str | None
    k: int
    draft_model: str | None
    rate_per_s: float | None  # None: request_rate "inf" (all at once)
    model_id: str
    date: str
    summary: BenchLevel  # summary latencies and spec-decode counts
    requests: tuple[RequestTiming, ...]

    @property
    def max_concurrency(self) -> int | None:
        """``--max-concurrency`` (None: not given, every request sent at its arrival)."""
        return self.summary.concurrency

    @property
    def load_key(self) -> tuple[float, float]:
        """The run's load as a sortable key: ``--request-rate`` and ``--max-concurrency`` (none: infinite). Runs are
        compared (a speedup) only at one key."""
        rate = math.inf if self.rate_per_s is None else self.rate_per_s
        return rate, math.inf if self.max_concurrency is None else float(self.max_concurrency)

    @property
    def load_text(self) -> str:
        """The run's load as ``vllm bench serve``'s flags say it."""
        rate = "inf" if self.rate_per_s is None else f"{self.rate_per_s:g}"
        cap = "" if self.max_concurrency is None else f" --max-concurrency {self.max_concurrency}"
        return f"--request-rate {rate}{cap}"


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _lists(data: JsonObject, where: str) -> dict[str, list[object]]:
    """The per-request lists by name (:data:`DETAILED`, and ``errors`` and ``latencies`` where written), one entry
    per request each: vLLM writes every one over all the run's outputs, failed ones included (``benchmark()``'s
    ``result``), ``errors`` as strings (``RequestFuncOutput.error``, ``""`` for a success). A list that is absent
    is said as missing, one that is not a list as such."""
    missing = [k for k in DETAILED if data.get(k) is None]
    if missing == ["start_times"]:
        raise DocumentError(
            f"{where}: no start_times (when each request was sent): the file has the other per-request timings, "
            "so it comes from a vllm bench serve that saves no send times (they were added in 2026, vLLM PR "
            "#32667); re-run the bench with a vLLM that has them, or measure with specwise bench --launch FILE "
            "--calibrate"
        )
    if missing:
        raise DocumentError(
            f"{where}: no per-request timings ({', '.join(missing)}): re-run vllm bench serve with --save-result "
            "--save-detailed"
        )
    named = [*DETAILED, *(k for k in ("errors", "latencies") if data.get(k) is not None)]
    for key in named:
        if not isinstance(data[key], list):
            raise DocumentError(f"{where}: {key} = {repr(data[key])[:80]}: expected a list, one entry per request")
    columns = {k: list(data[k]) for k in named}
    if len({len(c) for c in columns.values()}) != 1:
        lengths = ", ".join(f"{k} {len(c)}" for k, c in columns.items())
        raise DocumentError(f"{where}: per-request lists of different lengths ({lengths})")
    for i, error in enumerate(columns.get("errors", ())):
        if not isinstance(error, str):
            raise DocumentError(f"{where}: errors[{i}] = {error!r}: an error must be a string ('' for success)")
    return columns


def _requests(data: JsonObject, where: str) -> tuple[RequestTiming, ...]:
    lists = _lists(data, where)
    columns = [lists[k] for k in DETAILED]
    columns.append(lists.get("errors") or [""] * len(columns[0]))  # none written: every request succeeded
    out = []
    for start, ttft, itls, prompt, output, error in zip(*columns, strict=True):
        gaps = tuple(g for g in (_number(x) for x in itls) if g is not None) if isinstance(itls, list) else ()
        ttft_s = _number(ttft)
        out.append(
            RequestTiming(
                start_s=_number(start) or 0.0,
                ttft_s=ttft_s if ttft_s and ttft_s > 0 else None,
                itls_s=gaps,
                prompt_tokens=prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None,
                output_tokens=output if isinstance(output, int) and not isinstance(output, bool) else 0,
                error=str(error or ""),
            )
        )
    return tuple(out)


def detailed_run(data: JsonObject, where: str) -> DetailedRun:
    """One run, its per-request lists checked for shape and for values no measurement gives (negative or
    non-finite latencies: :func:`~specwise.contracts.vllm_detailed_values.check_values`)."""
    if not is_vllm_result(data):
        if is_bench_result(data):
            raise DocumentError(
                f"{where}: is a specwise bench result; specwise calibrate reads vllm bench serve result files: "
                + CALIBRATE_A_BENCH_RUN
            )
        raise DocumentError(f"{where}: not a vllm bench serve --save-result file")
    summary = level_from_result(data, where, 0)
    spec = parse_speculative_config(data.get("speculative_config"), where)
    f = Fields(spec, where) if spec else None
    rate = data.get("request_rate")
    return DetailedRun(
        where=where,
        spec_key=str(data.get("speculative_config") or ""),
        method=row_name(str(spec["method"])) if spec else None,  # deepseek_mtp and the like run as mtp
        k=(f.integer("num_speculative_tokens", 0) or 0) if f else 0,
        draft_model=(f.text("model") if f else None),
        rate_per_s=None if rate in (None, "inf") else _number(rate),
        model_id=Fields(data, where).text("model_id") or "",
        date=Fields(data, where).text("date") or "",
        summary=summary,
        requests=_checked_requests(data, where),
    )


def _checked_requests(data: JsonObject, where: str) -> tuple[RequestTiming, ...]:
    requests = _requests(data, where)  # the lists are present and of one length from here
    check_values(data, where)
    return requests


def read_detailed_runs(paths: Sequence[Path]) -> list[DetailedRun]:
    """Every run in the files (one object per file, or one per line with ``--append-result``)."""
    runs = []
    for path in paths:
        objects = read_objects(path)
        for n, data in enumerate(objects):
            runs.append(detailed_run(data, f"{path}[{n}]" if len(objects) > 1 else str(path)))
    return runs
