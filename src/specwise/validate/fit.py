"""Fitting the step-time model's free coefficients to the declared training families (and nothing else).

The parameter vector holds, in log space, vLLM V1's GPU efficiencies and floors, its per-step, per-sequence and
per-draft-token costs, SGLang's own engine costs (its efficiencies are shared with vLLM: the same GPUs and kernels), the
lookup proposers' per-match first-token acceptance, and how much an overlapped step's two parts vary from step to step
(``engine.overlap_jitter``: an overlapped step costs their expected maximum, perfmodel/overlap.py). vLLM V0 takes V1's
coefficients with V0's scheduling (no record of V0 is in the training families). The residual of a record is
log(predicted / published) -- the speedup for speculative records, the value for plain decoding -- and anchors (records
whose acceptance was inferred from them) are not residuals.

Two coefficients that the training records barely tell apart from others (a near-flat valley of the cost) carry a prior
from an outside measurement, declared below with its source: a residual ``PRIOR_WEIGHT * ln(value/median) / sigma_ln``
beside the records', so the data can overrule it but a valley does not leave it anywhere. Five engine terms the records
barely or do not determine (vLLM's per-sequence and per-draft-token costs, SGLang's three: a local standard deviation of
0.92-1601 in ln and a 2.4-35x spread across the declared starts of the 2026-12-06 fit), and the overlap jitter added on
2026-12-07 (declared with it, before its fit), carry a weak regulariser instead, labelled as one: a log-normal centred
on the declared initial value with sigma ln 10, no measurement behind it, so that the fit is well-posed (a direction the
records cannot see stays where it was declared rather than wandering with the start) and a record that does see the term
overrules it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from specwise.evidence.records import EvidenceRecord
from specwise.perfmodel.profiles import EngineOverhead, EngineProfile
from specwise.perfmodel.v2 import GpuEfficiency
from specwise.validate.anchor_grid import FGM_CELLS
from specwise.validate.predict import Models, Prediction, Predictor, predict_all


@dataclass(frozen=True)
class Prior:
    """A log-normal prior: ``median`` (in the parameter's own unit: seconds for a ``*_s`` parameter) and the standard
    deviation of ln(value), from ``source``."""

    median: float
    sigma_ln: float
    source: str


@dataclass(frozen=True)
class Param:
    name: str
    initial: float
    low: float
    high: float
    prior: Prior | None = None


F_SCALE = 0.1
"""The soft_l1 loss's scale, in ln(predicted/published): residuals beyond ~10% count linearly, not quadratically."""
PRIOR_WEIGHT = F_SCALE
"""A prior residual at one sigma weighs as much as one record missed by 10% (``F_SCALE``)."""

BASE_PRIOR = Prior(
    1.207e-3,
    math.log(2.0),
    "SpecDecode-Bench's simulator (https://github.com/SpecDecode-Bench/simulator, predictor.py, class Llama8BH100, "
    "'fitted with instructcoder bs=1,8,16,32,64'): overhead_constant_per_step = 1.20683946e-03 s, the authors' "
    "per-step engine time for vLLM 0.10.1 on H100, charged beside a forward pass of its own (target_c_fixed 5.89 ms "
    "+ per-token terms), so the split between the two is that model's",
)
ALLREDUCE_PRIOR = Prior(
    9.2e-6,
    math.log(2.0),
    "sgl-project/sglang PR #2904 (https://github.com/sgl-project/sglang/pull/2904): vLLM's custom all-reduce on "
    "H100, TP 2/4/8, 512 B-32 KB messages, 8.5-11.8 us (median of the nine 9.2 us), without CUDA graphs",
)


REGULARISER_SIGMA_LN = math.log(10.0)
"""A regulariser's width: a factor 10 either way at one sigma (a residual of ``PRIOR_WEIGHT``)."""
REGULARISER = "regulariser, no outside measurement: the declared initial value"


def regulariser(initial: float) -> Prior:
    """The weak prior of a coefficient the training records do not determine: centred on its declared initial value,
    sigma ln 10, its source saying it is a regulariser (``REGULARISER``), not a measurement."""
    return Prior(initial, REGULARISER_SIGMA_LN, REGULARISER)


PARAMS: tuple[Param, ...] = (
    Param("gpu.weights", 0.85, 0.4, 1.0),
    Param("gpu.kv", 0.7, 0.2, 1.0),
    Param("gpu.gemm", 0.75, 0.2, 1.0),
    Param("gpu.link", 0.7, 0.1, 1.0),
    Param("gpu.allreduce_latency_s", 1e-5, 1e-6, 1e-4, ALLREDUCE_PRIOR),
    Param("gpu.pass_floor_s", 2e-4, 1e-6, 5e-3),
    Param("gpu.per_layer_s", 3e-5, 1e-7, 3e-4),
    Param("vllm.base_s", 1.2e-3, 1e-5, 1e-2, BASE_PRIOR),
    Param("vllm.per_seq_s", 1e-5, 1e-8, 5e-4, regulariser(1e-5)),
    Param("vllm.per_draft_token_s", 5e-6, 1e-8, 5e-4, regulariser(5e-6)),
    # its declared initial value is, in effect, vLLM's measured per-step work (BASE_PRIOR), standing in for SGLang's
    Param("sglang.base_s", 1.2e-3, 1e-5, 1e-2, regulariser(1.2e-3)),
    Param("sglang.per_seq_s", 1e-5, 1e-8, 5e-4, regulariser(1e-5)),
    Param("sglang.per_draft_token_s", 5e-6, 1e-8, 5e-4, regulariser(5e-6)),
    Param("lookup.first_given_match", 0.6, 0.2, 0.99),
    # an overlapped step's parts' step-to-step standard deviation, a share of each mean (perfmodel/overlap.py; vLLM
    # and SGLang alike): declared 2026-12-07 before the fit that added it, no measurement behind 0.1; no training
    # record brings the two parts near each other (the shorter at most 8.9% of the longer), so the regulariser holds it
    Param("engine.overlap_jitter", 0.1, 1e-3, 1.0, regulariser(0.1)),
)


GRID_NODES: dict[str, tuple[float, ...]] = {
    "lookup.first_given_match": tuple(j / FGM_CELLS for j in range(1, FGM_CELLS)),
}
"""Coefficients the replay takes on a grid, blending the two nodes around the value (``anchor_grid``): the residuals
are piecewise in them, with a kink at each node."""


def grid_nodes_ln(origin: Sequence[float]) -> dict[int, tuple[float, ...]]:
    """:data:`GRID_NODES` as positions in a parameter vector measured from ``origin`` (log space, ``PARAMS`` order):
    ln(node) - origin, by the coordinate's index (``fit_diagnostics.fd_jacobian``'s ``nodes``)."""
    index = {p.name: i for i, p in enumerate(PARAMS)}
    return {index[name]: tuple(math.log(n) - origin[index[name]] for n in at) for name, at in GRID_NODES.items()}


@dataclass(frozen=True)
class Coefficients:
    profiles: dict[str, EngineProfile]
    first_given_match: float
    values: dict[str, float]


def named(x: Sequence[float]) -> dict[str, float]:
    """The coefficients a parameter vector (log space, ``PARAMS`` order) stands for, by name."""
    return {p.name: float(math.exp(xi)) for p, xi in zip(PARAMS, x, strict=True)}


def with_initial(values: Mapping[str, float]) -> dict[str, float]:
    """Every parameter by name: ``values``' where it names one, the declared initial value where it does not (a fit
    written before a parameter was added); names ``PARAMS`` does not hold are left out."""
    return {p.name: values.get(p.name, p.initial) for p in PARAMS}


def vector(values: Mapping[str, float]) -> np.ndarray:
    """The parameter vector (log space, ``PARAMS`` order) of coefficients given by name: :func:`named`'s inverse."""
    return np.log([values[p.name] for p in PARAMS])


def coefficients(x: Sequence[float]) -> Coefficients:
    """Profiles from a parameter vector (log space, ``PARAMS`` order)."""
    v = named(x)
    gpu = GpuEfficiency(
        weights=v["gpu.weights"],
        kv=v["gpu.kv"],
        gemm=v["gpu.gemm"],
        link=v["gpu.link"],
        allreduce_latency_s=v["gpu.allreduce_latency_s"],
        pass_floor_s=v["gpu.pass_floor_s"],
        per_layer_s=v["gpu.per_layer_s"],
    )
    jitter = v["engine.overlap_jitter"]
    vllm = EngineOverhead(v["vllm.base_s"], v["vllm.per_seq_s"], v["vllm.per_draft_token_s"], overlap_jitter=jitter)
    sglang = EngineOverhead(  # its overlap scheduler hides a plain step's engine work (EngineOverhead)
        v["sglang.base_s"],
        v["sglang.per_seq_s"],
        v["sglang.per_draft_token_s"],
        overlapped_without_speculation=True,
        overlap_jitter=jitter,
    )
    v1 = EngineProfile("vllm-v1", "vLLM V1 (>= 0.8): chunked prefill with speculation", gpu, vllm)
    profiles = {
        "vllm-v1": v1,
        "vllm-v0": replace(
            v1,
            name="vllm-v0",
            description="vLLM V0 (< 0.8): no chunked prefill with speculation, batch-expansion scoring",
            chunked_prefill_with_spec=False,
            batch_expansion_scorer=True,
        ),
        "sglang": EngineProfile("sglang", "SGLang", gpu, sglang),
    }
    return Coefficients(profiles, v["lookup.first_given_match"], v)


def initial() -> np.ndarray:
    return np.log([p.initial for p in PARAMS])


def bounds() -> tuple[np.ndarray, np.ndarray]:
    return np.log([p.low for p in PARAMS]), np.log([p.high for p in PARAMS])


def predictions(records: Sequence[EvidenceRecord], x: Sequence[float]) -> list[Prediction]:
    c = coefficients(x)
    return predict_all(records, Predictor(c.profiles, Models("v2"), c.first_given_match))


def residuals(records: Sequence[EvidenceRecord], x: Sequence[float]) -> np.ndarray:
    """log(predicted / published) of every predicted record (anchors, skips and unreplayables excluded)."""
    out = []
    for p in predictions(records, x):
        if p.status == "predicted":
            r = p.ratio
            out.append(math.log(r) if r is not None and r > 0 and math.isfinite(r) else math.log(10.0))
    return np.array(out, dtype=np.float64)


def prior_residuals(x: Sequence[float]) -> np.ndarray:
    """``PRIOR_WEIGHT * (x - ln median) / sigma_ln`` for each parameter with a prior (``PARAMS`` order)."""
    return np.array(
        [
            PRIOR_WEIGHT * (xi - math.log(p.prior.median)) / p.prior.sigma_ln
            for p, xi in zip(PARAMS, x, strict=True)
            if p.prior
        ],
        dtype=np.float64,
    )


def objective(records: Sequence[EvidenceRecord], x: Sequence[float]) -> np.ndarray:
    """What the fit minimises (through its loss): the records' residuals, then the priors'."""
    return np.concatenate([residuals(records, x), prior_residuals(x)])
