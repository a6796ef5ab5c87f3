"""Simulator configurations whose full traces are recorded (``tests/sim/golden/traces.json``) so that a change of
the engine loop's implementation (issue 16: scalar step path, fast-forward through events) can be shown to move no
number: every request's first token and finish, preemptions, every inter-token sample in order, the counters.

The cases cover each branch of the loop: light and heavy load, fast-forward with and without speculation, the
general step with prefill chunks, preemption, lookups that draft only where they match (with and without shared
draws), tree drafting, a k schedule, prefill without chunking (vLLM V0), a closed loop, several classes, a
sliding-window model, MoE models, and each predictor (published fit, roofline, calibrated) with each draft cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from specwise.acceptance.model import AcceptanceModel
from specwise.catalog import resolve_gpu, resolve_model
from specwise.perfmodel import CalibratedPredictor, ModelDraftCost, NgramDraftCost, RooflinePredictor
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.factory import PredictorChoice
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import EngineOverhead, profile_for
from specwise.perfmodel.v2 import StepModelV2
from specwise.scenario import load_scenario
from specwise.scenario.model import Scenario
from specwise.sim.drafting import Uniforms, WeylUniforms
from specwise.sim.engine import EngineConfig, SimResult, SpecConfig, simulate
from specwise.sim.workload import RequestTable, WorkloadClass, generate_requests
from specwise.traffic import Arrivals, LengthDist

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "llama70b-4xh100.toml"
CAL_TARGET = CalibratedPredictor(3.926e-8, 2.101e-5, 5.886e-3)
CAL_DRAFT = ModelDraftCost(CalibratedPredictor(2.378e-9, 8.414e-7, 2.135e-3))
PROFILE = profile_for("vllm", None, "eagle3")  # the current release, async with speculation: the overlap path traced


@dataclass(frozen=True)
class Case:
    requests: RequestTable
    classes: list[WorkloadClass]
    engine: EngineConfig
    target: StepTimePredictor
    spec: SpecConfig | None
    rng: Callable[[], Uniforms]

    def run(self) -> SimResult:
        return simulate(self.requests, self.classes, self.engine, self.target, self.spec, self.rng())


@cache
def _scenario(predictor: str) -> Scenario:
    return load_scenario(SCENARIO, PredictorChoice(predictor))  # type: ignore[arg-type]


def _example(predictor: str, qps: float, k: int, n: int = 300) -> Case:
    sc = _scenario(predictor)
    req = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), n, np.random.default_rng(0))
    engine = EngineConfig(
        kv_capacity_tokens=sc.kv_cache_tokens,
        max_num_seqs=sc.max_num_seqs,
        max_num_batched_tokens=sc.max_num_batched_tokens,
        overhead=sc.models.overhead,
    )
    spec = SpecConfig(k, sc.models.draft_cost) if k else None
    return Case(req, list(sc.classes), engine, sc.models.target, spec, lambda: np.random.default_rng(1))


def _cls(name: str = "c", alpha: float = 0.7, prompt: int = 400, out: int = 120, **kw: Any) -> WorkloadClass:
    return WorkloadClass(
        name,
        kw.pop("share", 1.0),
        LengthDist("uniform", 0, 0, 8, prompt),
        LengthDist("uniform", 0, 0, 1, out),
        AcceptanceModel.iid(alpha),
        **kw,
    )


def _synthetic(
    classes: list[WorkloadClass],
    qps: float,
    n: int,
    spec: SpecConfig | None,
    *,
    target: StepTimePredictor = CAL_TARGET,
    kv: int = 200_000,
    seqs: int = 64,
    batched: int = 2048,
    chunked: bool = True,
    overhead: EngineOverhead | None = None,
    users: int | None = None,
    weyl: bool = False,
) -> Case:
    req = generate_requests(classes, Arrivals("poisson", qps), n, np.random.default_rng(7))
    if users is not None:
        req = replace(req, users=users)
    engine = EngineConfig(
        kv_capacity_tokens=kv, max_num_seqs=seqs, max_num_batched_tokens=batched, chunked_prefill=chunked
    )
    if overhead is not None:
        engine = replace(engine, overhead=overhead)
    rng: Callable[[], Uniforms] = (lambda: WeylUniforms()) if weyl else (lambda: np.random.default_rng(3))
    return Case(req, classes, engine, target, spec, rng)


def _v2(model: str, gpu: str, tp: int) -> StepModelV2:
    return StepModelV2(resolve_model(model), resolve_gpu(gpu), PROFILE.gpu, tp=tp)


def _hardware(model: str, gpu: str, tp: int, draft: str | None, k: int, qps: float, roofline: bool) -> Case:
    m, g = resolve_model(model), resolve_gpu(gpu)
    target: StepTimePredictor = RooflinePredictor(m, g, tp=tp) if roofline else _v2(model, gpu, tp)
    cost: DraftCost = NgramDraftCost()
    if draft is not None:
        d = resolve_model(draft)
        cost = ModelDraftCost(RooflinePredictor(d, g, tp=1) if roofline else StepModelV2(d, g, PROFILE.gpu, tp=1))
    classes = [_cls(prompt=3000, out=300, alpha=0.65)]
    spec = SpecConfig(k, cost) if k else None
    return _synthetic(
        classes, qps, 200, spec, target=target, kv=400_000, seqs=128, batched=4096, overhead=PROFILE.overhead
    )


CASES: dict[str, Callable[[], Case]] = {
    "example-fit-qps1-k0": lambda: _example("published-fit", 1.0, 0, 200),
    "example-fit-qps1-k4": lambda: _example("published-fit", 1.0, 4, 200),
    "example-fit-qps4-k0": lambda: _example("published-fit", 4.0, 0),
    "example-fit-qps4-k4": lambda: _example("published-fit", 4.0, 4),
    "example-fit-qps8-k7": lambda: _example("published-fit", 8.0, 7),
    "example-fit-qps12-k0": lambda: _example("published-fit", 12.0, 0, 600),
    "example-fit-qps12-k4": lambda: _example("published-fit", 12.0, 4, 600),
    "example-roofline-qps1-k4": lambda: _example("roofline", 1.0, 4, 200),
    "example-roofline-qps4-k2": lambda: _example("roofline", 4.0, 2),
    "example-roofline-qps12-k0": lambda: _example("roofline", 12.0, 0, 600),
    "example-roofline-qps30-k3": lambda: _example("roofline", 30.0, 3, 600),
    "calibrated-light-k3": lambda: _synthetic([_cls()], 2.0, 150, SpecConfig(3, CAL_DRAFT)),
    "calibrated-heavy-k5": lambda: _synthetic([_cls()], 200.0, 400, SpecConfig(5, CAL_DRAFT), seqs=256, batched=512),
    "calibrated-preempt-k3": lambda: _synthetic([_cls()], 60.0, 200, SpecConfig(3, CAL_DRAFT), kv=3_000),
    "calibrated-preempt-k0": lambda: _synthetic([_cls()], 60.0, 200, None, kv=3_000, batched=256),
    "ngram-rate-k3": lambda: _synthetic([_cls(proposal_rate=0.6)], 8.0, 200, SpecConfig(3, NgramDraftCost())),
    "ngram-rate-shared-weyl": lambda: _synthetic(
        [_cls(proposal_rate=0.5)], 30.0, 150, SpecConfig(4, NgramDraftCost(), shared_acceptance=True), weyl=True
    ),
    "shared-closed-loop-weyl": lambda: _synthetic(
        [_cls(alpha=0.8, out=300)], 1000.0, 120, SpecConfig(4, CAL_DRAFT, shared_acceptance=True), users=16, weyl=True
    ),
    "closed-loop-k2": lambda: _synthetic([_cls(out=200)], 1000.0, 150, SpecConfig(2, CAL_DRAFT), users=8),
    "weyl-k4": lambda: _synthetic([_cls()], 5.0, 150, SpecConfig(4, CAL_DRAFT), weyl=True),
    "tree-k3": lambda: _synthetic([_cls()], 6.0, 200, SpecConfig(3, CAL_DRAFT, shape="tree", tree_size=10)),
    "schedule-light": lambda: _synthetic(
        [_cls()], 8.0, 200, SpecConfig(4, CAL_DRAFT, schedule=((1, 3, 4), (4, 8, 2), (9, 512, 0)))
    ),
    "schedule": lambda: _synthetic(
        [_cls()], 40.0, 300, SpecConfig(4, CAL_DRAFT, schedule=((1, 4, 4), (5, 12, 2), (13, 512, 0)))
    ),
    "v0-no-chunking-k3": lambda: _synthetic([_cls()], 20.0, 200, SpecConfig(3, CAL_DRAFT), chunked=False),
    "v0-no-chunking-preempt": lambda: _synthetic(
        [_cls()], 60.0, 150, SpecConfig(2, CAL_DRAFT), chunked=False, kv=2_500, batched=512
    ),
    "mixed-classes": lambda: _synthetic(
        [
            _cls("a", 0.8, share=2.0, slo_ttft_s=1.0, slo_tpot_s=0.05),
            _cls("b", 0.4, prompt=1500, out=60, share=1.0, temperature=0.7),
            _cls("c", 0.6, out=30, share=1.0, proposal_rate=1.0),
        ],
        10.0,
        300,
        SpecConfig(3, CAL_DRAFT),
    ),
    "mixed-lookup-rates": lambda: _synthetic(
        [_cls("a", 0.8, proposal_rate=0.7), _cls("b", 0.5, proposal_rate=0.3)],
        10.0,
        200,
        SpecConfig(3, NgramDraftCost()),
    ),
    "gemma2-windows-fit-k3": lambda: _hardware(
        "google/gemma-2-9b-it", "H100-SXM-80GB", 1, "google/gemma-2-2b-it", 3, 3.0, False
    ),
    "gemma2-windows-roofline-k0": lambda: _hardware("google/gemma-2-9b-it", "H100-SXM-80GB", 1, None, 0, 20.0, True),
    "gptoss-moe-windows-fit-ngram": lambda: _hardware("openai/gpt-oss-20b", "H100-SXM-80GB", 1, None, 3, 5.0, False),
    "mixtral-moe-roofline-k2": lambda: _hardware(
        "mistralai/Mixtral-8x7B-Instruct-v0.1", "H100-SXM-80GB", 2, "Qwen/Qwen2.5-0.5B-Instruct", 2, 4.0, True
    ),
    "qwen3-moe-fit-k4": lambda: _hardware("Qwen/Qwen3-30B-A3B", "H100-SXM-80GB", 1, "Qwen/Qwen3-0.6B", 4, 15.0, False),
    "deepseek-mla-fit-k2": lambda: _hardware("deepseek-ai/DeepSeek-V3", "H200-SXM-141GB", 8, None, 2, 2.0, False),
}


ITL_BLOCK = 64


def fingerprint(res: SimResult) -> dict[str, Any]:
    """What a simulation returns, as JSON values (floats as computed): every per-request array in full; the
    inter-token samples (hundreds of thousands) as sums over consecutive blocks of 64, in order, with their weights
    and classes, which any moved, reordered or missing sample changes."""
    return {
        "arrival_s": res.requests.arrival_s.tolist(),
        "first_token_s": res.first_token_s.tolist(),
        "finish_s": res.finish_s.tolist(),
        "preemptions": res.preemptions.tolist(),
        "itl_samples": int(res.itl_s.size),
        "itl_s_blocks": _blocks(res.itl_s),
        "itl_weighted_blocks": _blocks(res.itl_s * res.itl_weight),
        "itl_weight_blocks": _blocks(res.itl_weight),
        "itl_class_blocks": _blocks(res.itl_class * (1 + np.arange(res.itl_class.size) % 7)),
        "steps": res.steps,
        "drafts": res.drafts,
        "draft_tokens": res.draft_tokens,
        "accepted_tokens": res.accepted_tokens,
        "accepted_per_position": res.accepted_per_position.tolist(),
        "end_s": res.end_s,
        "busy_s": res.busy_s,
    }


def _blocks(values: np.ndarray) -> list[Any]:
    pad = -values.size % ITL_BLOCK
    padded = np.concatenate([values, np.zeros(pad, dtype=values.dtype)])
    out: list[Any] = padded.reshape(-1, ITL_BLOCK).sum(axis=1).tolist()
    return out
