"""The numbers of a ``vllm bench serve --save-detailed`` run that no measurement can give, refused in one line
naming the file and field.

vLLM 0.32 ``vllm/benchmarks/serve.py`` measures every latency as a difference of ``time.perf_counter()`` readings,
so ``ttfts``, ``itls``, ``latencies`` (E2E) and ``duration`` are finite and not negative; a failed request keeps
``ttft = 0`` and ``output_len = 0`` (``benchmarks/lib/endpoint_request_func.py``: ``RequestFuncOutput`` defaults),
so a zero TTFT or E2E is refused only for a request that produced tokens; ``input_lens`` (the prompt's length,
set before the request is sent) and ``output_lens`` are integers >= 0. A zero inter-chunk gap is kept: two
chunks read from one network packet can share a clock tick (the step reader skips such a gap); but a run whose
requests streamed later chunks and every one of whose gaps is zero timed no engine step. Every request ran inside
the run (``duration`` is read around all of them), so no latency is longer than ``duration``.
"""

from __future__ import annotations

import math

from specwise.contracts.document import DocumentError, JsonObject


def _finite(value: object) -> float | None:
    """``value`` as a float when it is a finite JSON number, else None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _bad_value(where: str, field: str, value: object, rule: str) -> DocumentError:
    return DocumentError(f"{where}: {field} = {value!r}: {rule}")


RUN_SLACK, RUN_SLACK_S = 1.01, 1e-3  # the clock reads around the run and around a request are not the same reads


def _check_latency(
    where: str, field: str, value: object, produced_tokens: bool, duration_s: float | None = None
) -> None:
    """A per-request latency in seconds: finite and >= 0; > 0 for a request that produced tokens; within the run's
    ``duration_s`` (when known)."""
    if value is None and not produced_tokens:
        return
    if value is None:
        raise _bad_value(where, field, value, "missing for a request that produced tokens (output_lens > 0)")
    seconds = _finite(value)
    if seconds is None or seconds < 0:
        raise _bad_value(where, field, value, "a latency must be a finite number of seconds >= 0")
    if produced_tokens and seconds == 0:
        raise _bad_value(where, field, value, "zero for a request that produced tokens (output_lens > 0)")
    if duration_s is not None and seconds > duration_s * RUN_SLACK + RUN_SLACK_S:
        raise _bad_value(where, field, value, f"longer than the whole run (duration = {duration_s:g} s)")


def _check_tokens(where: str, field: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad_value(where, field, value, "a token count must be an integer >= 0")
    return value


def _check_request(data: JsonObject, where: str, i: int, duration_s: float | None) -> None:
    _check_tokens(where, f"input_lens[{i}]", data["input_lens"][i])
    output = _check_tokens(where, f"output_lens[{i}]", data["output_lens"][i])
    start = data["start_times"][i]
    if _finite(start) is None:
        raise _bad_value(where, f"start_times[{i}]", start, "a send time must be a finite number of seconds")
    produced = output > 0
    _check_latency(where, f"ttfts[{i}]", data["ttfts"][i], produced, duration_s)
    latencies = data.get("latencies")
    if isinstance(latencies, list) and i < len(latencies):
        _check_latency(where, f"latencies[{i}] (E2E)", latencies[i], produced, duration_s)
    itls = data["itls"][i]
    if not isinstance(itls, list):
        raise _bad_value(where, f"itls[{i}]", itls, "each request's inter-chunk gaps must be a list of seconds")
    for j, gap in enumerate(itls):
        _check_latency(where, f"itls[{i}][{j}]", gap, False, duration_s)


def _check_counts(data: JsonObject, where: str) -> None:
    """``completed`` and ``failed`` count the requests of the per-request lists: vLLM writes one entry per output
    and counts each output as one or the other (``calculate_metrics``), with ``output_lens`` 0 for a failed one, so
    no more requests produced tokens than completed. The counts are integers >= 0 when they get here
    (:func:`specwise.contracts.bench_formats.level_from_result` read them)."""
    completed, failed = int(data.get("completed") or 0), int(data.get("failed") or 0)
    n = len(data["start_times"])
    if completed + failed != n:
        raise DocumentError(
            f"{where}: completed + failed = {completed} + {failed}, but the per-request lists hold {n} requests: "
            "vLLM counts each request it sent as one or the other"
        )
    produced = sum(1 for tokens in data["output_lens"] if tokens > 0)
    if produced > completed:
        raise DocumentError(
            f"{where}: completed = {completed}, but {produced} requests produced tokens (output_lens > 0): vLLM "
            "writes output_lens 0 for a failed request"
        )


def check_values(data: JsonObject, where: str) -> None:
    """Refuse a negative, non-finite or non-numeric latency, send time, token count (``input_lens``,
    ``output_lens``) or duration, a latency longer than the run, ``completed`` and ``failed`` that do not count the
    run's requests, or gaps that are all zero, in one run whose
    per-request lists are known to be present and of one length (:func:`specwise.contracts.vllm_detailed.detailed_run`
    checked that)."""
    duration = data.get("duration")
    if duration is not None and not (_finite(duration) or 0.0) > 0:
        raise _bad_value(where, "duration", duration, "a run's duration must be a finite number of seconds > 0")
    duration_s = _finite(duration)
    for i in range(len(data["start_times"])):
        _check_request(data, where, i, duration_s)
    _check_counts(data, where)
    gaps = [g for itls in data["itls"] for g in itls]
    if gaps and not any(_finite(g) for g in gaps):
        raise DocumentError(
            f"{where}: itls: all {len(gaps):,} inter-chunk gaps are 0: no engine step was timed (a client that "
            "stamped the chunks after the stream ended?); re-run vllm bench serve"
        )
