"""guidellm's benchmark report (``guidellm run --output kind=json``, ``benchmarks.json``) as a
:class:`~specwise.contracts.bench.BenchDoc`: one level per guidellm benchmark (one load), latencies in seconds.

The format (guidellm 0.8, report schema ``metadata.version`` 2: ``guidellm/benchmark/schemas/report.py``
``GenerativeBenchmarksReport``; ``benchmark.py`` ``GenerativeBenchmark``; ``metrics.py`` ``GenerativeMetrics``):
``benchmarks[i].config.strategy`` is the load (``type_`` ``constant``/``poisson`` with ``rate`` in requests/s,
``concurrent`` with ``streams``, ``synchronous``, ``throughput``); ``benchmarks[i].metrics.<name>`` is a
``StatusDistributionSummary`` (``successful``/``incomplete``/``errored``/``total``, each with ``mean``, ``median``
and ``percentiles.p90``/``p99``). Units, from the field descriptions and ``schemas/base/request_stats.py``:

* ``time_to_first_token_ms``, ``inter_token_latency_ms``, ``time_per_output_token_ms``: MILLISECONDS;
* ``request_latency``: SECONDS (``request_end - request_start``), as is ``duration``;
* ``requests_per_second``, ``output_tokens_per_second``: per second.

Definitions differ from the names: guidellm's ``inter_token_latency_ms`` is per request
``(last token - first token) / (output tokens - 1)`` -- specwise's (and vLLM's) TPOT -- while guidellm's
``time_per_output_token_ms`` counts from the request start, first token included, and is not read. guidellm's
summary of ``inter_token_latency_ms`` weighs each request by its output tokens - 1 (a fixture of 30 requests of 60
tokens counts 1,770), so its mean is the token-weighted mean -- specwise's ITL mean, exactly -- and its percentiles,
read as TPOT's, are token-weighted: the per-request percentiles only when every request has the same output length
(``max_tokens`` with ``ignore_eos``, as guidellm's synthetic runs), else weighted towards the long requests (review
s47a F5). guidellm keeps no per-gap inter-token series, so ITL's percentiles are unknown. Latencies are read from the
``successful`` requests and throughput from ``total``, as guidellm's own console tables print them
(``benchmark/outputs/console.py``). guidellm measures at the client only: it reads no server counters, so a report
has no speculative-decoding acceptance (``spec_decode`` is None on every level).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.contracts.bench import BenchDoc, BenchLevel
from specwise.contracts.document import DocumentError, Fields, JsonObject
from specwise.errors import redact_url
from specwise.latency import LevelSummary
from specwise.stats import Percentiles

_MS = 1e-3
_RATE_STRATEGIES = ("constant", "poisson")


@dataclass(frozen=True)
class GuidellmReport:
    """A guidellm report: the guidellm version that wrote it and its loads as a bench document."""

    guidellm_version: str
    doc: BenchDoc

    def loads(self) -> str:
        """The loads in guidellm's own words (``constant@5``, ``concurrent@4``)."""
        return ", ".join(_load_label(lv) for lv in self.doc.levels)


def is_guidellm_report(data: Mapping[str, Any]) -> bool:
    """guidellm's report: a top-level ``benchmarks`` list (specwise's and vLLM's results have none)."""
    return isinstance(data.get("benchmarks"), list)


def _load_label(lv: BenchLevel) -> str:
    s = lv.summary
    if s.target_rate_per_s is not None:
        return f"{s.target_rate_per_s:g} req/s"
    if lv.concurrency is not None:
        return f"concurrency {lv.concurrency}"
    return "unbounded"


def _summary(m: Fields, key: str, status: str) -> Fields:
    dist = m.object(key)
    if dist is None:
        raise m.fail(key, "missing")
    part = dist.object(status)
    if part is None:
        raise dist.fail(status, "missing")
    return part


def _percentiles(m: Fields, key: str, scale: float) -> Percentiles:
    """``metrics.<key>.successful``: mean, median, p90, p99, times ``scale`` (to seconds)."""
    part = _summary(m, key, "successful")
    if (part.integer("count") or 0) == 0:
        return Percentiles.of_nothing()
    pct = part.object("percentiles")
    if pct is None:
        raise part.fail("percentiles", "missing")
    values = (part.number("mean"), part.number("median"), pct.number("p90"), pct.number("p99"))
    return Percentiles(*(v * scale if v is not None else math.nan for v in values))


def _mean(m: Fields, key: str, status: str = "total") -> float | None:
    dist = m.object(key)
    part = dist.object(status) if dist is not None else None
    return part.number("mean") if part is not None else None


def _load(strategy: Fields) -> tuple[float | None, int | None]:
    """(target rate in requests/s, concurrency) of a guidellm scheduling strategy."""
    kind = strategy.text("type_", "") or ""
    if kind in _RATE_STRATEGIES:
        return strategy.number("rate", required=True), None
    if kind == "concurrent":
        return None, strategy.integer("streams", required=True)
    if kind == "synchronous":
        return None, 1
    return None, strategy.integer("max_concurrency")


def level_from_benchmark(b: Fields, level: int) -> BenchLevel:
    """One guidellm benchmark (one load) as one bench level."""
    config = b.object("config")
    strategy = config.object("strategy") if config is not None else None
    if strategy is None:
        raise b.fail("config.strategy", "missing (not a guidellm generative benchmark)")
    m = b.object("metrics")
    if m is None:
        raise b.fail("metrics", "missing")
    totals = m.object("request_totals")
    if totals is None:
        raise m.fail("request_totals", "missing")
    completed, errored = totals.integer("successful", 0) or 0, totals.integer("errored", 0) or 0
    rate, concurrency = _load(strategy)
    tpot = _percentiles(m, "inter_token_latency_ms", _MS)
    summary = LevelSummary(
        requests=completed + errored,
        ttft_s=_percentiles(m, "time_to_first_token_ms", _MS),
        tpot_s=tpot,
        itl_s=Percentiles(tpot.mean, math.nan, math.nan, math.nan),
        e2e_s=_percentiles(m, "request_latency", 1.0),
        output_tokens_per_s=_mean(m, "output_tokens_per_second") or 0.0,
        request_rate_per_s=_mean(m, "requests_per_second") or 0.0,
        goodput_per_s=_mean(m, "request_goodput"),
        level=level,
        target_rate_per_s=rate,
        failed=errored,
        duration_s=b.number("duration", 0.0) or 0.0,
    )
    return BenchLevel(summary, None, concurrency=concurrency)


def from_guidellm_report(data: JsonObject, where: str, path: Path | None = None) -> GuidellmReport:
    """The report's benchmarks as the levels of one run against the server guidellm targeted (its first
    benchmark's ``config.backend``: ``target`` URL and ``model``); a missing or malformed field is one line naming
    it."""
    f = Fields(data, where)
    meta = f.object("metadata")
    version = (meta.text("guidellm_version") if meta is not None else None) or "(version not recorded)"
    benchmarks = f.objects("benchmarks")
    if not benchmarks:
        raise DocumentError(f"{where}: a guidellm {version} report with no benchmarks")
    levels = tuple(level_from_benchmark(b, i) for i, b in enumerate(benchmarks))
    config = benchmarks[0].object("config")
    backend = config.object("backend") if config is not None else None
    url = backend.text("target") if backend is not None else None
    doc = BenchDoc(
        run_id=(config.text("run_id") if config is not None else None) or "",
        db="",
        model=(backend.text("model") if backend is not None else None) or "",
        url=redact_url(url) if url else None,
        levels=levels,
        path=path,
    )
    return GuidellmReport(version, doc)
