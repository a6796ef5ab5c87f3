"""One request's record and the token-normalised latency metrics of a level (pure).

guidellm-style definitions that stay right under speculation, where one streamed chunk can carry
several tokens:

* TTFT = first content chunk - request start
* TPOT = (last chunk - first chunk) / (output tokens - 1)
* ITL: a chunk of n tokens arriving g seconds after the previous one gives n samples of g / n
* E2E = end - start; output tokens/s = tokens of successful requests / level wall time
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from specwise.latency import LatencySummary, LevelSummary
from specwise.stats import Percentiles


@dataclass(frozen=True)
class RequestRecord:
    run_id: str
    level: int
    request_id: str
    workload_class: str | None
    scheduled_s: float
    start_s: float
    end_s: float
    first_token_s: float | None = None
    output_tokens: int = 0
    prompt_tokens: int | None = None
    chunks: tuple[tuple[float, int], ...] = ()  # (arrival time, tokens in chunk)
    error: str | None = None
    status_code: int | None = None
    tokens_exact: bool = True  # per-chunk token counts came from the server's usage stats
    session: str = ""  # the bench process that sent it (a --resume is another): its clock span is its own

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_s is None else self.first_token_s - self.start_s

    @property
    def tpot_s(self) -> float | None:
        if self.first_token_s is None or self.output_tokens < 2 or not self.chunks:
            return None
        return (self.chunks[-1][0] - self.first_token_s) / (self.output_tokens - 1)

    def itl_samples(self) -> tuple[list[float], list[int]]:
        gaps, weights = [], []
        for (t0, _), (t1, n) in zip(self.chunks, self.chunks[1:], strict=False):
            if n > 0:
                gaps.append((t1 - t0) / n)
                weights.append(n)
        return gaps, weights

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> RequestRecord:
        d = json.loads(text)
        d["chunks"] = tuple((float(t), int(n)) for t, n in d.get("chunks", ()))
        return cls(**d)


PROCESS_SESSION = uuid.uuid4().hex[:12]  # this bench process, stamped on every record it sends


def active_span_s(records: Sequence[RequestRecord], offsets: Mapping[str, float] | None = None) -> float:
    """Seconds the level was being sent (throughputs divide by this): first start to last end within each bench
    process that sent part of it -- a level resumed after a crash does not count the time no process was running.
    With ``offsets`` (an open-loop level's arrival schedule: each request's due time from the level's start), the
    processes' spans are laid on that schedule and the level lasts from the earliest to the latest: the schedule's
    idle time between the last request one process finished and the first the next one sent counts, as it would
    have in one uninterrupted run (review s45a: a resumed level's throughput came out ~40% high without it).
    Without them (a closed-loop level: no schedule), the spans are summed."""
    spans: dict[str, tuple[float, float, RequestRecord]] = {}  # per process: first start, last end, a record
    for r in records:
        lo, hi, some = spans.get(r.session, (r.start_s, r.end_s, r))
        spans[r.session] = (min(lo, r.start_s), max(hi, r.end_s), some)
    if offsets is None or len(spans) < 2 or any(some.request_id not in offsets for *_, some in spans.values()):
        return sum(hi - lo for lo, hi, _ in spans.values())
    # a process's clock at the schedule's zero: each request was due at (that zero + its offset), its scheduled_s
    zeros = [some.scheduled_s - offsets[some.request_id] for *_, some in spans.values()]
    laid = [(lo - zero, hi - zero) for (lo, hi, _), zero in zip(spans.values(), zeros, strict=True)]
    return max(hi for _, hi in laid) - min(lo for lo, _ in laid)


def summarize_level(
    records: Sequence[RequestRecord],
    level: int,
    target_rate_per_s: float | None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    offsets: Mapping[str, float] | None = None,
) -> LevelSummary:
    """The level's latencies and throughputs; ``offsets``: an open-loop level's arrival schedule by request id, which
    a resumed level's duration is laid on (:func:`active_span_s`)."""
    ok = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    duration = active_span_s(records, offsets)

    def arr(values: list[float | None]) -> np.ndarray:
        return np.array([v for v in values if v is not None], dtype=np.float64)

    gaps: list[float] = []
    weights: list[int] = []
    chunk_gaps: list[float] = []
    for r in ok:
        g, w = r.itl_samples()
        gaps += g
        weights += w
        chunk_gaps += [gap * n for gap, n in zip(g, w, strict=True)]  # the chunk's whole gap, as vLLM bench
    met = None
    if slo_ttft_s is not None or slo_tpot_s is not None:
        met = sum(
            1
            for r in ok
            if (slo_ttft_s is None or (r.ttft_s is not None and r.ttft_s <= slo_ttft_s))
            and (slo_tpot_s is None or r.tpot_s is None or r.tpot_s <= slo_tpot_s)
        )
    errors: dict[str, int] = {}
    for r in failed:
        key = (r.error or "error").split(":", 1)[0]
        errors[key] = errors.get(key, 0) + 1
    fields = LatencySummary.fields(
        requests=len(records),
        ttft_s=arr([r.ttft_s for r in ok]),
        tpot_s=arr([r.tpot_s for r in ok]),
        itl_s=np.array(gaps, dtype=np.float64),
        itl_weights=np.array(weights, dtype=np.int64) if weights else None,
        e2e_s=arr([r.end_s - r.start_s for r in ok]),
        output_tokens=sum(r.output_tokens for r in ok),
        completed=len(ok),
        span_s=duration,
        met_slo=met,
    )
    return LevelSummary(
        **fields,
        level=level,
        target_rate_per_s=target_rate_per_s,
        failed=len(failed),
        duration_s=duration,
        errors=errors,
        sessions=max(1, len({r.session for r in records})),
        itl_per_chunk_s=Percentiles.of(np.array(chunk_gaps, dtype=np.float64)),
    )


def token_count_notes(records: Sequence[RequestRecord]) -> list[str]:
    """A note for each way successful requests were counted without per-chunk usage (``tokens_exact`` False):
    with the server's final usage count, tokens, E2E and tok/s are exact, TPOT is over that count and ITL is per
    chunk; without any usage, every figure counts one token per text chunk (a speculative chunk carries several)."""
    ok = [r for r in records if r.ok]
    inexact = [r for r in ok if not r.tokens_exact]
    if not inexact:
        return []
    # the client keeps one token per text chunk in ``chunks``: a larger output count is the server's final usage
    final = sum(1 for r in inexact if r.output_tokens > sum(n for _, n in r.chunks))
    notes = []
    if final:
        notes.append(
            f"note: {final} of {len(ok)} requests streamed no per-chunk usage: their tokens, E2E and tok/s use the "
            "server's final usage count, TPOT spreads the time after the first token over that count, and ITL is "
            "per streamed chunk, not per token"
        )
    if len(inexact) > final:
        notes.append(
            f"note: {len(inexact) - final} of {len(ok)} requests streamed no usage counts: each text chunk was "
            "counted as one token, so their tokens, TPOT, ITL and tok/s are per chunk (a speculative chunk carries "
            "several tokens); a vLLM server sends counts for stream_options include_usage + continuous_usage_stats"
        )
    return notes


def error_examples(records: Sequence[RequestRecord]) -> dict[str, str]:
    """The first failed request's whole ``error`` (the server's body for an HTTP error) for each kind of failure
    (its text up to the first colon, as :func:`summarize_level` counts them), in the order they first failed."""
    first: dict[str, str] = {}
    for r in records:
        if r.error is not None:
            first.setdefault(r.error.split(":", 1)[0], r.error)
    return first


def error_hint(kind: str, api_key_env: str | None) -> str | None:
    """What to change for a kind of failure whose cause the status names: a refused key, an unknown model."""
    if kind in ("http 401", "http 403"):
        return "the server refused the request's credentials: " + _refused(api_key_env)
    if kind == "http 404":
        return (
            "no such endpoint or model on the server: check --url (without /v1) and --model (the names the "
            "server's GET /v1/models lists)"
        )
    return None


def every_request(n: int) -> str:
    """``all 12 requests``, or ``the one request`` (not "all 1 requests": review s59)."""
    return "the one request" if n == 1 else f"all {n} requests"


def all_failed_hint(
    kinds: Collection[str],
    url: str = "--url",
    model: str = "--model",
    timeout: str = "--request-timeout",
    key_env: str | None = "OPENAI_API_KEY",
) -> str:
    """What to check when every request of a run failed with these kinds: raise the ``timeout`` when all timed
    out, the API key when the server refused every one (401/403: named by ``key_env``, the variable the run read
    it from), else ``url``, ``model`` and the server."""
    if set(kinds) == {"timeout"}:
        return f"raise {timeout}"
    if kinds and set(kinds) <= {"http 401", "http 403"}:
        return "the server refused the requests' credentials: " + _refused(key_env, url)
    return f"check {url}, {model} and the server"


def _refused(key_env: str | None, url: str = "") -> str:
    """What to change when the server answered 401/403, from what the requests carried: the URL's
    ``user:password@`` (masked in ``url`` as ``***@``), the key in ``$key_env`` (set or not, read now), or nothing
    (review s45a: "set $OPENAI_API_KEY" was said with the key set but wrong, and for a URL's credentials)."""
    if "***@" in url or "@" in url.partition("://")[2].partition("/")[0]:
        return "they were the URL's user:password@; check them (or give the key with --api-key-env instead)"
    if not key_env:
        return "they carried no API key (--api-key-env was empty); name the variable holding it with --api-key-env"
    if os.environ.get(key_env):
        return f"the API key in ${key_env} was refused; check its value, or name another variable with --api-key-env"
    return f"${key_env} is not set, so no API key was sent; set it, or name the variable holding it with --api-key-env"
