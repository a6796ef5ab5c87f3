"""What the monitor tracks over a window between two scrapes of one server (pure).

Rates come from counter deltas (restarts detected, never negative), latency quantiles from histogram
bucket deltas (``histogram_quantile`` semantics), gauges from the latest scrape. Definitions are vLLM's
(see :mod:`specwise.metrics.spec_decode`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, cast

from specwise.contracts.document import json_safe
from specwise.engines.vllm import METRICS as VLLM
from specwise.metrics.exposition import Scrape
from specwise.metrics.histogram import HistogramSnapshot, histogram_quantile
from specwise.metrics.spec_decode import (
    NO_DRAFTS_NOTE,
    V0_ONLY,
    SeriesKey,
    SpecDecodeCounters,
    spec_decode_counters,
    total_delta,
    v0_acceptance_note,
)

# The monitor's latency percentiles, from vLLM's histograms. Its ``itl_s`` is vLLM's: one sample per engine step per
# request (vllm/v1/metrics/stats.py), whatever number of tokens the step emitted, so under speculation it is about
# AL times bench's token-normalised ``itl_s`` (bench's per-chunk ``itl_per_chunk_s`` is the comparable one; review
# s47a F7). ``tpot_s`` (per request) compares with bench's.
LATENCY_HISTOGRAMS = {
    "ttft_s": VLLM.ttft,
    "itl_s": VLLM.itl,
    "tpot_s": VLLM.tpot,
    "e2e_s": VLLM.e2e,
}
# a histogram's name on an older vLLM, read where the page has no histogram of the current name
OLDER_NAMES = {VLLM.itl: VLLM.itl_before_0_11}
NO_TPOT_BEFORE_0_11 = (
    f"vLLM before 0.11: ITL read from {VLLM.itl_before_0_11} (its name then); no per-request TPOT histogram "
    f"({VLLM.tpot} is from 0.11)"
)
# Every sample name window_stats reads: counters (only ever grow while a server lives) and gauges.
COUNTER_SAMPLES = frozenset(
    {
        VLLM.spec_drafts,
        VLLM.spec_draft_tokens,
        VLLM.spec_accepted,
        VLLM.spec_accepted_per_pos,
        VLLM.preemptions,
        VLLM.generation_tokens,
        VLLM.request_success,
        *(
            name + suffix
            for name in (*LATENCY_HISTOGRAMS.values(), *OLDER_NAMES.values())
            for suffix in ("_bucket", "_count", "_sum")
        ),
    }
)
GAUGE_SAMPLES = frozenset(
    {
        VLLM.running,
        VLLM.waiting,
        VLLM.kv_usage,
        VLLM.kv_usage_before_0_10,
        VLLM.spec_drafts_created,
        # each counter's and histogram's _created: a restart inside the window, dated (_increase, _latency)
        *(
            name.removesuffix("_total") + "_created"
            for name in (VLLM.generation_tokens, VLLM.request_success, VLLM.preemptions)
        ),
        *(name + "_created" for name in (*LATENCY_HISTOGRAMS.values(), *OLDER_NAMES.values())),
    }
)
# Read to tell a vLLM V0 page and to say its acceptance since start (v0_acceptance_note), never a window's number:
# kept whatever their value (V0 sets its acceptance gauge to NaN before any draft), never a fault.
INFO_SAMPLES = frozenset(V0_ONLY)
WINDOW_SAMPLES = COUNTER_SAMPLES | GAUGE_SAMPLES | INFO_SAMPLES


@dataclass(frozen=True)
class WindowStats:
    window_s: float
    drafts: float | None
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    per_position_acceptance: tuple[float, ...]
    draft_tokens_per_s: float | None
    accepted_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    requests_per_s: float | None
    running: float | None  # requests, summed over the page's engines and servers
    waiting: float | None
    kv_cache_usage: float | None  # the fullest engine's fraction (a sum over engines could pass 1)
    preemptions_per_s: float | None
    latency: dict[str, dict[str, float | None]] = field(default_factory=dict)
    counter_reset: bool = False
    notes: tuple[str, ...] = ()
    # per model_name (LoRA adapters / served names) when the server labels more than one
    by_model: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # (kind, detail) of what the server reported that this window could not use (kind: ``impossible_counter``)
    faults: tuple[tuple[str, str], ...] = ()
    model_names: tuple[str, ...] = ()  # the model_name labels of its spec-decode series (served names)
    # the largest running count of one engine (vLLM labels each data-parallel engine ``engine="N"``): the batch
    # one GPU group decodes, where ``running`` sums every engine's (None: as ``running``)
    running_per_engine: float | None = None
    # draft tokens over the window; with no drafts counter (vLLM V1 before 0.8.5: ``drafts`` None) the rules'
    # sample size
    draft_tokens: float | None = None

    @property
    def judged_count(self) -> tuple[float, str] | None:
        """What the rules' ``--min-drafts`` gate counts, and its name: the window's drafts, or, on a page with draft
        tokens but no drafts counter (vLLM V1 before 0.8.5), its draft tokens; None without usable counts."""
        if self.drafts is not None:
            return self.drafts, "drafts"
        if self.draft_tokens is not None:
            return self.draft_tokens, "draft tokens"
        return None

    @property
    def batch(self) -> float | None:
        """The batch a step-time model prices: the busiest engine's running count, not the sum over engines."""
        return self.running_per_engine if self.running_per_engine is not None else self.running

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON-ready data (a non-finite number, which JSON cannot carry, becomes None)."""
        out: dict[str, Any] = json_safe({f.name: getattr(self, f.name) for f in fields(self)})
        return out


def spec_counters(scrape: Scrape) -> dict[SeriesKey, SpecDecodeCounters]:
    """The scrape's spec-decode counters, derived once per scrape."""
    key = "window:spec_decode"
    if key not in scrape.derived:
        scrape.derived[key] = spec_decode_counters(scrape)
    return cast("dict[SeriesKey, SpecDecodeCounters]", scrape.derived[key])


def _histogram(scrape: Scrape, name: str) -> HistogramSnapshot | None:
    key = "window:histogram:" + name
    if key not in scrape.derived:
        scrape.derived[key] = HistogramSnapshot.from_scrape(scrape, name)
    return cast("HistogramSnapshot | None", scrape.derived[key])


def _gauge_sum(scrape: Scrape, name: str) -> float | None:
    samples = scrape.named(name)
    return sum(s.value for s in samples) if samples else None


def _busiest_engine(scrape: Scrape, name: str) -> float | None:
    """The largest per-engine total of a gauge: its samples summed over the models an engine serves, per engine
    (its ``engine`` label and any other but ``model_name``: a page federating servers has one engine "0" per
    ``instance``, each its own batch); one engine: the sum."""
    per: dict[tuple[tuple[str, str], ...], float] = {}
    for x in scrape.named(name):
        engine = tuple(label for label in x.labels if label[0] != "model_name")
        per[engine] = per.get(engine, 0.0) + x.value
    return max(per.values()) if per else None


# The fewest seconds a restarted series is taken to have counted: vLLM dates _created when the server process starts,
# and loading a model takes longer than this before any token is counted, so a shorter span is the two hosts' clocks
# disagreeing (review s45d: +1.4 s of skew on a restart 1.5 s old read 15x high).
MIN_RESTART_SPAN_S = 5.0


def _created(scrape: Scrape, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """A counter's ``_created`` timestamp (unix seconds: when the series started counting) per series."""
    return {s.labels: s.value for s in scrape.named(name.removesuffix("_total") + "_created")}


def _increase(
    before: Scrape, after: Scrape, name: str, window_s: float = 0.0, after_at: float | None = None
) -> tuple[float | None, bool, float | None]:
    """A counter's increase over the window, series by series (a data-parallel server's engines, a page federating
    servers), whether a series restarted, and the per-second rate. A series restarted where it went back or where
    its ``_created`` changed (a restart whose new count has already passed the old one: review s45a); it counts from
    its restart, as Prometheus' ``increase()`` does, while the others count their own increase (a sum over series
    hid one server's restart behind the others' growth, or took it for the whole page's); a series new in
    ``after`` counts from 0. A restarted series' rate is over the time since its ``_created`` where the scrape's
    time ``after_at`` (unix seconds) says it is inside the window, else over the window (then it reads low, as
    Prometheus' ``rate()`` does). None without the counter on either side."""
    then = {s.labels: s.value for s in before.named(name)}
    now = {s.labels: s.value for s in after.named(name)}
    if not then or not now:
        return None, False, None
    born_then, born_now = _created(before, name), _created(after, name)
    total, rate, back = 0.0, 0.0, False
    for labels, value in now.items():
        start = then.get(labels, 0.0)
        reborn = labels in born_then and labels in born_now and born_now[labels] != born_then[labels]
        restarted = value < start or reborn
        back = back or restarted
        increase = value if restarted else value - start
        total += increase
        span = window_s
        if restarted and after_at is not None and labels in born_now and 0 < after_at - born_now[labels] < window_s:
            span = max(after_at - born_now[labels], min(window_s, MIN_RESTART_SPAN_S))
        rate += increase / span if span > 0 else 0.0
    return total, back, rate if window_s > 0 else None


NO_SPEC_NOTE = "no spec-decode counters on this server (speculation off?)"
NOT_VLLM_NOTE = "not a vLLM /metrics page (no vllm:* series at all): wrong port or path?"
RESTART_NOTE = (
    "the server restarted inside the window (counters went back or _created changed): counts start at the restart; "
    "per-second rates are over the time since it where _created dates it, else over the window (then they read low)"
)
IMPOSSIBLE_COUNTER = "impossible_counter"  # the fault kind (:mod:`specwise.monitor.vet` reports it per scrape)


def _went_back(name: str) -> tuple[str, str]:
    """The fault of a counter (or histogram) that went back while ``_created`` proves the server did not restart."""
    return IMPOSSIBLE_COUNTER, f"{name} went back with _created unchanged: not a restart"


def _by_model(
    before_c: dict[SeriesKey, SpecDecodeCounters],
    after_c: dict[SeriesKey, SpecDecodeCounters],
    models: tuple[str, ...],
) -> dict[str, dict[str, float | None]]:
    """Per model_name when the server labels more than one (a model with impossible counts: all None; on a vLLM
    page with no drafts counter, drafts and AL None and ``draft_tokens`` given)."""
    by_model: dict[str, dict[str, float | None]] = {}
    for model in models if len(models) > 1 else ():
        d = total_delta(
            {k: v for k, v in before_c.items() if k[0] == model}, {k: v for k, v in after_c.items() if k[0] == model}
        )
        if d is not None:
            ok = d.impossible is None
            by_model[model] = {
                "drafts": d.stats.drafts if ok and d.drafts_counted else None,
                "acceptance_rate": d.stats.acceptance_rate if ok else None,
                "mean_acceptance_length": d.stats.mean_acceptance_length if ok else None,
            }
            if not d.drafts_counted:
                by_model[model]["draft_tokens"] = d.stats.draft_tokens if ok else None
    return by_model


def _same_server(before_c: dict[SeriesKey, SpecDecodeCounters], after_c: dict[SeriesKey, SpecDecodeCounters]) -> bool:
    """Whether vLLM's ``_created`` timestamps prove both scrapes come from one server life (no restart between)."""
    return bool(after_c) and all(
        key in before_c and v.created is not None and before_c[key].created == v.created for key, v in after_c.items()
    )


def _latency(
    before: Scrape, after: Scrape, same_server: bool, notes: list[str], faults: list[tuple[str, str]]
) -> tuple[dict[str, dict[str, float | None]], bool]:
    """Quantiles per latency histogram over the window, and whether a histogram restarted."""
    latency: dict[str, dict[str, float | None]] = {}
    reset = False
    for key, name in LATENCY_HISTOGRAMS.items():
        h1, h0 = _histogram(after, name), _histogram(before, name)
        if h1 is None and name in OLDER_NAMES:
            name = OLDER_NAMES[name]
            h1, h0 = _histogram(after, name), _histogram(before, name)
            if h1 is not None and _histogram(after, VLLM.tpot) is None:
                notes.append(NO_TPOT_BEFORE_0_11)
        if h1 is None:
            continue
        h, restarted = h1.minus(h0) if h0 is not None else (h1, False)
        born_then, born_now = _created(before, name), _created(after, name)
        reborn = any(born_now[labels] != born_then[labels] for labels in born_now.keys() & born_then.keys())
        if h0 is not None and not restarted and reborn:  # a series on both pages started again (a series new to
            h, restarted = h1, True  # the page, or gone from it, is a server joining or leaving: no restart)
        if restarted and same_server:
            faults.append(_went_back(name))
            continue
        reset = reset or restarted
        quantiles: dict[str, float | None] = {}
        repaired = False
        for q, label in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            quantiles[label], fixed = histogram_quantile(q, h)
            repaired = repaired or fixed
        quantiles["count"] = h.count
        latency[key] = quantiles
        if repaired:
            notes.append(f"{name}: buckets were missing or inconsistent and were repaired")
    return latency, reset


def _rates(
    before: Scrape,
    after: Scrape,
    window_s: float,
    same_server: bool,
    faults: list[tuple[str, str]],
    after_at: float | None = None,
) -> tuple[dict[str, float | None], bool]:
    """Per-second rates of the token, request and preemption counters, and whether one restarted."""
    rates: dict[str, float | None] = {}
    reset = False
    for key, name in (
        ("generation", VLLM.generation_tokens),
        ("requests", VLLM.request_success),
        ("preemptions", VLLM.preemptions),
    ):
        _, went_back, rates[key] = _increase(before, after, name, window_s, after_at)
        if went_back and same_server:
            faults.append(_went_back(name))
            rates[key] = None
        reset = reset or (went_back and not same_server)
    return rates, reset


def _spec_span(
    before_c: dict[SeriesKey, SpecDecodeCounters],
    after_c: dict[SeriesKey, SpecDecodeCounters],
    window_s: float,
    after_at: float | None,
) -> float:
    """The seconds the spec-decode counts of a window with a restart were counted over: since the restart where
    every series restarted (a new ``_created``) and ``after_at`` puts it inside the window, else the window."""
    born = [v.created for key, v in after_c.items() if key in before_c and before_c[key].created != v.created]
    if after_at is None or not born or len(born) < len(after_c) or any(b is None for b in born):
        return window_s
    since = after_at - max(b for b in born if b is not None)
    return max(since, min(window_s, MIN_RESTART_SPAN_S)) if 0 < since < window_s else window_s


def window_stats(before: Scrape, after: Scrape, window_s: float, after_at: float | None = None) -> WindowStats:
    """Stats over the ``window_s`` seconds between two scrapes of the same server; ``after_at``: when the second
    was taken (unix seconds, vLLM's ``_created`` clock), which puts a restart inside the window in time. A restart is
    a new ``_created`` (or, without one, a counter going back); spec-decode counts no server can produce are an
    ``impossible_counter`` fault and the window's acceptance is left out (None), never shown as a number."""
    notes: list[str] = []
    faults: list[tuple[str, str]] = []
    before_c, after_c = spec_counters(before), spec_counters(after)
    models = tuple(sorted({key[0] for key in after_c}))
    same_server = _same_server(before_c, after_c)
    delta = total_delta(before_c, after_c)
    v0 = v0_acceptance_note(after)
    if v0 is not None:  # a V0 server's counters are no counts: said, never read (a V1 server beside it is)
        notes.append(v0)
    if delta is None and v0 is None:
        vllm = any(x.name.startswith("vllm:") for x in after.samples)
        notes.append(NO_SPEC_NOTE if vllm else NOT_VLLM_NOTE)
    elif delta is not None and delta.impossible is not None:
        faults.append((IMPOSSIBLE_COUNTER, f"{delta.impossible}: acceptance not computed for this window"))
    if delta is not None and not delta.drafts_counted:
        notes.append(NO_DRAFTS_NOTE)
    rates, rates_reset = _rates(before, after, window_s, same_server, faults, after_at)
    latency, latency_reset = _latency(before, after, same_server, notes, faults)
    reset = bool(delta and delta.reset) or rates_reset or latency_reset
    if reset:
        notes.append(RESTART_NOTE)
    stats = delta.stats if delta and delta.impossible is None else None
    counted = delta is not None and delta.drafts_counted
    spec_span = _spec_span(before_c, after_c, window_s, after_at) if delta and delta.reset else window_s
    return WindowStats(
        window_s=window_s,
        drafts=stats.drafts if stats and counted else None,
        acceptance_rate=stats.acceptance_rate if stats else None,
        mean_acceptance_length=stats.mean_acceptance_length if stats else None,
        per_position_acceptance=stats.per_position_rates if stats else (),
        draft_tokens_per_s=stats.draft_tokens / spec_span if stats and spec_span > 0 else None,
        accepted_tokens_per_s=stats.accepted_tokens / spec_span if stats and spec_span > 0 else None,
        generation_tokens_per_s=rates["generation"],
        requests_per_s=rates["requests"],
        running=_gauge_sum(after, VLLM.running),
        running_per_engine=_busiest_engine(after, VLLM.running),
        waiting=_gauge_sum(after, VLLM.waiting),
        kv_cache_usage=_busiest_engine(
            after, VLLM.kv_usage if after.named(VLLM.kv_usage) else VLLM.kv_usage_before_0_10
        ),
        preemptions_per_s=rates["preemptions"],
        latency=latency,
        counter_reset=reset,
        notes=tuple(notes),
        by_model=_by_model(before_c, after_c, models),
        faults=tuple(faults),
        model_names=models,
        draft_tokens=stats.draft_tokens if stats else None,
    )
