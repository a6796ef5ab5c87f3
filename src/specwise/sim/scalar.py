"""The engine loop for a handful of sequences, in plain Python: the same steps as the vector path
(:mod:`specwise.sim.engine`, :mod:`specwise.sim.scheduler`, :mod:`specwise.sim.fastforward`) -- the same plan, the
same step times from the predictors' totals (:mod:`specwise.perfmodel.predictor`), the same draws from ``rng`` in
the same calls and order, the same floating-point operations in the same order -- without numpy's per-call
overhead, which dominates when a step moves one to a few dozen sequences (light load: most of a run).

It works on :class:`~specwise.sim.state.Seq` objects (``SimState.seqs``) and runs until the batch outgrows
``ScalarLoop.limit`` or the run ends; the engine then switches to the vector path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.sim.drafting import DraftShape, Uniforms
from specwise.sim.fastforward import linspace
from specwise.sim.scheduler import EngineConfig
from specwise.sim.state import FLUSH_SAMPLES, Seq, SimState
from specwise.sim.stepcost import StepCost

MAX_FAST_STEPS = 256  # as the vector fast-forward (specwise.sim.fastforward)


@dataclass
class ScalarPlan:
    """One step: decoding sequences with their query tokens and draft caps, prefill chunks, and which chunks
    complete their prefill."""

    decoding: list[Seq]
    query: list[int]
    k_each: list[int]
    chunks: list[Seq]
    chunk_len: list[int]


class ScalarLoop:
    def __init__(
        self,
        st: SimState,
        engine: EngineConfig,
        cost: StepCost,
        shape: DraftShape,
        k_of_batch: Sequence[int],
        max_k: int,
        rng: Uniforms,
        limit: int,
    ) -> None:
        self.st, self.engine, self.cost, self.shape, self.rng = st, engine, cost, shape, rng
        self.k_of_batch, self.max_k, self.limit = k_of_batch, max_k, limit
        self.block = engine.block_size
        self.capacity_blocks = engine.kv_capacity_tokens // engine.block_size
        self.qtab = shape.query_table(max_k)
        self.may_fast_forward = shape.always_proposes or shape.shared
        self.conditional: np.ndarray = getattr(shape, "conditional", np.zeros((1, 1)))
        self.rate: np.ndarray = getattr(shape, "proposal_rate", np.ones(1))

    def run(self) -> None:
        """Step until every request finished or the batch outgrew ``limit``."""
        st, shape = self.st, self.shape
        seqs, waiting, n = st.seqs, st.waiting, st.size
        k_of, limit = self.k_of_batch, self.limit
        while st.done < n:
            st.admit_arrivals()
            if len(seqs) > limit:
                return
            if not seqs and not waiting:
                st.now = st.next_arrival_s()
                continue
            dec = [s for s in seqs if s.computed >= s.prefill_len]
            b = len(dec)
            k = k_of[b]
            if (
                not waiting
                and self.may_fast_forward
                and b == len(seqs)
                and st.now + st.last_step_s < st.next_arrival_s()
                and self.fast_forward(dec, k)
            ):
                continue
            proposes = None if shape.always_proposes or k == 0 else shape.proposes_list(self.rng, [s.cls for s in dec])
            plan = self.plan(dec, k, proposes)
            if plan is None:  # nothing schedulable (KV full of prefills waiting on memory): to the next arrival
                nxt = st.next_arrival
                st.now = st.arrival_list[nxt] if nxt < n else st.now + self.engine.step_overhead_s
                continue
            self.step(plan, k)

    # -- planning (specwise.sim.scheduler.Scheduler, on Seq objects) -------------------------------------------

    def plan(self, dec: list[Seq], k: int, proposes: list[int] | None) -> ScalarPlan | None:
        st, engine, block = self.st, self.engine, self.block
        if not engine.chunked_prefill and st.waiting:
            only = self._prefill_only(dec)
            if only is not None:
                return only
        qtab = self.qtab
        k_each = []
        for s in dec:
            owed = s.out_len - s.generated - 1
            k_each.append(k if k < owed else (owed if owed > 0 else 0))
        if proposes is not None:
            k_each = [e * p for e, p in zip(k_each, proposes, strict=True)]
        query = [qtab[e] for e in k_each]
        budget = engine.max_num_batched_tokens - sum(query)
        plan = ScalarPlan(list(dec), query, k_each, [], [])
        kv_used = 0
        for s, q in zip(dec, query, strict=True):
            kv_used += -(-(s.computed + q) // block)
        for s in st.seqs:
            if s.computed < s.prefill_len:
                if budget > 0 and engine.chunked_prefill:
                    c = min(s.prefill_len - s.computed, budget)
                    plan.chunks.append(s)
                    plan.chunk_len.append(c)
                    budget -= c
                    kv_used += -(-(s.computed + c) // block)
                else:
                    kv_used += -(-s.computed // block)
        if kv_used > self.capacity_blocks:
            kv_used, budget = self._preempt(plan, kv_used, budget)
        if engine.chunked_prefill:
            self._admit(plan, kv_used, budget)
        return plan if plan.decoding or plan.chunks else None

    def _prefill_only(self, dec: list[Seq]) -> ScalarPlan | None:
        """Whole prompts of waiting requests, no decoding (vLLM V0 with speculation)."""
        st, block, cap = self.st, self.block, self.capacity_blocks
        kv_used = sum(-(-s.computed // block) for s in dec)
        budget = max(self.engine.max_num_batched_tokens, st.prefill_len.item(st.waiting[0]))
        plan = ScalarPlan([], [], [], [], [])
        while st.waiting and len(st.seqs) < self.engine.max_num_seqs:
            r = st.waiting[0]
            length = st.prefill_len.item(r)
            need = -(-(length + 1) // block)
            if length > budget or kv_used + need > cap:
                break
            st.waiting.popleft()
            s = Seq(st, r)
            st.seqs.append(s)
            plan.chunks.append(s)
            plan.chunk_len.append(length)
            budget -= length
            kv_used += need
        return plan if plan.chunks else None

    def _preempt(self, plan: ScalarPlan, kv_used: int, budget: int) -> tuple[int, int]:
        """Preempt the newest requests while the step does not fit the KV cache (vLLM's recompute)."""
        st, block = self.st, self.block
        while kv_used > self.capacity_blocks and len(st.seqs) > 1:
            victim = st.seqs.pop()
            in_dec = next((i for i, s in enumerate(plan.decoding) if s is victim), -1)
            in_chunks = next((i for i, s in enumerate(plan.chunks) if s is victim), -1)
            query = plan.query[in_dec] if in_dec >= 0 else (plan.chunk_len[in_chunks] if in_chunks >= 0 else 0)
            kv_used -= -(-(victim.computed + query) // block)
            if in_chunks >= 0:
                budget += plan.chunk_len.pop(in_chunks)
                plan.chunks.pop(in_chunks)
            if in_dec >= 0:
                budget += plan.query.pop(in_dec)
                plan.decoding.pop(in_dec)
                plan.k_each.pop(in_dec)
            victim.prefill_len = victim.prompt + victim.generated
            victim.computed = 0
            victim.store(st)
            st.preempt[victim.rid] += 1
            st.waiting.appendleft(victim.rid)
        return kv_used, budget

    def _admit(self, plan: ScalarPlan, kv_used: int, budget: int) -> None:
        """Waiting requests join while the token budget, ``max_num_seqs`` and the KV cache allow."""
        st, block, cap = self.st, self.block, self.capacity_blocks
        max_seqs, waiting, seqs = self.engine.max_num_seqs, st.waiting, st.seqs
        while waiting and budget > 0 and len(seqs) < max_seqs:
            r = waiting[0]
            length = st.prefill_len.item(r)
            c = length if length < budget else budget
            need = -(-c // block)
            if kv_used + need > cap or kv_used + -(-(length + 1) // block) > cap:
                break
            waiting.popleft()
            s = Seq(st, r)
            seqs.append(s)
            plan.chunks.append(s)
            plan.chunk_len.append(c)
            budget -= c
            kv_used += need

    # -- one general step (specwise.sim.engine._run_step) ------------------------------------------------------

    def step(self, plan: ScalarPlan, k: int) -> None:
        st = self.st
        dec, chunks = plan.decoding, plan.chunks
        completes = [s for s, c in zip(chunks, plan.chunk_len, strict=True) if s.computed + c >= s.prefill_len]
        st.elapse(self._price(plan, len(completes), k))
        st.tally.steps += 1
        if dec:
            self._emit(dec, self._draw(plan, k) if k > 0 else None)
        if chunks:
            for s, c in zip(chunks, plan.chunk_len, strict=True):
                s.computed += c
            self._finish_prefill(completes)
            self._retire(dec + completes)
        else:
            self._retire(dec)

    def _price(self, plan: ScalarPlan, completing: int, k: int) -> float:
        cost = self.cost
        if not cost.totals:
            return self._price_arrays(plan, completing, k)
        q_sum = ctx_sum = pairs = draft_q = draft_pairs = 0
        for s, q in zip(plan.decoding, plan.query, strict=True):
            c, lq = s.computed, s.last_q
            q_sum += q
            ctx_sum += c
            pairs += q * (c + (q + 1) // 2)
            draft_q += lq
            draft_pairs += lq * (c + (lq + 1) // 2)
        chunk_q = chunk_ctx = chunk_pairs = 0
        for s, q in zip(plan.chunks, plan.chunk_len, strict=True):
            c = s.computed
            chunk_q += q
            chunk_ctx += c
            chunk_pairs += q * (c + (q + 1) // 2)
        batched = q_sum + chunk_q
        step = cost.decode_step_totals(
            len(plan.decoding) + len(plan.chunks),
            batched,
            ctx_sum + chunk_ctx + batched,
            pairs + chunk_pairs,
            q_sum + completing,
            k,
            len(plan.decoding),
            draft_q,
            ctx_sum,
            draft_pairs,
        )
        if plan.chunks and self.max_k > 0:
            step += cost.draft_prefill_totals(len(plan.chunks), chunk_q, chunk_ctx, chunk_pairs)
        return step

    def _price_arrays(self, plan: ScalarPlan, completing: int, k: int) -> float:
        """The step's time through :class:`BatchShape` (predictors whose pass the totals do not determine)."""
        cost = self.cost
        chunk_q = np.array(plan.chunk_len, dtype=np.int64)
        chunk_ctx = np.array([s.computed for s in plan.chunks], dtype=np.int64)
        dec_ctx = np.array([s.computed for s in plan.decoding], dtype=np.int64)
        batch = BatchShape(
            np.concatenate([np.array(plan.query, dtype=np.int64), chunk_q]),
            np.concatenate([dec_ctx, chunk_ctx]),
            logit_rows=sum(plan.query) + completing,
        )
        step = cost.decode_step_s(batch, np.array([s.last_q for s in plan.decoding], dtype=np.int64), dec_ctx, k)
        if plan.chunks and self.max_k > 0:
            step += cost.draft_prefill_s(BatchShape(chunk_q, chunk_ctx))
        return step

    def _draw(self, plan: ScalarPlan, k: int) -> list[int]:
        """What each decoding sequence accepted; the spec-decode counters as vLLM counts them."""
        k_each = plan.k_each
        accepted = self.shape.draw_list(self.rng, [s.cls for s in plan.decoding], k, k_each)
        t = self.st.tally
        t.drafts += sum(1 for e in k_each if e > 0)
        t.draft_tokens += sum(k_each)
        hist = t.accepted_hist
        for a in accepted:
            hist[a] += 1
        return accepted

    def _emit(self, dec: list[Seq], accepted: list[int] | None) -> None:
        """Each decoding sequence emits its accepted tokens + 1 at ``now``."""
        st = self.st
        now, itl = st.now, st.tally.itl
        values, weights, classes, with_classes = itl.values, itl.weights, itl.classes, itl.with_classes
        for i, s in enumerate(dec):
            e = 1 if accepted is None else accepted[i] + 1
            values.append((now - s.last_emit) / e)
            weights.append(e)
            if with_classes:
                classes.append(s.cls)
            s.generated += e
            s.computed += e
            s.last_q = e
            s.last_emit = now
        if len(values) > FLUSH_SAMPLES:
            itl.flush()

    def _finish_prefill(self, completes: list[Seq]) -> None:
        st = self.st
        now, itl = st.now, st.tally.itl
        for s in completes:
            if s.fresh:
                st.first_token[s.rid] = now
                s.fresh = False
            else:  # resumed after a preemption: one more inter-token sample
                itl.values.append(now - s.last_emit)
                itl.weights.append(1)
                if itl.with_classes:
                    itl.classes.append(s.cls)
            s.generated += 1
            s.last_emit = now
            s.last_q = 1

    def _retire(self, touched: list[Seq]) -> None:
        ended = [s for s in touched if s.generated >= s.out_len]
        if not ended:
            return
        st = self.st
        for s in ended:
            st.finish[s.rid] = st.now
            st.seqs.remove(s)
        st.done += len(ended)
        st.arrive_after_finishes(len(ended))

    # -- several pure-decode steps at once (specwise.sim.fastforward) ------------------------------------------

    def fast_forward(self, dec: list[Seq], k: int) -> bool:
        """Advance by as many decode steps as may run unchanged; False when none qualifies."""
        st = self.st
        q = self.qtab[k]
        max_steps = min(MAX_FAST_STEPS, min(s.out_len - s.generated for s in dec) - q)
        if max_steps < 1:
            return False
        ctx = [s.computed for s in dec]
        t_first = self._uniform_step(q, ctx, [s.last_q for s in dec], k)
        horizon_s = st.next_arrival_s()
        if horizon_s != np.inf:  # steps only lengthen as context grows: no more start before the arrival
            max_steps = max(1, min(max_steps, int((horizon_s - st.now) / t_first) + 1))
        window = _Window(self, dec, k, q, max_steps)
        durations = window.durations(t_first, ctx)
        ends = st.now + np.cumsum(durations)
        steps = window.steps
        if horizon_s != np.inf:  # a step starting after an arrival admits it
            steps = max(1, int(np.count_nonzero(ends - durations < horizon_s)))
        window.apply(steps, durations, float(ends[0]), float(ends[steps - 1]))
        return True

    def _uniform_step(self, q: int, ctx: list[int], draft_q: list[int], k: int) -> float:
        """A decode step of the sequences with ``ctx`` context each feeding ``q`` tokens (the draft catching up
        ``draft_q``)."""
        cost = self.cost
        if not cost.totals:
            b = len(ctx)
            context = np.array(ctx, dtype=np.int64)
            batch = BatchShape(np.full(b, q, dtype=np.int64), context, logit_rows=b * q)
            return cost.decode_step_s(batch, np.array(draft_q, dtype=np.int64), context, k)
        draft_pairs = 0
        if k > 0:
            for c, d in zip(ctx, draft_q, strict=True):
                draft_pairs += d * (c + (d + 1) // 2)
        return cost.uniform_step_totals(len(ctx), q, sum(ctx), k, sum(draft_q), draft_pairs)


class _Window:
    """The draws and emissions of one fast-forward window (``specwise.sim.fastforward.fast_forward``)."""

    def __init__(self, loop: ScalarLoop, dec: list[Seq], k: int, q: int, max_steps: int) -> None:
        self.loop, self.dec, self.k, self.q = loop, dec, k, q
        self.steps = max_steps
        self.accepted: np.ndarray | None = None  # steps x sequences
        self.cum: np.ndarray | None = None  # tokens emitted through each step, per sequence
        self.proposes: np.ndarray | None = None  # per step, shared draws of a lookup
        if k > 0:
            self._draw(max_steps)

    def _draw(self, max_steps: int) -> None:
        loop, dec, k, b = self.loop, self.dec, self.k, len(self.dec)
        shape, rng = loop.shape, loop.rng
        u = rng.random((max_steps, 1, k)) if shape.shared else rng.random((max_steps, b, k))
        cls = [s.cls for s in dec]
        accepted = np.cumprod(u < loop.conditional[cls, :k][None, :, :], axis=2).sum(axis=2)
        if not shape.always_proposes:  # shared draws: the whole batch drafts, or none of it
            self.proposes = (rng.random((max_steps, 1))[:, 0] < loop.rate[cls[0]]).astype(np.int64)
            accepted *= self.proposes[:, None]
        self.accepted = accepted
        # Only as many steps as keep every request q + 1 tokens short of its end before each step.
        owed_min = min(s.out_len - s.generated for s in dec) - self.q - 1
        if (max_steps - 1) * (k + 1) > owed_min:
            cum = np.cumsum(accepted + 1, axis=0)
            self.cum = cum
            owed = np.array([s.out_len - s.generated for s in dec], dtype=np.int64) - self.q - 1
            over = (cum[:-1] > owed).any(axis=1)
            if over.any():
                self.steps = int(np.argmax(over)) + 1

    def _cum(self) -> np.ndarray:
        if self.cum is None:
            assert self.accepted is not None
            self.cum = np.cumsum(self.accepted + 1, axis=0)
        return self.cum

    def durations(self, t_first: float, ctx: list[int]) -> np.ndarray:
        """Step times over the window, evaluated at its first and last step and interpolated linearly between."""
        loop, dec, k, q, n = self.loop, self.dec, self.k, self.q, self.steps
        plain_too = self.proposes is not None and not self.proposes[:n].all()  # no draft: a plain decode step
        if n == 1:
            return np.array([loop._uniform_step(1, ctx, [s.last_q for s in dec], 0) if plain_too else t_first])
        if self.accepted is None:
            before = [n - 1] * len(dec)
            prev = [1] * len(dec)
        else:
            before = self._cum()[n - 2].tolist()
            prev = (self.accepted[n - 2] + 1).tolist()
        ctx_last = [c + e for c, e in zip(ctx, before, strict=True)]
        durations = linspace(t_first, loop._uniform_step(q, ctx_last, prev, k), n)
        if plain_too:
            assert self.proposes is not None
            first = loop._uniform_step(1, ctx, [s.last_q for s in dec], 0)
            plain = linspace(first, loop._uniform_step(1, ctx_last, prev, 0), n)
            durations = np.where(self.proposes[:n] > 0, durations, plain)
        return durations

    def apply(self, steps: int, durations: np.ndarray, first_end_s: float, last_end_s: float) -> None:
        loop, dec, k = self.loop, self.dec, self.k
        st, b = loop.st, len(dec)
        t = st.tally
        t.steps += steps
        gaps = np.repeat(durations[:steps], b)
        gaps[:b] = [first_end_s - s.last_emit for s in dec]
        classes = np.tile(np.array([s.cls for s in dec], dtype=np.int64), steps) if t.itl.with_classes else None
        if self.accepted is None:
            t.itl.add_arrays(gaps, None, classes)
            totals, last_q = [steps] * b, [1] * b
        else:
            accepted = self.accepted[:steps]
            emitted = (accepted + 1).ravel()
            t.itl.add_arrays(gaps / emitted, emitted, classes)
            drafted = steps if self.proposes is None else int(self.proposes[:steps].sum())
            t.drafts += drafted * b
            t.draft_tokens += drafted * b * k
            t.add_accepted(accepted)
            totals = self._cum()[steps - 1].tolist()
            last_q = (accepted[steps - 1] + 1).tolist()
        for s, total, lq in zip(dec, totals, last_q, strict=True):
            s.generated += total
            s.computed += total
            s.last_q = lq
            s.last_emit = last_end_s
        st.elapse(last_end_s - st.now)
        st.last_step_s = float(durations[steps - 1])
