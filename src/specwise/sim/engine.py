"""The serving engine loop: vLLM V1-style continuous batching with chunked prefill and speculation.

Each engine step: the scheduler plans it (:mod:`specwise.sim.scheduler`: decode verifications, prefill chunks,
admissions, preemptions), the step cost prices it (:mod:`specwise.sim.stepcost`: target pass, proposer, rejection
sampling, overhead), the drafting shape draws what each decoding sequence accepts (:mod:`specwise.sim.drafting`),
and the state records the outcome (:mod:`specwise.sim.state`). Stretches of pure decoding with nothing else
happening are taken several steps at a time (:mod:`specwise.sim.fastforward`).

Arrivals and step ends are the two event kinds; the loop jumps idle time to the next arrival. Everything random
comes from the ``rng`` passed in, so a seed fixes the whole trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from specwise.errors import SpecError
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.sim.drafting import AcceptanceStream, ChainDrafting, DraftShape, TreeDrafting, Uniforms
from specwise.sim.fastforward import fast_forward
from specwise.sim.scalar import ScalarLoop
from specwise.sim.scheduler import EngineConfig, Scheduler, StepPlan
from specwise.sim.state import SimState
from specwise.sim.stepcost import StepCost, batch_totals
from specwise.sim.workload import RequestTable, WorkloadClass
from specwise.traffic import FloatArray, IntArray

__all__ = ["EngineConfig", "SimResult", "SpecConfig", "simulate"]


@dataclass(frozen=True)
class SpecConfig:
    """Speculation for a run: ``k`` tokens, or a ``schedule`` of (first_batch, last_batch, k); the drafting
    ``shape``: ``chain`` (k tokens on one path) or ``tree`` (``tree_size`` tokens verified, at most k accepted);
    ``shared_acceptance``: all sequences accept alike (copies of one prompt decoded greedily)."""

    k: int
    draft_cost: DraftCost
    schedule: tuple[tuple[int, int, int], ...] = ()
    shape: str = "chain"
    tree_size: int = 0
    shared_acceptance: bool = False

    def __post_init__(self) -> None:
        if self.k < 0:
            raise SpecError(f"k: must be >= 0, got {self.k}")
        prev_end = 0
        for start, end, k in self.schedule:
            if start < 1 or end < start or k < 0 or start <= prev_end:
                raise SpecError(f"k schedule: bad or overlapping entry [{start}, {end}, {k}]")
            prev_end = end
        if self.schedule and self.schedule[0][0] != 1:
            raise SpecError(f"k schedule: the first entry must start at batch 1, got {list(self.schedule[0])}")
        if self.shape not in ("chain", "tree"):
            raise SpecError(f"drafting shape {self.shape!r}: expected chain or tree")
        if self.shape == "tree" and self.tree_size < self.max_k:
            raise SpecError(f"tree of {self.tree_size} tokens cannot accept {self.max_k}")

    def drafting(self, classes: Sequence[WorkloadClass]) -> DraftShape:
        if self.shape == "tree":
            return TreeDrafting(classes, self.max_k, self.tree_size, self.shared_acceptance)
        return ChainDrafting(classes, self.max_k, self.shared_acceptance)

    @property
    def max_k(self) -> int:
        return max([self.k] + [k for _, _, k in self.schedule])

    def k_for_batch(self, batch: int) -> int:
        """k at ``batch`` running sequences, as vLLM reads ``num_speculative_tokens_per_batch_size``
        (``vllm/v1/spec_decode/dynamic/utils.py``, ``build_dynamic_sd_schedule_lookup``, 0.24+): an entry's k
        within it, and a batch no entry covers takes the k of the last entry below it -- gaps and the tail after the
        last entry carry the previous k forward (an entry with k = 0 is how a schedule switches speculation off)."""
        if not self.schedule:
            return self.k
        k = self.schedule[0][2]
        for start, _end, entry_k in self.schedule:
            if start > batch:
                break
            k = entry_k
        return k


@dataclass
class SimResult:
    """Per-request outcomes plus token-normalised inter-token latency samples."""

    requests: RequestTable
    first_token_s: FloatArray
    finish_s: FloatArray
    preemptions: IntArray
    itl_s: FloatArray
    itl_weight: IntArray
    itl_class: IntArray
    steps: int
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_position: IntArray
    end_s: float
    busy_s: float = field(default=0.0)
    peak_seqs: int = 0  # the largest step simulated: sequences, tokens fed, KV tokens read (Tally.reach)
    peak_batched_tokens: int = 0
    peak_kv_tokens: int = 0


SCALAR_MAX_BATCH = 128  # the scalar path steps while at most this many requests run ...
SCALAR_RESUME_BATCH = 96  # ... and takes over again from the vector path at this many (hysteresis)


def simulate(
    requests: RequestTable,
    classes: Sequence[WorkloadClass],
    engine: EngineConfig,
    target: StepTimePredictor,
    spec: SpecConfig | None,
    rng: Uniforms,
) -> SimResult:
    """Run ``requests`` through the engine; ``rng`` draws acceptance (a ``numpy.random.Generator``, or
    :class:`~specwise.sim.drafting.WeylUniforms` for low-variance replays).

    Small batches step on the scalar path (:mod:`specwise.sim.scalar`), large ones on the vector path below;
    both take the same steps with the same draws, so the choice changes the speed, never the result."""
    max_k = spec.max_k if spec else 0
    shape = spec.drafting(classes) if spec else ChainDrafting(classes, 0)
    _check_fits(requests, engine, shape.query_table(max_k)[max_k] - 1)  # drafts fed at a request's last step
    _check_arrivals(requests)
    st = SimState(requests, max_k, with_classes=len(classes) > 1 or bool(requests.class_index.any()))
    cost = StepCost(target, spec.draft_cost if spec else None, engine.overhead, engine.batch_expansion_scorer)
    k_of_batch = [spec.k_for_batch(b) if spec else 0 for b in range(engine.max_num_seqs + 1)]
    draws = rng
    if (
        isinstance(rng, np.random.Generator)
        and spec is not None
        and spec.k > 0
        and not spec.schedule
        and shape.always_proposes
        and not shape.shared
    ):  # every draw k wide: acceptance computed ahead in blocks, the same numbers
        draws = AcceptanceStream(rng, shape.conditional, spec.k)
    scalar = ScalarLoop(st, engine, cost, shape, k_of_batch, max_k, draws, SCALAR_MAX_BATCH)
    vector = _VectorLoop(st, engine, cost, shape, k_of_batch, max_k, draws)
    while st.done < st.size:
        if st.scalar:
            scalar.run()
            if st.done < st.size:
                st.to_vector()
        else:
            vector.run(SCALAR_RESUME_BATCH)
            if st.done < st.size:
                st.to_scalar()
    if isinstance(draws, AcceptanceStream):
        draws.close()
    return _result(st, max_k)


@dataclass
class _VectorLoop:
    """The engine loop on whole arrays (large batches)."""

    st: SimState
    engine: EngineConfig
    cost: StepCost
    shape: DraftShape
    k_of_batch: list[int]
    max_k: int
    rng: Uniforms

    def run(self, resume_scalar_at: int) -> None:
        """Step until every request finished or at most ``resume_scalar_at`` requests run."""
        st, shape, rng = self.st, self.shape, self.rng
        scheduler = Scheduler(self.engine, shape)
        while st.done < st.size:
            st.admit_arrivals()
            if len(st.running) <= resume_scalar_at:
                return
            if not st.running and not st.waiting:
                st.now = st.next_arrival_s()
                continue
            decoding, prefilling = st.decoding()
            k = self.k_of_batch[decoding.size]
            if (
                not st.waiting
                and (shape.always_proposes or shape.shared)
                and not prefilling
                and st.now + st.last_step_s < st.next_arrival_s()
                and fast_forward(st, decoding, k, self.cost, shape, rng)
            ):
                continue
            proposes = None if shape.always_proposes or k == 0 else shape.proposes(rng, st.cls[decoding])
            plan = scheduler.plan(st, decoding, prefilling, k, proposes)
            if plan.empty:  # nothing schedulable (KV full of prefills waiting on memory): to the next arrival
                nxt = st.next_arrival
                st.now = st.arrival_list[nxt] if nxt < st.size else st.now + self.engine.step_overhead_s
                continue
            _run_step(st, plan, k, self.max_k, self.cost, shape, rng)


def _check_fits(requests: RequestTable, engine: EngineConfig, drafted: int = 0) -> None:
    """Every request must fit the cache alone, counted as the scheduler counts it -- in whole blocks (its prompt and
    first token to be admitted, all of it to finish, and its last step's ``drafted`` draft tokens on top: the full k,
    or a tree's size, is verified however few tokens remain): one that fits in tokens but not in blocks would never
    be admitted, and the loop would wait for it forever (review s46a: 995 + 5 tokens in a 1,000-token cache of 62
    16-token blocks), and one alone whose last verification overflows the cache cannot be preempted to make room
    (review s50a F1)."""
    block = engine.block_size
    # the last step: prompt + output - 1 computed, 1 + drafted fed (the token owed and the drafts verified with it)
    need = np.maximum(requests.prompt_tokens + 1, requests.prompt_tokens + requests.output_tokens + max(drafted - 1, 0))
    blocks = -(-need // block)
    capacity_blocks = engine.kv_capacity_tokens // block
    too_long = np.nonzero(blocks > capacity_blocks)[0]
    if too_long.size:
        i = int(too_long[0])
        raise SpecError(
            f"request {i} needs {int(need[i])} KV tokens ({int(blocks[i])} blocks of {block}) but the "
            f"cache holds {capacity_blocks * block} ({capacity_blocks} blocks); shorten the workload's lengths"
        )


def _check_arrivals(requests: RequestTable) -> None:
    """Arrival times the loop waits for must be finite: a NaN never compares <= the clock, so the request would
    never be admitted and the loop, jumping the clock to it, would spin forever (a closed loop's later arrivals
    are its finishes, their ``arrival_s`` unused)."""
    used = requests.arrival_s if requests.users is None else requests.arrival_s[: requests.users]
    bad = np.nonzero(~np.isfinite(used))[0]
    if bad.size:
        raise SpecError(f"request {int(bad[0])}: arrival time must be a finite number, got {float(used[bad[0]])}")


def _run_step(
    st: SimState, plan: StepPlan, k: int, max_k: int, cost: StepCost, shape: DraftShape, rng: Uniforms
) -> None:
    """Price the planned step, advance the clock, then draw and record its outcomes."""
    decoding = plan.decoding
    chunk_arr = np.array(plan.chunk_ids, dtype=np.int64)
    chunk_q = np.array(plan.chunk_len, dtype=np.int64)
    completes = st.computed[chunk_arr] + chunk_q >= st.prefill_len[chunk_arr]
    st.elapse(_price(st, plan, chunk_arr, chunk_q, int(completes.sum()), k, max_k, cost))
    st.tally.steps += 1
    if decoding.size:
        accepted = _draw(st, plan, k, shape, rng)
        # what passes max_tokens is verified and counted, then cut (vLLM's check_stop after update_from_output)
        st.emit(decoding, np.minimum(accepted + 1, st.out_len[decoding] - st.generated[decoding]))
    if plan.chunk_ids:
        st.computed[chunk_arr] += chunk_q
        st.finish_prefill(chunk_arr[completes])
        st.retire(np.concatenate([decoding, chunk_arr[completes]]))
    else:
        st.retire(decoding)


def _price(
    st: SimState,
    plan: StepPlan,
    chunk_arr: IntArray,
    chunk_q: IntArray,
    completing: int,
    k: int,
    max_k: int,
    cost: StepCost,
) -> float:
    """The step's seconds: from totals where the predictors have the exact totals path, else from arrays."""
    decoding = plan.decoding
    dec_ctx, chunk_ctx = st.computed[decoding], st.computed[chunk_arr]
    draft_q = st.last_q[decoding]
    logit_rows = int(plan.q_decode.sum()) + completing
    if not cost.totals:
        batch = BatchShape(np.concatenate([plan.q_decode, chunk_q]), np.concatenate([dec_ctx, chunk_ctx]), logit_rows)
        fed = int(batch.query_tokens.sum())
        st.tally.reach(batch.num_seqs, fed, int(batch.context_tokens.sum()) + fed)
        # the draft's prefill is GPU work: inside the overlap of the engine's work (StepCost.decode_step_s)
        prefill = cost.draft_prefill_s(BatchShape(chunk_q, chunk_ctx)) if plan.chunk_ids and max_k > 0 else 0.0
        return cost.decode_step_s(batch, draft_q, dec_ctx, k, prefill)
    dq, dkv, dpairs = batch_totals(draft_q, dec_ctx)
    batched, kv, pairs = batch_totals(plan.q_decode, dec_ctx)
    cq, ckv, cpairs = batch_totals(chunk_q, chunk_ctx) if plan.chunk_ids else (0, 0, 0)
    num_seqs = decoding.size + len(plan.chunk_ids)
    st.tally.reach(num_seqs, batched + cq, kv + ckv)
    prefill = cost.draft_prefill_totals(len(plan.chunk_ids), cq, ckv - cq, cpairs) if plan.chunk_ids and max_k else 0.0
    totals = (num_seqs, batched + cq, kv + ckv, pairs + cpairs, logit_rows, k, decoding.size, dq, dkv - dq, dpairs)
    return cost.decode_step_totals(*totals, draft_prefill_s=prefill)


def _draw(st: SimState, plan: StepPlan, k: int, shape: DraftShape, rng: Uniforms) -> IntArray:
    """What each decoding sequence accepted this step; the spec-decode counters as vLLM counts them (accepted before
    the cut at ``max_tokens``: ``num_accepted = len(generated_token_ids) - 1`` in ``update_from_output``)."""
    if k <= 0:
        return np.zeros(plan.decoding.size, dtype=np.int64)
    draw = shape.draw(rng, st.cls[plan.decoding], k, plan.k_each)
    t = st.tally
    t.drafts += int((plan.k_each > 0).sum())
    t.draft_tokens += int(plan.k_each.sum())
    t.add_accepted(draw.accepted)
    return draw.accepted


def _result(st: SimState, max_k: int) -> SimResult:
    t = st.tally
    req = st.requests
    if req.users is not None:  # the arrival times the closed loop realised
        req = RequestTable(st.arrival, req.prompt_tokens, req.output_tokens, req.class_index, req.users)
    itl_s, itl_w, itl_c = t.itl.arrays()
    return SimResult(
        requests=req,
        first_token_s=st.first_token,
        finish_s=st.finish,
        preemptions=st.preempt,
        itl_s=itl_s,
        itl_weight=itl_w,
        itl_class=itl_c,
        steps=t.steps,
        drafts=t.drafts,
        draft_tokens=t.draft_tokens,
        accepted_tokens=t.accepted,
        accepted_per_position=t.per_position(max(1, max_k)),
        end_s=st.now,
        busy_s=t.busy_s,
        peak_seqs=t.peak_seqs,
        peak_batched_tokens=t.peak_batched_tokens,
        peak_kv_tokens=t.peak_kv_tokens,
    )
