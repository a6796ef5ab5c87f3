"""A bench run: levels of request rates, each scheduled by an arrival process, /metrics scraped before
and after each level, every record committed (in batches, off the event loop: :class:`RecordWriter`) as it
completes, resumable after a crash.

Scheduling: every pending request of a level gets its due time from the arrival process up front and sleeps until
then on the event loop; ``scheduled_s`` is that due time, ``start_s`` when the request was really sent (their
difference is the harness's scheduling lag, which bench/client_overhead.py measures)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import numpy as np

from specwise.acceptance.counts import acceptance_rate
from specwise.contracts.bench import BenchDoc, BenchLevel, SpecDecodeReading
from specwise.errors import SpecwiseError, redact_text, redact_url
from specwise.loadgen.client import ClientConfig, HttpSession, RequestSpec, send_request
from specwise.loadgen.fleet import (
    MANY_SERVERS,
    LevelReading,
    born_elsewhere,
    pooled_level,
    reaches_many_servers,
    restart_note,
)
from specwise.loadgen.records import RequestRecord, every_request, summarize_level
from specwise.loadgen.store import RecordWriter, ResultStore
from specwise.metrics import parse_exposition, spec_decode_counters
from specwise.metrics.engines import llamacpp_acceptance, non_finite_spec_sample, sglang_acceptance
from specwise.metrics.exposition import NON_FINITE
from specwise.metrics.spec_decode import (
    NO_DRAFTS_NOTE,
    SeriesKey,
    SpecDecodeCounters,
    total_delta,
    v0_acceptance_note,
)
from specwise.traffic import Arrivals

Progress = Callable[[int, int, int, float | None], None]  # level, done, total, live acceptance rate


@dataclass(frozen=True)
class LevelPlan:
    """One level: requests arrive at ``rate_per_s`` (by the plan's arrival process), or, with
    ``concurrency``, exactly that many are kept in flight (closed loop; the rate is what results)."""

    level: int
    rate_per_s: float | None
    requests: tuple[RequestSpec, ...]
    concurrency: int | None = None


@dataclass(frozen=True)
class BenchPlan:
    client: ClientConfig
    levels: tuple[LevelPlan, ...]
    arrivals: Arrivals
    seed: int = 0
    max_concurrency: int = 256
    metrics_url: str | None = None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    metrics_urls: tuple[str, ...] = ()  # a fleet: one /metrics per replica (``metrics_url`` is then ignored)

    @property
    def scrape_urls(self) -> tuple[str, ...]:
        """Every /metrics to scrape: one per replica, or the one server's."""
        if self.metrics_urls:
            return self.metrics_urls
        return () if self.metrics_url is None else (self.metrics_url,)


_SCRAPE_ERRORS = (aiohttp.ClientError, TimeoutError, OSError, SpecwiseError)


async def scrape_metrics(client: HttpSession, url: str) -> str:
    return await client.get_text(url, 10.0)


async def _scrape_one(
    client: HttpSession,
    url: str,
    store: ResultStore,
    key: tuple[str, int, str, int],
    errors: list[str],
    replaces: bool = False,
) -> bool:
    """Scrape and keep one replica's /metrics; False when nothing listens there (a refused connection). ``replaces``:
    the scrape replaces an earlier process's, which a failed one drops (no counts then, rather than counts from
    the earlier process's time)."""
    run_id, level, phase, replica = key
    where = f"{phase} scrape" if replica == 0 else f"replica {replica} ({redact_url(url)}) {phase} scrape"
    try:
        scraped_at = time.time()
        text = await scrape_metrics(client, url)
        store.save_scrape(run_id, level, phase, text, replica)
        if phase == "before":  # a second look a moment later: one URL reaching several servers shows here
            probe = await scrape_metrics(client, url)
            if born_elsewhere(text, probe, scraped_at):
                store.save_scrape(run_id, level, "probe", probe, replica)
    except _SCRAPE_ERRORS as exc:
        errors.append(f"{where} failed: {redact_text(str(exc)) or type(exc).__name__}")  # aiohttp's name the URL
        if replaces:
            store.drop_scrape(run_id, level, phase, replica)
        return not isinstance(exc, aiohttp.ClientConnectorError)
    return True


async def _scrape_into(
    client: HttpSession,
    plan: BenchPlan,
    store: ResultStore,
    run_id: str,
    level: int,
    phase: str,
    errors: list[str],
    fresh: bool = False,
) -> bool:
    """Scrape every replica's /metrics at once (a ``before`` already stored is kept unless ``fresh``: a level an
    earlier process sent part of is read from now, :func:`_resumed_counts_note`); False when one of them refused
    the connection."""
    jobs = [
        _scrape_one(client, url, store, (run_id, level, phase, i), errors, replaces=fresh)
        for i, url in enumerate(plan.scrape_urls)
        if phase != "before" or fresh or store.scrape(run_id, level, phase, i) is None
    ]
    return all(await _together(jobs))  # one failing otherwise leaves the others running past the session


def _resumed_counts_note(level: int, pending: int, total: int) -> str:
    """A level resumed: its counters are read from this process's own ``before`` scrape. The earlier process's part
    has no ``after`` (it was interrupted), and counting from its ``before`` would take in the requests it lost in
    flight and whatever else the server did in between (review s45a)."""
    return (
        f"level {level} was resumed: its spec-decode counts are those of the {pending} of its {total} requests this "
        "process sent (read from its own before-scrape); the earlier process's part was never read after"
    )


class ServerUnreachable(SpecwiseError):
    """The run's first requests could not connect (nothing listens at the URL, no such host): the run stopped
    before sending the rest, and those requests' records were dropped (``--resume`` sends them)."""

    def __init__(self, url: str, failed: int, unsent: int, detail: str) -> None:
        self.url, self.failed, self.unsent, self.detail = url, failed, unsent, detail
        super().__init__(self.text("check the URL and that the server is up"))

    def text(self, hint: str) -> str:
        return (
            f"{every_request(self.failed)} failed ({self.failed} connection: {self.detail}); stopped before sending "
            f"the other {self.unsent}; {hint}"
        )


class _ConnectGate:
    """Until one request of this process gets an answer (any answer: even an HTTP error says a server is there),
    count the requests that could not connect; at ``limit`` (1 when the level's first /metrics scrape could not
    connect either) stop the run: a closed port would otherwise cost the whole schedule before saying so. After an
    answer, :data:`LOST_AFTER` refused connections with no answer between them say the server went away mid-run
    (crashed, killed for memory): the run stops there too, instead of spending every request left on a closed port
    and recording them as failures that ``--resume`` would never send again (review s45a)."""

    def __init__(self) -> None:
        self.answered = False
        self.failed: list[str] = []  # refused before any answer
        self.lost: list[str] = []  # refused since the last answer, after one
        self.detail = ""
        self.limit = 3

    def observe(self, record: RequestRecord) -> None:
        refused = not record.ok and (record.error or "").startswith(_REFUSED)
        if not refused:
            # a server answered: a success or an HTTP error; a stream cut after its 200 says nothing of now (a
            # crash cuts every stream in flight just before the refusals begin: review s45d)
            if record.ok or (record.status_code or 0) >= 400:
                self.answered = True
                self.lost.clear()
            return
        if not self.detail:
            detail = (record.error or "").removeprefix("connection: ").replace(" ssl:default", "")
            self.detail = redact_text(detail)
        if self.answered:
            self.lost.append(record.request_id)
            if len(self.lost) >= LOST_AFTER:
                raise _ServerGone
            return
        self.failed.append(record.request_id)
        if len(self.failed) >= self.limit:
            raise _GateClosed


LOST_AFTER = 3  # refused connections in a row, after the server had answered: it is gone


class _GateClosed(Exception):
    """Raised by the request that reached :class:`_ConnectGate`'s limit; the level stops sending."""


class _ServerGone(Exception):
    """Raised by the request that made :data:`LOST_AFTER` refused connections in a row after an answer."""


class ServerLost(SpecwiseError):
    """The server stopped accepting connections mid-run: the run stopped; the refused requests' records were
    dropped, so ``--resume`` sends them with the rest."""

    def __init__(self, url: str, level: int, refused: int, detail: str) -> None:
        self.url, self.level, self.refused, self.detail = url, level, refused, detail
        super().__init__(
            f"{url} stopped accepting connections during level {level} ({refused} requests in a row refused: "
            f"{detail}); the run stopped there, and what was measured before is kept"
        )


_REFUSED = "connection: ClientConnector"  # aiohttp.ClientConnectorError and its subclasses: no connection made


def level_spec_decode(
    store: ResultStore, run_id: str, level: int, errors: list[str], replica: int = 0
) -> tuple[SpecDecodeReading | None, bool]:
    """One server's spec-decode counter deltas over the level (summed over engines); reset flagged, never
    negative. A NaN or infinite spec-decode sample in either scrape (``non_finite_sample``, as ``monitor`` says)
    gives no reading; a page with no drafts counter (vLLM V1 before 0.8.5) gives the acceptance rate only; a vLLM V0
    page gives none (its counters add lifetime totals; the note says its acceptance since start). Each is said in
    ``errors``."""
    before_text = store.scrape(run_id, level, "before", replica)
    after_text = store.scrape(run_id, level, "after", replica)
    if before_text is None or after_text is None:
        return None, False
    try:
        before_scrape = parse_exposition(before_text, "metrics before")
        after_scrape = parse_exposition(after_text, "metrics after")
    except SpecwiseError as exc:
        errors.append(str(exc))
        return None, False
    for phase, scrape in (("before", before_scrape), ("after", after_scrape)):
        if (bad := non_finite_spec_sample(scrape)) is not None:  # NaN/Inf: no number to compute with
            errors.append(
                f"{NON_FINITE}: {bad.where} = {bad.value} in the {phase} scrape: acceptance not computed for this level"
            )
            return None, False
    delta = total_delta(spec_decode_counters(before_scrape), spec_decode_counters(after_scrape))
    if delta is not None and delta.impossible:  # counts no server can produce: reported, never averaged in
        errors.append(f"spec-decode counters unusable: {delta.impossible}")
        return None, False
    if (v0 := v0_acceptance_note(after_scrape)) is not None:  # a V0 server's counters are no counts: said
        errors.append(v0)
        if delta is None:
            return None, False
    if delta is not None and not delta.drafts_counted:  # no drafts counter (vLLM V1 before 0.8.5): the rate only
        errors.append(NO_DRAFTS_NOTE)
        tokens = delta.stats
        reading = SpecDecodeReading(
            "vllm",
            acceptance_rate=tokens.acceptance_rate,
            draft_tokens=tokens.draft_tokens,
            accepted_tokens=tokens.accepted_tokens,
        )
        return reading, delta.reset
    if delta is not None:
        return SpecDecodeReading("vllm", delta.stats), delta.reset
    llama = llamacpp_acceptance(before_scrape, after_scrape)
    if llama is not None:
        return llama
    return sglang_acceptance(after_scrape), False


def _replica_spec_decode(
    store: ResultStore, run_id: str, level: int, url: str, replica: int, errors: list[str]
) -> tuple[SpecDecodeReading | None, bool]:
    scrapes = (store.scrape(run_id, level, phase, replica) for phase in ("before", "probe", "after"))
    if reaches_many_servers(*scrapes):
        errors.append(MANY_SERVERS.format(url=redact_url(url)))
        return None, False  # two servers' counters subtracted from each other measure nothing
    return level_spec_decode(store, run_id, level, errors, replica)


def level_reading(
    store: ResultStore, run_id: str, level: int, urls: tuple[str, ...], errors: list[str]
) -> LevelReading:
    """The level's speculation over every replica: each one's deltas, pooled (see :mod:`specwise.loadgen.fleet`)."""
    per_replica = [_replica_spec_decode(store, run_id, level, url, i, errors) for i, url in enumerate(urls)]
    reading = pooled_level(urls, per_replica)
    errors.extend(restart_note(reading, urls))
    missing = [
        f"replica {i} ({redact_url(url)})"
        for i, (url, (r, _)) in enumerate(zip(urls, per_replica, strict=True))
        if r is None
    ]
    if reading.spec_decode is not None and missing:  # a pool of some replicas is said as such (review s47c F8)
        pooled = f"acceptance pooled over {len(urls) - len(missing)} of {len(urls)} replicas"
        errors.append(f"{pooled}: {', '.join(missing)} gave no reading (said above)")
    return reading


async def run_plan(
    plan: BenchPlan,
    store: ResultStore,
    run_id: str,
    *,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    live_interval_s: float = 2.0,
) -> list[BenchLevel]:
    """Run (or finish) every level; requests already in the store for ``run_id`` are not sent again."""
    done = store.done_ids(run_id)
    results: list[BenchLevel] = []
    # As vllm bench serve does: what exists now (the plan, its requests) moves out of the collector's way, so a
    # full collection in the middle of a level does not walk it and stall the scheduler.
    gc.collect()
    gc.freeze()
    try:
        return await _run_levels(plan, store, run_id, done, results, progress, clock, sleep, live_interval_s)
    finally:
        gc.unfreeze()


async def _run_levels(
    plan: BenchPlan,
    store: ResultStore,
    run_id: str,
    done: set[str],
    results: list[BenchLevel],
    progress: Progress | None,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    live_interval_s: float,
) -> list[BenchLevel]:
    gate = _ConnectGate()
    to_send = sum(1 for lp in plan.levels for r in lp.requests if r.request_id not in done)
    async with HttpSession(plan.client, plan.max_concurrency) as client:
        for lp in plan.levels:
            errors: list[str] = []
            pending = [r for r in lp.requests if r.request_id not in done]
            offsets = schedule_offsets(plan, lp) if lp.concurrency is None else None  # sent to, and summarised on
            if pending:
                # an earlier process took this level's before-scrape (and may have sent part of it): read afresh
                replicas = range(len(plan.scrape_urls))
                stale = any(store.scrape(run_id, lp.level, "before", i) is not None for i in replicas)
                if len(pending) < len(lp.requests):
                    errors.append(_resumed_counts_note(lp.level, len(pending), len(lp.requests)))
                if not await _scrape_into(client, plan, store, run_id, lp.level, "before", errors, fresh=stale):
                    gate.limit = 1  # /metrics refused the connection too: one refused request is enough
                befores = [store.scrape(run_id, lp.level, "before", i) for i in replicas]
                live = _LiveAcceptance(client, plan.scrape_urls, befores, live_interval_s)
                try:
                    async with _Polling(live if progress is not None else None):
                        await _run_level(
                            client, plan, lp, pending, store, run_id, progress, clock, sleep, live, gate, offsets
                        )
                except _GateClosed:
                    store.discard(run_id, gate.failed)  # never reached a server: --resume sends them
                    url = redact_url(plan.client.base_url)
                    raise ServerUnreachable(url, len(gate.failed), to_send - len(gate.failed), gate.detail) from None
                except _ServerGone:
                    store.discard(run_id, gate.lost)  # likewise
                    raise ServerLost(redact_url(plan.client.base_url), lp.level, len(gate.lost), gate.detail) from None
                await _scrape_into(client, plan, store, run_id, lp.level, "after", errors)
            records = store.records(run_id, lp.level)
            summary = summarize_level(records, lp.level, lp.rate_per_s, plan.slo_ttft_s, plan.slo_tpot_s, offsets)
            r = level_reading(store, run_id, lp.level, plan.scrape_urls, errors)
            results.append(
                BenchLevel(summary, r.spec_decode, r.counter_reset, tuple(errors), lp.concurrency, r.replicas)
            )
    return results


class _LiveAcceptance:
    """Acceptance rate since the level started, summed over the replicas, from a /metrics scrape of each every
    ``interval_s`` (for the progress bar only; the reported figures come from the before/after scrapes)."""

    def __init__(
        self, client: HttpSession, urls: tuple[str, ...], befores: list[str | None], interval_s: float = 2.0
    ) -> None:
        self.client, self.urls, self.interval_s = client, urls, interval_s
        self.rate: float | None = None
        self.before = [_counters(text) for text in befores]

    async def poll(self) -> None:
        if not self.urls or any(b is None for b in self.before):
            return
        while True:
            await asyncio.sleep(self.interval_s)
            texts = await asyncio.gather(*(_scrape_or_none(self.client, url) for url in self.urls))
            self.rate = self._rate([_counters(t) for t in texts])

    def _rate(self, now: list[dict[SeriesKey, SpecDecodeCounters] | None]) -> float | None:
        accepted = draft_tokens = 0.0
        for before, after in zip(self.before, now, strict=True):
            delta = total_delta(before, after) if before is not None and after is not None else None
            if delta is None or delta.reset or delta.impossible:
                return self.rate  # a replica unreadable, restarted or impossible: keep the last rate
            accepted, draft_tokens = accepted + delta.stats.accepted_tokens, draft_tokens + delta.stats.draft_tokens
        rate = acceptance_rate(accepted, draft_tokens)
        return rate if rate is not None and math.isfinite(rate) else self.rate  # a NaN sample: keep the last


class _Polling:
    """``live`` polled on a task of its own while inside (for the progress bar; None: not polled). On the way out the
    poller is cancelled and awaited, so it is not in the middle of a scrape when the session closes -- only
    cancelled when the run's coroutine is closed unfinished (its loop gone: nothing may be awaited then)."""

    def __init__(self, live: _LiveAcceptance | None) -> None:
        self.live = live
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> None:
        if self.live is not None:
            self.task = asyncio.create_task(self.live.poll())

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self.task is None:
            return
        self.task.cancel()
        if exc_type is not GeneratorExit:
            await asyncio.gather(self.task, return_exceptions=True)


def _counters(text: str | None) -> dict[SeriesKey, SpecDecodeCounters] | None:
    if text is None:
        return None
    try:
        return spec_decode_counters(parse_exposition(text))
    except SpecwiseError:
        return None


async def _scrape_or_none(client: HttpSession, url: str) -> str | None:
    try:
        return await scrape_metrics(client, url)
    except _SCRAPE_ERRORS:
        return None


class _Interrupt:
    """A KeyboardInterrupt or SystemExit raised by the progress callback (Ctrl-C landing there), raised by the run
    itself once the level has stopped. The callback runs as a bare callback on the event loop (the writer's thread
    hands it each commit), so what it raises would leave the loop at once, past every clean-up of the run: the
    requests in flight, the poller and the session were left to asyncio.run's shutdown, which the next commit's
    callback raising again cut short -- the loop closed with requests suspended in aiohttp, collected much later as
    "Exception ignored in: <coroutine object _schedule.<locals>.one>" ... "Event loop is closed". Caught here, it
    cancels the sending (each request cancelled and awaited) and is raised from :func:`_run_level` after the records
    are flushed; the callback is not called again."""

    def __init__(self) -> None:
        self.caught: KeyboardInterrupt | SystemExit | None = None
        self._sending: asyncio.Task[Any] | None = None

    def call(self, progress: Progress, *args: Any) -> None:
        if self.caught is not None:
            return  # stopping: nothing more to show
        try:
            progress(*args)
        except (KeyboardInterrupt, SystemExit) as exc:  # what a loop's callback lets through (the rest is logged)
            self.caught = exc
            if self._sending is not None:
                self._sending.cancel()

    @contextlib.contextmanager
    def cancels_this_task(self) -> Iterator[None]:
        """While inside, an interrupt cancels the current task (awaiting the sending); the cancellation leaves as the
        interrupt."""
        self._sending = asyncio.current_task()
        try:
            yield
        except asyncio.CancelledError:
            if self.caught is not None and self._sending is not None:
                self._sending.uncancel()  # ours, not the caller's: the interrupt replaces it
            self.raise_caught()
            raise
        finally:
            self._sending = None

    def raise_caught(self) -> None:
        if self.caught is not None:
            raise self.caught from None


async def _run_level(
    client: HttpSession,
    plan: BenchPlan,
    lp: LevelPlan,
    pending: list[RequestSpec],
    store: ResultStore,
    run_id: str,
    progress: Progress | None,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    live: _LiveAcceptance | None = None,
    gate: _ConnectGate | None = None,
    offsets: Mapping[str, float] | None = None,
) -> None:
    total = len(lp.requests)
    completed = [total - len(pending)]
    loop = asyncio.get_running_loop()
    interrupt = _Interrupt()

    def committed(n: int) -> None:  # on the event loop: these records are on disk now
        completed[0] += n
        if progress is not None:
            interrupt.call(progress, lp.level, completed[0], total, live.rate if live else None)

    def on_commit(n: int) -> None:  # on the writer's thread
        if not loop.is_closed():  # a loop gone (its run abandoned): the records are on disk, nobody to tell
            with contextlib.suppress(RuntimeError):  # closed between the check and the call
                loop.call_soon_threadsafe(committed, n)

    writer = RecordWriter(store.path, on_commit)

    async def send(spec: RequestSpec, scheduled: float) -> None:
        writer.check()  # records that cannot be kept are not worth sending
        record = await send_request(
            client, plan.client, spec, run_id=run_id, level=lp.level, scheduled_s=scheduled, clock=clock
        )
        writer.add(record)  # committed by the writer's thread; counted as done once it is
        if gate is not None:
            gate.observe(record)

    closed = False
    try:
        with interrupt.cancels_this_task():
            await _schedule(plan, lp, pending, send, clock, sleep, offsets)
    except GeneratorExit:  # the coroutine closed unfinished (its loop abandoned): no awaiting here, and no
        closed = True  # writer.close() on whatever loop runs now (it would wait there on this writer)
        writer.stop()
        raise
    finally:
        if not closed:
            await asyncio.to_thread(writer.close)
    interrupt.raise_caught()  # one that came with the last records' commit, after the sending


def schedule_offsets(plan: BenchPlan, lp: LevelPlan) -> dict[str, float]:
    """An open-loop level's arrival schedule: each request's due time (s) from the level's start, the same in every
    process that sends part of it (its draws are seeded by the plan's seed and the level)."""
    if lp.rate_per_s is None:
        raise SpecwiseError(f"level {lp.level}: needs a rate or a concurrency")
    rng = np.random.default_rng([plan.seed, lp.level])
    offsets = plan.arrivals.with_rate(lp.rate_per_s).times(rng, len(lp.requests))
    return {r.request_id: float(offsets[i]) for i, r in enumerate(lp.requests)}


async def _schedule(
    plan: BenchPlan,
    lp: LevelPlan,
    pending: list[RequestSpec],
    send: Callable[[RequestSpec, float], Awaitable[None]],
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    offsets: Mapping[str, float] | None = None,
) -> None:
    """Send ``pending``: a closed loop keeps ``lp.concurrency`` in flight; an open loop sends each request when
    ``offsets`` (:func:`schedule_offsets`, computed here when not given) says it is due."""
    if lp.concurrency is not None:  # closed loop: keep exactly this many in flight
        queue = list(reversed(pending))

        async def worker() -> None:
            while queue:
                await send(queue.pop(), clock())

        await _together([worker() for _ in range(min(lp.concurrency, len(pending)))])
        return
    by_id = offsets if offsets is not None else schedule_offsets(plan, lp)
    first_offset = min(by_id[r.request_id] for r in pending)
    semaphore = asyncio.Semaphore(plan.max_concurrency)
    start = clock()

    async def one(spec: RequestSpec) -> None:
        due = by_id[spec.request_id] - first_offset
        delay = start + due - clock()
        if delay > 0:
            await sleep(delay)
        async with semaphore:
            await send(spec, start + due)

    await _together([one(s) for s in pending])


_T = TypeVar("_T")


async def _together(coros: Sequence[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run them all and return their results; the first exception (or a cancellation) cancels the others (the run
    stops sending) and, once every one has finished, is raised: none is left running past the caller's clean-up
    (the session's close, the loop's). A coroutine never scheduled (scheduling failed) is closed, not left to warn."""
    tasks: list[asyncio.Future[_T]] = []
    try:
        for c in coros:
            tasks.append(asyncio.ensure_future(c))
        return await asyncio.gather(*tasks)
    except GeneratorExit:  # closed unfinished (its loop gone): awaiting here would be ignoring it
        for t in tasks:
            t.cancel()
        raise
    except BaseException:
        for c in coros[len(tasks) :]:
            c.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


HELD_BACK_SHARE = 0.9  # a level sent at under 90% of its schedule's rate is not the rate its row names


def held_back_notes(store: ResultStore, doc: BenchDoc) -> list[str]:
    """One note per open-loop level that fell short of its target rate (under 90%) because its requests went out
    slower than their schedule (the arrival process at the target rate) asked: the client held them back, so the
    row's rate is not the load the server saw. (A level of a few requests falls short by its last requests'
    latency alone; sent on schedule, it gets no note.) The cause is named: ``--max-concurrency`` when that many
    requests were in flight at once, else the client itself."""
    runs = [(f"{c.name}: ", c.run_id, c.levels) for c in doc.configs] or [("", doc.run_id, doc.levels)]
    notes: list[str] = []
    for prefix, run_id, levels in runs:
        cap = int(store.run_config(run_id).get("max_concurrency", 256))
        for lv in levels:
            target = lv.summary.target_rate_per_s
            if target is None or lv.concurrency is not None:
                continue
            if lv.summary.request_rate_per_s >= HELD_BACK_SHARE * target:
                continue  # reached: the records are read only for a level that fell short
            rates = send_rates(store.records(run_id, lv.summary.level))
            if rates is None or not rates[0] < HELD_BACK_SHARE * rates[1]:
                continue
            sent, asked, peak = rates
            why = (
                f"at most --max-concurrency {cap} requests are in flight, so the others waited; raise it for this rate"
                if peak >= cap
                else "the client could not send them faster"
            )
            notes.append(
                f"note: {prefix}at {target:g} rps the requests went out at {sent:.3g} rps (their schedule asked "
                f"{asked:.3g}): {why}; the row's latencies are at the rate achieved"
            )
    return notes


def send_rates(records: list[RequestRecord]) -> tuple[float, float, int] | None:
    """(requests sent per second, requests per second their schedule asked, most requests in flight at once) over
    each bench process's own records (a resumed level's processes apart); None under two requests a process."""
    sessions: dict[str, list[RequestRecord]] = {}
    for r in records:
        sessions.setdefault(r.session, []).append(r)
    gaps = sent_s = asked_s = 0.0
    peak = 0
    for group in sessions.values():
        if len(group) < 2:
            continue
        gaps += len(group) - 1
        sent_s += max(r.start_s for r in group) - min(r.start_s for r in group)
        asked_s += max(r.scheduled_s for r in group) - min(r.scheduled_s for r in group)
        events = sorted([(r.start_s, 1) for r in group] + [(r.end_s, -1) for r in group])
        running = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
    if not gaps or not sent_s > 0:
        return None
    return gaps / sent_s, (gaps / asked_s if asked_s > 0 else float("inf")), peak
