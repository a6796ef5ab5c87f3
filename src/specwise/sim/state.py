"""The simulation's mutable state: per-request progress arrays, the running/waiting queues, and the tallies the
result is made of. One object instead of a dozen loose arrays passed around.

Two representations of the running requests, one at a time (the engine switches by batch size):

* *vector* (large batches): ``running`` holds request ids and the per-request arrays are current for all of
  them; a step works on whole arrays (:mod:`specwise.sim.engine`, :mod:`specwise.sim.scheduler`).
* *scalar* (a handful of sequences): ``seqs`` holds one :class:`Seq` per running request, in the same admission
  order, with its progress as plain Python numbers (what :mod:`specwise.sim.scalar` steps without numpy); the
  arrays are current for every request that is not running.

:meth:`SimState.to_scalar` and :meth:`SimState.to_vector` move the running requests between them (O(batch)).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from specwise.sim.workload import RequestTable
from specwise.traffic import FloatArray, IntArray

FLUSH_SAMPLES = 1 << 16  # pending scalar inter-token samples are packed into arrays at least this often


class Seq:
    """One running request on the scalar path: ``computed`` tokens whose KV is cached, ``prefill_len`` tokens to
    prefill, ``generated`` tokens emitted, ``last_q`` tokens the draft must catch up on, ``last_emit`` when it last
    emitted, ``fresh`` while it has not emitted its first token."""

    __slots__ = (
        "cls",
        "computed",
        "fresh",
        "generated",
        "last_emit",
        "last_q",
        "out_len",
        "prefill_len",
        "prompt",
        "rid",
    )

    def __init__(self, st: SimState, rid: int) -> None:
        self.rid = rid
        self.cls = st.cls_list[rid]
        self.out_len = st.out_list[rid]
        self.prompt = st.prompt_list[rid]
        self.prefill_len: int = st.prefill_len.item(rid)
        self.computed: int = st.computed.item(rid)
        self.generated: int = st.generated.item(rid)
        self.last_q: int = st.last_q.item(rid)
        self.last_emit: float = st.last_emit.item(rid)
        self.fresh = math.isnan(st.first_token.item(rid))

    def store(self, st: SimState) -> None:
        """Write the progress back to the arrays (the request leaves the scalar path)."""
        r = self.rid
        st.prefill_len[r] = self.prefill_len
        st.computed[r] = self.computed
        st.generated[r] = self.generated
        st.last_q[r] = self.last_q
        st.last_emit[r] = self.last_emit


class ItlLog:
    """Token-normalised inter-token samples (a step emitting m tokens after a gap g gives m gaps of g/m), in the
    order they happen: one at a time into ``values``/``weights``/``classes`` (scalar steps) or as arrays
    (:meth:`add_arrays`). Classes are kept only when there are several (else every sample is class 0)."""

    def __init__(self, with_classes: bool) -> None:
        self.with_classes = with_classes
        self.values: list[float] = []
        self.weights: list[int] = []
        self.classes: list[int] = []
        self._chunks: list[tuple[FloatArray, IntArray | None, IntArray | None]] = []

    def add_arrays(self, values: FloatArray, weights: IntArray | None, classes: IntArray | None) -> None:
        """Samples as arrays (``weights`` None: all 1; ``classes`` None: all 0)."""
        self.flush()
        self._chunks.append((values, weights, classes))

    def flush(self) -> None:
        if self.values:
            classes = np.array(self.classes, dtype=np.int64) if self.with_classes else None
            self._chunks.append((np.array(self.values), np.array(self.weights, dtype=np.int64), classes))
            del self.values[:], self.weights[:], self.classes[:]

    def arrays(self) -> tuple[FloatArray, IntArray, IntArray]:
        self.flush()
        if not self._chunks:
            return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        values = np.concatenate([v for v, _, _ in self._chunks])
        weights = np.concatenate([w if w is not None else np.ones(v.size, dtype=np.int64) for v, w, _ in self._chunks])
        if not self.with_classes:
            return values, weights, np.zeros(values.size, dtype=np.int64)
        classes = np.concatenate([c if c is not None else np.zeros(v.size, dtype=np.int64) for v, _, c in self._chunks])
        return values, weights, classes


@dataclass
class Tally:
    """Counters over the run (vLLM's spec-decode counters, as the simulated server would report them).
    ``accepted_hist[a]``: sequence-steps that accepted a draft tokens (the per-position counters and the accepted
    total follow from it); arrays of counts given to :meth:`add_accepted` are counted into it lazily."""

    itl: ItlLog
    accepted_hist: list[int]
    steps: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    busy_s: float = field(default=0.0)
    peak_seqs: int = 0  # the largest step: sequences in it, tokens fed (batched), KV tokens read
    peak_batched_tokens: int = 0
    peak_kv_tokens: int = 0
    _pending: list[IntArray] = field(default_factory=list)
    _pending_size: int = 0

    def reach(self, seqs: int, batched_tokens: int, kv_tokens: int) -> None:
        """Record a step's size (the largest so far is kept: what a calibration's range is checked against)."""
        if seqs > self.peak_seqs:
            self.peak_seqs = seqs
        if batched_tokens > self.peak_batched_tokens:
            self.peak_batched_tokens = batched_tokens
        if kv_tokens > self.peak_kv_tokens:
            self.peak_kv_tokens = kv_tokens

    @property
    def accepted(self) -> int:
        self._count_pending()
        return sum(a * n for a, n in enumerate(self.accepted_hist))

    def per_position(self, width: int) -> IntArray:
        """Sequence-steps that accepted position i (1-based i = 1..width): those that accepted at least i."""
        self._count_pending()
        hist = self.accepted_hist
        return np.array([sum(hist[i + 1 :]) for i in range(width)], dtype=np.int64)

    def add_accepted(self, counts: IntArray) -> None:
        """Accepted counts of many sequence-steps at once."""
        self._pending.append(counts)
        self._pending_size += counts.size
        if self._pending_size > FLUSH_SAMPLES * 16:
            self._count_pending()

    def _count_pending(self) -> None:
        if not self._pending:
            return
        flat = np.concatenate([c.ravel() for c in self._pending])
        for a, n in enumerate(np.bincount(flat, minlength=len(self.accepted_hist)).tolist()):
            self.accepted_hist[a] += n
        self._pending.clear()
        self._pending_size = 0


class SimState:
    """Where every request stands. ``computed``: tokens whose KV is cached; ``prefill_len``: tokens to prefill
    (the prompt, or prompt + output so far after a preemption, recomputed); ``last_q``: tokens the draft must
    catch up on (the last step's accepted + bonus)."""

    def __init__(self, requests: RequestTable, max_k: int, with_classes: bool) -> None:
        n = requests.size
        self.requests = requests
        self.size = n  # requests in the run
        self.arrival: FloatArray = requests.arrival_s.astype(np.float64, copy=True)
        self.prompt = requests.prompt_tokens
        self.next_to_assign = n  # closed loop: the next request whose arrival is a finish
        if requests.users is not None:
            self.arrival[requests.users :] = np.inf
            self.next_to_assign = requests.users
        self.arrival_list: list[float] = self.arrival.tolist()
        self.out_len, self.cls = requests.output_tokens, requests.class_index
        self.cls_list: list[int] = self.cls.tolist()
        self.out_list: list[int] = self.out_len.tolist()
        self.prompt_list: list[int] = self.prompt.tolist()
        self.prefill_len: IntArray = self.prompt.astype(np.int64, copy=True)
        self.computed: IntArray = np.zeros(n, dtype=np.int64)
        self.generated: IntArray = np.zeros(n, dtype=np.int64)
        self.last_q: IntArray = np.ones(n, dtype=np.int64)
        self.first_token: FloatArray = np.full(n, np.nan)
        self.finish: FloatArray = np.full(n, np.nan)
        self.last_emit: FloatArray = np.zeros(n)
        self.preempt: IntArray = np.zeros(n, dtype=np.int64)
        self.running: list[int] = []
        self.seqs: list[Seq] = []
        self.scalar = True
        self.waiting: deque[int] = deque()
        self.next_arrival = 0
        self.done = 0
        self.now = 0.0
        self.last_step_s = 0.0
        self.tally = Tally(ItlLog(with_classes), [0] * (max(0, max_k) + 1))

    def admit_arrivals(self) -> None:
        """Requests whose arrival time has come join the waiting queue, in arrival order."""
        nxt, n, arrival, now = self.next_arrival, self.size, self.arrival_list, self.now
        while nxt < n and arrival[nxt] <= now:
            self.waiting.append(nxt)
            nxt += 1
        self.next_arrival = nxt

    def next_arrival_s(self) -> float:
        return self.arrival_list[self.next_arrival] if self.next_arrival < self.size else math.inf

    def elapse(self, seconds: float) -> None:
        self.now += seconds
        self.tally.busy_s += seconds
        self.last_step_s = seconds

    def arrive_after_finishes(self, finished: int) -> None:
        """Closed loop: each finished request sends the next one now."""
        for _ in range(min(finished, self.size - self.next_to_assign)):
            self.arrival[self.next_to_assign] = self.now
            self.arrival_list[self.next_to_assign] = self.now
            self.next_to_assign += 1

    # -- switching representation ------------------------------------------------------------------------------

    def to_scalar(self) -> None:
        self.seqs[:] = [Seq(self, r) for r in self.running]
        self.running = []
        self.scalar = True

    def to_vector(self) -> None:
        for s in self.seqs:
            s.store(self)
        self.running = [s.rid for s in self.seqs]
        del self.seqs[:]
        self.scalar = False

    # -- the vector path ---------------------------------------------------------------------------------------

    def decoding(self) -> tuple[IntArray, list[int]]:
        """Running requests that finished prefill, in admission order, and those still prefilling."""
        run = np.array(self.running, dtype=np.int64)
        if not run.size:
            return run, []
        done = self.computed[run] >= self.prefill_len[run]
        if done.all():
            return run, []
        return run[done], run[~done].tolist()

    def emit(self, ids: IntArray, emitted: IntArray) -> None:
        """Decoding sequences ``ids`` each emitted ``emitted`` tokens at ``now``."""
        self.tally.itl.add_arrays(
            (self.now - self.last_emit[ids]) / emitted, emitted, self.cls[ids] if self.tally.itl.with_classes else None
        )
        self.generated[ids] += emitted
        self.computed[ids] += emitted
        self.last_q[ids] = emitted
        self.last_emit[ids] = self.now

    def finish_prefill(self, ids: IntArray) -> None:
        """Requests whose prefill completed at ``now`` emit their first token (or, after a preemption's
        recompute, their next one: one more inter-token sample)."""
        fresh = np.isnan(self.first_token[ids])
        self.first_token[ids[fresh]] = self.now
        resumed = ids[~fresh]
        if resumed.size:
            itl = self.tally.itl
            gaps = self.now - self.last_emit[resumed]
            itl.add_arrays(gaps, np.ones(resumed.size, dtype=np.int64), self.cls[resumed] if itl.with_classes else None)
        self.generated[ids] += 1
        self.last_emit[ids] = self.now
        self.last_q[ids] = 1

    def retire(self, touched: IntArray) -> None:
        """Requests among ``touched`` that produced all their tokens leave the engine."""
        ended = touched[self.generated[touched] >= self.out_len[touched]]
        if ended.size:
            self.finish[ended] = self.now
            self.done += int(ended.size)
            gone = set(ended.tolist())
            self.running = [r for r in self.running if r not in gone]
            self.arrive_after_finishes(int(ended.size))
