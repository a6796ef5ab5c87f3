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
from specwise.sim.drafting import AcceptanceStream, DraftShape, Uniforms, proposal_uniforms
from specwise.sim.fastforward import linspace
from specwise.sim.scheduler import EngineConfig
from specwise.sim.state import FLUSH_SAMPLES, Seq, SimState
from specwise.sim.stepcost import StepCost

MAX_FAST_STEPS = 256  # as the vector fast-forward (specwise.sim.fastforward)


@dataclass
class ScalarPlan:
    """One step: decoding sequences with their query tokens and draft caps, and prefill chunks."""

    decoding: list[Seq]
    query: list[int]
    k_each: list[int]
    chunks: list[Seq]
    chunk_len: list[int]
    uniform_query: int  # the query tokens of every decoding sequence when they are all the same, else -1


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
        self.stream = rng if isinstance(rng, AcceptanceStream) else None

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
        k_each, query, q_sum, kv_used = self._decode_queries(dec, k, proposes)
        budget = engine.max_num_batched_tokens - q_sum
        plan = ScalarPlan(
            list(dec), query, k_each, [], [], query[0] if query and query.count(query[0]) == len(query) else -1
        )
        if len(dec) < len(st.seqs):  # some still prefill
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
        if engine.chunked_prefill and st.waiting:
            self._admit(plan, kv_used, budget)
        return plan if plan.decoding or plan.chunks else None

    def _decode_queries(
        self, dec: list[Seq], k: int, proposes: list[int] | None
    ) -> tuple[list[int], list[int], int, int]:
        """Each decoding sequence's draft tokens (``k`` however few it still owes, as vLLM drafts them: see
        :meth:`specwise.sim.scheduler.Scheduler.plan`; zero where the proposer found nothing) and query tokens; their
        sum and the KV blocks they fill."""
        block, qtab, b = self.block, self.qtab, len(dec)
        if k == 0 or not dec or proposes is None:
            q = qtab[k]
            kv_used = sum([-(-(s.computed + q) // block) for s in dec])
            return [k] * b, [q] * b, q * b, kv_used
        k_each, query = [], []
        q_sum = kv_used = 0
        for i, s in enumerate(dec):
            e = k * proposes[i]
            q = qtab[e]
            k_each.append(e)
            query.append(q)
            q_sum += q
            kv_used += -(-(s.computed + q) // block)
        return k_each, query, q_sum, kv_used

    def _prefill_only(self, dec: list[Seq]) -> ScalarPlan | None:
        """Whole prompts of waiting requests, no decoding (vLLM V0 with speculation)."""
        st, block, cap = self.st, self.block, self.capacity_blocks
        kv_used = sum(-(-s.computed // block) for s in dec)
        budget = max(self.engine.max_num_batched_tokens, st.prefill_len.item(st.waiting[0]))
        plan = ScalarPlan([], [], [], [], [], -1)
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
        completes = []
        if chunks:
            completes = [s for s, c in zip(chunks, plan.chunk_len, strict=True) if s.computed + c >= s.prefill_len]
        step = self._price(plan, len(completes), k)
        st.now += step  # st.elapse(step)
        st.tally.busy_s += step
        st.last_step_s = step
        st.tally.steps += 1
        ended = self._emit(dec, self._draw(plan, k) if k > 0 else None) if dec else []
        if chunks:
            for s, c in zip(chunks, plan.chunk_len, strict=True):
                s.computed += c
            self._finish_prefill(completes)
            ended += [s for s in completes if s.generated >= s.out_len]
        if ended:
            self._retire(ended)

    def _price(self, plan: ScalarPlan, completing: int, k: int) -> float:
        cost = self.cost
        if not cost.totals:
            return self._price_arrays(plan, completing, k)
        dec, uq = plan.decoding, plan.uniform_query
        if uq >= 0:  # the same query everywhere: sum_i q (c_i + (q + 1) // 2), factored (the same integers)
            ctx_sum = sum([s.computed for s in dec])
            q_sum, pairs = uq * len(dec), uq * ctx_sum + len(dec) * (uq * ((uq + 1) // 2))
        else:
            q_sum = ctx_sum = pairs = 0
            for s, q in zip(dec, plan.query, strict=True):
                c = s.computed
                q_sum += q
                ctx_sum += c
                pairs += q * (c + (q + 1) // 2)
        draft_q = draft_pairs = 0
        if k > 0:  # the draft's catch-up
            draft_q = sum([s.last_q for s in dec])
            draft_pairs = sum([s.last_q * (s.computed + (s.last_q + 1) // 2) for s in dec])
        chunk_q = chunk_ctx = chunk_pairs = 0
        for s, q in zip(plan.chunks, plan.chunk_len, strict=True):
            c = s.computed
            chunk_q += q
            chunk_ctx += c
            chunk_pairs += q * (c + (q + 1) // 2)
        batched = q_sum + chunk_q
        self.st.tally.reach(len(dec) + len(plan.chunks), batched, ctx_sum + chunk_ctx + batched)
        draft_prefill = 0.0
        if plan.chunks and self.max_k > 0:  # the draft's prefill is GPU work: inside the overlap (StepCost)
            draft_prefill = cost.draft_prefill_totals(len(plan.chunks), chunk_q, chunk_ctx, chunk_pairs)
        return cost.decode_step_totals(
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
            draft_prefill,
        )

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
        fed = int(batch.query_tokens.sum())
        self.st.tally.reach(batch.num_seqs, fed, int(batch.context_tokens.sum()) + fed)
        draft_prefill = cost.draft_prefill_s(BatchShape(chunk_q, chunk_ctx)) if plan.chunks and self.max_k > 0 else 0.0
        draft_q = np.array([s.last_q for s in plan.decoding], dtype=np.int64)
        return cost.decode_step_s(batch, draft_q, dec_ctx, k, draft_prefill)

    def _draw(self, plan: ScalarPlan, k: int) -> list[int]:
        """What each decoding sequence accepted; the spec-decode counters as vLLM counts them."""
        k_each = plan.k_each
        stream = self.stream
        if stream is not None:
            drawn = stream.accepted([s.cls for s in plan.decoding] if stream.classes else len(k_each))
            if k_each.count(k) == len(k_each):  # every sequence drafted (the draws are k wide)
                accepted = drawn
            else:
                accepted = [a if a < e else e for a, e in zip(drawn, k_each, strict=True)]
        else:
            accepted = self.shape.draw_list(self.rng, [s.cls for s in plan.decoding], k, k_each)
        t = self.st.tally
        t.drafts += len(k_each) - k_each.count(0)
        t.draft_tokens += sum(k_each)
        hist = t.accepted_hist
        for a in accepted:
            hist[a] += 1
        return accepted

    def _emit(self, dec: list[Seq], accepted: list[int] | None) -> list[Seq]:
        """Each decoding sequence emits its accepted tokens + 1 at ``now``; those that are done."""
        st = self.st
        now, itl = st.now, st.tally.itl
        if accepted is None:  # one token each (x / 1 is x)
            itl.values.extend([now - s.last_emit for s in dec])
            itl.weights.extend([1] * len(dec))
            for s in dec:
                s.generated += 1
                s.computed += 1
                s.last_q = 1
                s.last_emit = now
        else:
            # what passes max_tokens is verified and counted, then cut (vLLM's check_stop)
            emitted = [
                a + 1 if a < s.out_len - s.generated else s.out_len - s.generated
                for s, a in zip(dec, accepted, strict=True)
            ]
            itl.values.extend([(now - s.last_emit) / e for s, e in zip(dec, emitted, strict=True)])
            itl.weights.extend(emitted)
            for s, e in zip(dec, emitted, strict=True):
                s.generated += e
                s.computed += e
                s.last_q = e
                s.last_emit = now
        if itl.with_classes:
            itl.classes.extend([s.cls for s in dec])
        if len(itl.values) > FLUSH_SAMPLES:
            itl.flush()
        return [s for s in dec if s.generated >= s.out_len]

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

    def _retire(self, ended: list[Seq]) -> None:
        """Requests that produced all their tokens leave the engine."""
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
        max_steps = min(MAX_FAST_STEPS, min([s.out_len - s.generated for s in dec]) - q)
        if max_steps < 1:
            return False
        ctx = [s.computed for s in dec]
        t_first = self._uniform_step(q, ctx, [s.last_q for s in dec], k)
        horizon_s = st.next_arrival_s()
        if horizon_s != np.inf:  # steps only lengthen as context grows: no more start before the arrival
            max_steps = max(1, min(max_steps, int((horizon_s - st.now) / t_first) + 1))
        window = _Window(self, dec, k, q, max_steps)
        if window.steps == 1:  # one step, starting now (before the horizon): no arrays
            d = window.single_duration(t_first, ctx)
            window.apply_one(d, st.now + d)
            return True
        durations = window.durations(t_first, ctx)
        ends = durations.cumsum()
        ends += st.now
        steps = window.steps
        if horizon_s != np.inf:  # a step starting after an arrival admits it
            steps = max(1, int(np.count_nonzero(ends - durations < horizon_s)))
        window.apply(steps, durations, ends.item(0), ends.item(steps - 1))
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
        draft_pairs = sum([d * (c + (d + 1) // 2) for c, d in zip(ctx, draft_q, strict=True)]) if k > 0 else 0
        return cost.uniform_step_totals(len(ctx), q, sum(ctx), k, sum(draft_q), draft_pairs)


class _Window:
    """The draws and emissions of one fast-forward window (``specwise.sim.fastforward.fast_forward``)."""

    def __init__(self, loop: ScalarLoop, dec: list[Seq], k: int, q: int, max_steps: int) -> None:
        self.loop, self.dec, self.k, self.q = loop, dec, k, q
        self.steps = max_steps
        self.accepted: np.ndarray | None = None  # steps x sequences: draft tokens accepted
        self._cum: np.ndarray | None = None  # the same, summed over the steps so far
        self.proposes: np.ndarray | None = None  # per step, shared draws of a lookup
        if k > 0:
            self._draw(max_steps)

    def _draw(self, max_steps: int) -> None:
        loop, dec, k, b = self.loop, self.dec, self.k, len(self.dec)
        shape, rng = loop.shape, loop.rng
        cls = [s.cls for s in dec]
        if loop.stream is not None:
            accepted = loop.stream.accepted_window(max_steps, cls)
        else:
            u = rng.random((max_steps, 1, k)) if shape.shared else rng.random((max_steps, b, k))
            accepted = np.cumprod(u < shape.conditional[cls, :k][None, :, :], axis=2).sum(axis=2)
            if not shape.always_proposes:  # shared draws: the whole batch drafts, or none of it
                u_p = proposal_uniforms(rng).random((max_steps, 1))[:, 0]
                self.proposes = (u_p < shape.proposal_rate[cls[0]]).astype(np.int64)
                accepted *= self.proposes[:, None]
        self.accepted = accepted
        # Only as many steps as keep every request q + 1 tokens short of its end before each step: step t + 1
        # may run while each request emitted at most what it owes less q + 1 through step t.
        owed = [s.out_len - s.generated - self.q - 1 for s in dec]
        if max_steps > 1 and (max_steps - 1) * (k + 1) > min(owed):
            cum = self.cum()
            through = cum[max_steps - 2].tolist()
            for i, (a, limit) in enumerate(zip(through, owed, strict=True)):
                if a + max_steps - 1 > limit:  # this request would run short before the window ends
                    column = cum[: self.steps - 1, i].tolist()
                    short = next((t for t, c in enumerate(column) if c + t + 1 > limit), None)
                    if short is not None:
                        self.steps = short + 1

    def cum(self) -> np.ndarray:
        if self._cum is None:
            assert self.accepted is not None
            self._cum = self.accepted.cumsum(axis=0)
        return self._cum

    def single_duration(self, t_first: float, ctx: list[int]) -> float:
        """The one step's time (a plain decode step where a lookup found nothing to draft)."""
        if self.proposes is not None and not self.proposes[0]:
            return self.loop._uniform_step(1, ctx, [s.last_q for s in self.dec], 0)
        return t_first

    def durations(self, t_first: float, ctx: list[int]) -> np.ndarray:
        """Step times over the window (2+ steps), evaluated at its first and last step and interpolated linearly
        between."""
        loop, dec, k, q, n = self.loop, self.dec, self.k, self.q, self.steps
        if self.accepted is None:
            ctx_last = [c + n - 1 for c in ctx]
            prev = [1] * len(dec)
        else:
            ctx_last = [c + a + n - 1 for c, a in zip(ctx, self.cum()[n - 2].tolist(), strict=True)]
            prev = [a + 1 for a in self.accepted[n - 2].tolist()]
        durations = linspace(t_first, loop._uniform_step(q, ctx_last, prev, k), n)
        if self.proposes is not None and not self.proposes[:n].all():  # no draft: a plain decode step
            first = loop._uniform_step(1, ctx, [s.last_q for s in dec], 0)
            plain = linspace(first, loop._uniform_step(1, ctx_last, prev, 0), n)
            durations = np.where(self.proposes[:n] > 0, durations, plain)
        return durations

    def apply(self, steps: int, durations: np.ndarray, first_end_s: float, last_end_s: float) -> None:
        loop, dec, k = self.loop, self.dec, self.k
        st, b = loop.st, len(dec)
        t = st.tally
        t.steps += steps
        gaps = durations[:steps].repeat(b)
        for i, s in enumerate(dec):
            gaps[i] = first_end_s - s.last_emit
        classes = np.array([s.cls for s in dec] * steps, dtype=np.int64) if t.itl.with_classes else None
        if self.accepted is None:
            t.itl.add_arrays(gaps, None, classes)
            for s in dec:
                s.generated += steps
                s.computed += steps
                s.last_q = 1
                s.last_emit = last_end_s
        else:
            accepted = self.accepted[:steps]
            emitted = (accepted + 1).ravel()
            gaps /= emitted
            t.itl.add_arrays(gaps, emitted, classes)
            drafted = steps if self.proposes is None else int(self.proposes[:steps].sum())
            t.drafts += drafted * b
            t.draft_tokens += drafted * b * k
            t.add_accepted(accepted)
            last = accepted[steps - 1].tolist()
            for s, total, a in zip(dec, self.cum()[steps - 1].tolist(), last, strict=True):
                s.generated += total + steps
                s.computed += total + steps
                s.last_q = a + 1
                s.last_emit = last_end_s
        self._reach()
        st.elapse(last_end_s - st.now)
        st.last_step_s = durations.item(steps - 1)

    def apply_one(self, duration: float, end_s: float) -> None:
        """:meth:`apply` for a window of one step, on plain Python values."""
        loop, dec, k = self.loop, self.dec, self.k
        st = loop.st
        t = st.tally
        t.steps += 1
        itl = t.itl
        values, weights, classes, with_classes = itl.values, itl.weights, itl.classes, itl.with_classes
        accepted = [0] * len(dec) if self.accepted is None else self.accepted[0].tolist()
        if k > 0:
            drafted = 1 if self.proposes is None else int(self.proposes[0])
            t.drafts += drafted * len(dec)
            t.draft_tokens += drafted * len(dec) * k
            hist = t.accepted_hist
            for a in accepted:
                hist[a] += 1
        for s, a in zip(dec, accepted, strict=True):
            e = a + 1
            values.append((end_s - s.last_emit) / e)
            weights.append(e)
            if with_classes:
                classes.append(s.cls)
            s.generated += e
            s.computed += e
            s.last_q = e
            s.last_emit = end_s
        self._reach()
        st.elapse(end_s - st.now)
        st.last_step_s = duration

    def _reach(self) -> None:
        """The window's last step, the largest (its contexts the longest): b sequences feeding q tokens each over
        what they had computed before it."""
        dec, q = self.dec, self.q
        before = sum([s.computed - s.last_q for s in dec])
        self.loop.st.tally.reach(len(dec), q * len(dec), before + q * len(dec))
