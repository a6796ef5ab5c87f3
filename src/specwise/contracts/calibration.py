"""``specwise.calibration/1``: a step-time law fitted to a real server's measured engine steps
(``specwise bench --launch ... --calibrate``), and how well the simulator replaying that run with it predicts the
measured speedups.

The law is SpecDecode-Bench's linear form with a roofline knee (Liu et al. 2026, ``simulator/predictor.py``):
``t = per_kv_token_s * kv_tokens + per_batched_token_s * max(batched_tokens - free_batched_tokens, 0) +
constant_s``; each speculative configuration gets one factor on its proposer's cost (``draft_cost_scale``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from specwise.contracts.document import Fields, JsonObject, Schema

SCHEMA = Schema("specwise.calibration", 1)
FORM = (
    "t = per_kv_token_s * kv_tokens + per_batched_token_s * max(batched_tokens - free_batched_tokens, 0) + constant_s"
)


@dataclass(frozen=True)
class StepPoint:
    """The mean of ``samples`` observed engine steps of one shape class (config, level, decode batch, prefill)."""

    config: str
    level: int
    num_seqs: int
    prefill_tokens: float
    kv_tokens: float
    batched_tokens: float
    time_s: float
    samples: int

    @classmethod
    def from_json(cls, f: Fields) -> StepPoint:
        return cls(
            config=f.text("config", "") or "",
            level=f.integer("level", 0) or 0,
            num_seqs=f.integer("num_seqs", 0) or 0,
            prefill_tokens=f.number("prefill_tokens", 0.0) or 0.0,
            kv_tokens=f.number("kv_tokens", required=True) or 0.0,
            batched_tokens=f.number("batched_tokens", required=True) or 0.0,
            time_s=f.number("time_s", required=True) or 0.0,
            samples=f.integer("samples", 1) or 1,
        )


@dataclass(frozen=True)
class StepLaw:
    per_kv_token_s: float
    per_batched_token_s: float
    constant_s: float
    free_batched_tokens: float = 0.0


@dataclass(frozen=True)
class CalibrationRow:
    """One (config, level) replayed: measured vs predicted TPOT p50 and speedup vs the first config."""

    config: str
    level: int
    rate_per_s: float | None
    measured_tpot_p50_s: float | None
    predicted_tpot_p50_s: float | None
    measured_speedup_tpot: float | None
    predicted_speedup_tpot: float | None
    speedup_error: float | None

    @classmethod
    def from_json(cls, f: Fields) -> CalibrationRow:
        return cls(
            config=f.text("config", "") or "",
            level=f.integer("level", 0) or 0,
            rate_per_s=f.number("rate_per_s"),
            measured_tpot_p50_s=f.number("measured_tpot_p50_s"),
            predicted_tpot_p50_s=f.number("predicted_tpot_p50_s"),
            measured_speedup_tpot=f.number("measured_speedup_tpot"),
            predicted_speedup_tpot=f.number("predicted_speedup_tpot"),
            speedup_error=f.number("speedup_error"),
        )


@dataclass(frozen=True)
class CalibrationDoc:
    run_id: str
    law: StepLaw
    fit_points: int
    fit_relative_rms_error: float | None
    draft_cost_scale: Mapping[str, float]
    points: tuple[StepPoint, ...] = ()
    rows: tuple[CalibrationRow, ...] = ()
    base_config: str = ""  # the configuration the rows' speedups are relative to
    extra: JsonObject = field(default_factory=dict)  # provenance a newer writer adds (engine, hardware, models)

    def _errors(self) -> list[float]:
        return [abs(r.speedup_error) for r in self.rows if r.speedup_error is not None and r.config != self.base_config]

    @property
    def mean_abs_speedup_error(self) -> float | None:
        errors = self._errors()
        return sum(errors) / len(errors) if errors else None

    @property
    def max_abs_speedup_error(self) -> float | None:
        errors = self._errors()
        return max(errors) if errors else None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "predictor": {
                "form": FORM,
                "free_batched_tokens": self.law.free_batched_tokens,
                "per_kv_token_s": self.law.per_kv_token_s,
                "per_batched_token_s": self.law.per_batched_token_s,
                "constant_s": self.law.constant_s,
                "fit_points": self.fit_points,
                "fit_relative_rms_error": self.fit_relative_rms_error,
            },
            "draft_cost_scale": dict(self.draft_cost_scale),
            "points": [asdict(p) for p in self.points],
            "rows": [asdict(r) for r in self.rows],
            "mean_abs_speedup_error": self.mean_abs_speedup_error,
            "max_abs_speedup_error": self.max_abs_speedup_error,
            **({"base_config": self.base_config} if self.base_config else {}),
            **dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "calibration") -> CalibrationDoc:
        SCHEMA.check(data, where, required=False)
        f = Fields(data, where)
        pred = f.object("predictor")
        if pred is None:
            raise f.fail("predictor", "missing: not a specwise calibration")
        scales = f.object("draft_cost_scale")
        rows = tuple(CalibrationRow.from_json(r) for r in f.objects("rows"))
        known = {"run_id", "predictor", "draft_cost_scale", "points", "rows", "mean_abs_speedup_error"}
        known |= {"max_abs_speedup_error", "base_config", "schema"}
        return cls(
            run_id=f.text("run_id", "") or "",
            law=StepLaw(
                per_kv_token_s=pred.number("per_kv_token_s", required=True) or 0.0,
                per_batched_token_s=pred.number("per_batched_token_s", required=True) or 0.0,
                constant_s=pred.number("constant_s", required=True) or 0.0,
                free_batched_tokens=pred.number("free_batched_tokens", 0.0) or 0.0,
            ),
            fit_points=pred.integer("fit_points", 0) or 0,
            fit_relative_rms_error=pred.number("fit_relative_rms_error"),
            draft_cost_scale={k: scales.number(k, required=True) or 0.0 for k in scales.data} if scales else {},
            points=tuple(StepPoint.from_json(p) for p in f.objects("points")),
            rows=rows,
            base_config=f.text("base_config", rows[0].config if rows else "") or "",
            extra={k: v for k, v in data.items() if k not in known},
        )
