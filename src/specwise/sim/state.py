"""The simulation's mutable state: per-request progress arrays, the running/waiting queues, and the tallies the
result is made of. One object instead of a dozen loose arrays passed around."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from specwise.sim.workload import RequestTable
from specwise.traffic import FloatArray, IntArray


@dataclass
class Tally:
    """Counters over the run (vLLM's spec-decode counters, as the simulated server would report them)."""

    steps: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    busy_s: float = 0.0
    per_position: IntArray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    itl_s: list[FloatArray] = field(default_factory=list)
    itl_w: list[IntArray] = field(default_factory=list)
    itl_c: list[IntArray] = field(default_factory=list)

    def inter_token(self, gaps_s: FloatArray, emitted: IntArray, classes: IntArray) -> None:
        """Token-normalised inter-token latency: a step emitting m tokens after a gap g gives m gaps of g/m."""
        self.itl_s.append(gaps_s / emitted)
        self.itl_w.append(emitted)
        self.itl_c.append(classes)


class SimState:
    """Where every request stands. ``computed``: tokens whose KV is cached; ``prefill_len``: tokens to prefill
    (the prompt, or prompt + output so far after a preemption, recomputed); ``last_q``: tokens the draft must
    catch up on (the last step's accepted + bonus)."""

    def __init__(self, requests: RequestTable, max_k: int) -> None:
        n = requests.size
        self.requests = requests
        self.arrival: FloatArray = requests.arrival_s.astype(np.float64, copy=True)
        self.prompt = requests.prompt_tokens
        self.next_to_assign = n  # closed loop: the next request whose arrival is a finish
        if requests.users is not None:
            self.arrival[requests.users :] = np.inf
            self.next_to_assign = requests.users
        self.out_len, self.cls = requests.output_tokens, requests.class_index
        self.prefill_len: IntArray = self.prompt.copy()
        self.computed: IntArray = np.zeros(n, dtype=np.int64)
        self.generated: IntArray = np.zeros(n, dtype=np.int64)
        self.last_q: IntArray = np.ones(n, dtype=np.int64)
        self.first_token: FloatArray = np.full(n, np.nan)
        self.finish: FloatArray = np.full(n, np.nan)
        self.last_emit: FloatArray = np.zeros(n)
        self.preempt: IntArray = np.zeros(n, dtype=np.int64)
        self.running: list[int] = []
        self.waiting: deque[int] = deque()
        self.next_arrival = 0
        self.done = 0
        self.now = 0.0
        self.last_step_s = 0.0
        self.tally = Tally(per_position=np.zeros(max(1, max_k), dtype=np.int64))

    @property
    def size(self) -> int:
        return self.requests.size

    def admit_arrivals(self) -> None:
        """Requests whose arrival time has come join the waiting queue, in arrival order."""
        n = self.size
        while self.next_arrival < n and self.arrival[self.next_arrival] <= self.now:
            self.waiting.append(self.next_arrival)
            self.next_arrival += 1

    def next_arrival_s(self) -> float:
        return float(self.arrival[self.next_arrival]) if self.next_arrival < self.size else np.inf

    def decoding(self) -> IntArray:
        """Running requests that finished prefill, in admission order."""
        run = np.array(self.running, dtype=np.int64)
        return run[self.computed[run] >= self.prefill_len[run]] if run.size else run

    def elapse(self, seconds: float) -> None:
        self.now += seconds
        self.tally.busy_s += seconds
        self.last_step_s = seconds

    def emit(self, ids: IntArray, emitted: IntArray) -> None:
        """Decoding sequences ``ids`` each emitted ``emitted`` tokens at ``now``."""
        self.tally.inter_token(self.now - self.last_emit[ids], emitted, self.cls[ids])
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
            self.tally.inter_token(
                self.now - self.last_emit[resumed], np.ones(resumed.size, dtype=np.int64), self.cls[resumed]
            )
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
            for _ in range(min(int(ended.size), self.size - self.next_to_assign)):  # closed loop: a user sends again
                self.arrival[self.next_to_assign] = self.now
                self.next_to_assign += 1
