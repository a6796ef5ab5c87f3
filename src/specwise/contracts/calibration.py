"""``specwise.calibration/1``: a step-time law fitted to a real server's measured engine steps
(``specwise bench --launch ... --calibrate``), and how well the simulator replaying that run with it predicts the
measured speedups.

The law is SpecDecode-Bench's linear form with a roofline knee (Liu et al. 2026, ``simulator/predictor.py``):
``t = per_kv_token_s * kv_tokens + per_batched_token_s * max(batched_tokens - free_batched_tokens, 0) +
constant_s``; each speculative configuration gets one factor on its proposer's cost (``draft_cost_scale``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specwise.contracts.document import (
    CALIBRATE_A_BENCH_RUN,
    DocumentError,
    Fields,
    JsonObject,
    Schema,
    is_bench_result,
    read_json_file,
)
from specwise.contracts.sweep import DEFAULT_BAND, P80_REPLAY_ERROR, RMS_FIT_ERROR
from specwise.engines import ENGINES
from specwise.engines.vllm_versions import VllmVersion
from specwise.errors import SpecwiseError
from specwise.specs.model import checkpoint_name

SCHEMA = Schema("specwise.calibration", 1)
_CALIBRATION_KEYS = frozenset({"predictor", "points", "configs"})  # a schema-less calibration has one of them


def is_calibration_text(text: str) -> bool:
    """Whether ``text`` is a calibration file's (a JSON object of this schema, any version): one ``calibrate --out``
    or ``bench --calibration-out`` may write again."""
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    if doc.get("schema") is None:  # an older specwise's, known by its keys as _check_schema knows it
        return bool(_CALIBRATION_KEYS & set(doc))
    return str(doc.get("schema")).startswith(SCHEMA.kind + "/")


# a draft pass (draft model) or a step's speculation overhead (lookup) in target passes: the fit gives a draft model a
# fraction of the target (0.3 for a 0.5B draft of a 1.5B target on the CPU build, bench/results/vllm_qwen_bench.json)
# and a lookup a few percent; above this the file was edited or fitted on noise
MAX_DRAFT_COST_SCALE = 10.0
# the law's fixed cost of one step, in seconds: the slowest server this project calibrated (vLLM's CPU build serving
# Qwen2.5-Coder 1.5B, bench/results/vllm_qwen_bench.json) costs 0.35 s a step; a fixed 10 s -- one token every 10 s
# for every sequence, at any batch -- is no server anyone serves from, but an edited file or milliseconds written as
# seconds (0.35 s as 350)
MAX_CONSTANT_S = 10.0
FORM = (
    "t = per_kv_token_s * kv_tokens + per_batched_token_s * max(batched_tokens - free_batched_tokens, 0) + constant_s"
)


def _at_least(f: Fields, key: str, lowest: int, default: int) -> int:
    """An integer count of steps, ``lowest`` or more (``default`` when absent)."""
    value = f.integer(key, default, low=lowest, what="steps counted")
    return default if value is None else value


@dataclass(frozen=True)
class StepPoint:
    """The mean of ``samples`` observed engine steps of one shape class (config, level, decode batch, prefill);
    ``outliers``: the class's step timings left out of the fit, far over what the law predicts for their shape:
    engine stalls, or steps that also prefilled a chunk of a prompt not yet answered (``calibration.fit.fit``)."""

    config: str
    level: int
    num_seqs: int
    prefill_tokens: float
    kv_tokens: float
    batched_tokens: float
    time_s: float
    samples: int
    outliers: int = 0

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
            samples=_at_least(f, "samples", 1, 1),
            outliers=_at_least(f, "outliers", 0, 0),
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
    concurrency: int | None = None  # the level's --max-concurrency (None: not capped)

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
            concurrency=f.integer("concurrency"),
        )


@dataclass(frozen=True)
class CalibratedConfig:
    """One launched configuration: its speculation (None: the baseline) and k."""

    name: str
    method: str | None
    model: str | None
    k: int


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
    configs: tuple[CalibratedConfig, ...] = ()
    engine: str = "vllm"
    engine_version: str | None = None
    hardware: str | None = None  # what the server ran on, as the run saw it
    tensor_parallel_size: int | None = None  # the server's tensor parallelism (None: not recorded, an older file)
    target: str | None = None  # the served model
    extra: JsonObject = field(default_factory=dict)  # fields a newer writer adds
    # step timings left out of the fit: the points' outliers and the shape classes that kept none (calibration.fit)
    outlier_steps: int = 0

    def config_for(self, method: str, draft: str | None) -> CalibratedConfig | None:
        """The calibrated configuration that proposes like ``method`` (for a draft model, the same draft by name
        when more than one was calibrated)."""
        same = [c for c in self.configs if c.method == method and c.name in self.draft_cost_scale]
        if len(same) > 1 and draft:
            named = [c for c in same if c.model and checkpoint_name(c.model) == checkpoint_name(draft)]
            same = named or same
        return same[0] if same else None

    def _replay_band(self) -> float | None:
        """80th percentile of |predicted / measured speedup - 1| over the replayed speculative levels."""
        errs = sorted(
            abs(r.predicted_speedup_tpot / r.measured_speedup_tpot - 1.0)
            for r in self.rows
            if r.config != self.base_config and r.predicted_speedup_tpot and r.measured_speedup_tpot
        )
        return errs[min(len(errs) - 1, int(0.8 * len(errs)))] if errs else None

    def speedup_band(self) -> float:
        """The relative error a calibrated speedup carries: the replay error of the measured levels, never below
        the law's step-time fit error (RMS over the mean step) -- the replayed levels are the ones the law was
        fitted to, so their error alone understates it (it can be 0); with neither known, 25%."""
        known = [x for x in (self._replay_band(), self.fit_relative_rms_error) if x is not None]
        return max(known) if known else 0.25

    def band_statistic(self) -> str:
        """Which statistic :meth:`speedup_band` is: the law's RMS step-time fit error (over the mean step), the
        replay's 80th percentile speedup error, or a default (``contracts.sweep``'s statistic names)."""
        replay, fit = self._replay_band(), self.fit_relative_rms_error
        if replay is None and fit is None:
            return DEFAULT_BAND
        if fit is not None and (replay is None or fit >= replay):
            return RMS_FIT_ERROR
        return P80_REPLAY_ERROR

    def band_source(self) -> str:
        """Where :meth:`speedup_band` comes from, in words (:meth:`band_statistic` says which statistic it is)."""
        statistic = self.band_statistic()
        if statistic == DEFAULT_BAND:
            return f"no measurement: a default, since the calibrated run {self.run_id} has no level to replay or fit"
        if statistic == RMS_FIT_ERROR:
            replay = self._replay_band()
            return f"the calibrated run {self.run_id}, relative to its mean step; " + (
                "no level replayed" if replay is None else f"its levels' in-sample replay error is {replay:.0%}"
            )
        return f"the calibrated run {self.run_id}'s levels (predicted vs measured speedup per level)"

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
                "outlier_steps": self.outlier_steps,
            },
            "draft_cost_scale": dict(self.draft_cost_scale),
            "points": [asdict(p) for p in self.points],
            "rows": [asdict(r) for r in self.rows],
            "mean_abs_speedup_error": self.mean_abs_speedup_error,
            "max_abs_speedup_error": self.max_abs_speedup_error,
            **({"base_config": self.base_config} if self.base_config else {}),
            "schema": SCHEMA.id,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "hardware": self.hardware,
            "tensor_parallel_size": self.tensor_parallel_size,
            "target": self.target,
            "configs": [asdict(c) for c in self.configs],
            **dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "calibration") -> CalibrationDoc:
        if "predictor" not in data and is_bench_result(data):  # a calibration lists configs too
            raise DocumentError(f"{where}: is a specwise bench result, not a calibration: {CALIBRATE_A_BENCH_RUN}")
        _check_schema(data, where)
        f = Fields(data, where)
        engine, engine_version, target = _identity(f)
        pred = f.object("predictor")
        if pred is None:
            raise f.fail("predictor", "missing: not a specwise calibration")
        scales = f.object("draft_cost_scale")
        rows = tuple(CalibrationRow.from_json(r) for r in f.objects("rows"))
        known = {"run_id", "predictor", "draft_cost_scale", "points", "rows", "mean_abs_speedup_error"}
        known |= {"max_abs_speedup_error", "base_config", "schema", "engine", "engine_version", "hardware", "target"}
        known |= {"configs", "tensor_parallel_size"}
        points = tuple(StepPoint.from_json(p) for p in f.objects("points"))
        law = StepLaw(
            per_kv_token_s=pred.number("per_kv_token_s", required=True) or 0.0,
            per_batched_token_s=pred.number("per_batched_token_s", required=True) or 0.0,
            constant_s=pred.number("constant_s", required=True) or 0.0,
            free_batched_tokens=pred.number("free_batched_tokens", 0.0) or 0.0,
        )
        _check_law(law, pred)
        if scales is not None and (bad := [k for k in scales.data if (scales.number(k) or 0.0) < 0]):
            raise f.fail("draft_cost_scale", f"{', '.join(bad)}: negative (a draft pass costs >= 0 target passes)")
        if scales is not None and (big := [k for k in scales.data if (scales.number(k) or 0.0) > MAX_DRAFT_COST_SCALE]):
            raise f.fail(
                "draft_cost_scale",
                f"{', '.join(big)}: above {MAX_DRAFT_COST_SCALE:g} (a proposer costing more than "
                f"{MAX_DRAFT_COST_SCALE:g} target passes per step is no fit of a real server; an edited file?)",
            )
        return cls(
            run_id=f.text("run_id", "") or "",
            law=law,
            fit_points=pred.integer("fit_points", 0) or 0,
            fit_relative_rms_error=_fit_error(pred),
            draft_cost_scale={k: scales.number(k, required=True) or 0.0 for k in scales.data} if scales else {},
            points=points,
            outlier_steps=_at_least(pred, "outlier_steps", 0, sum(p.outliers for p in points)),
            rows=rows,
            base_config=f.text("base_config", rows[0].config if rows else "") or "",
            configs=tuple(
                CalibratedConfig(c.text("name", "") or "", c.text("method"), c.text("model"), c.integer("k", 0) or 0)
                for c in f.objects("configs")
            ),
            engine=engine,
            engine_version=engine_version,
            hardware=f.text("hardware"),
            tensor_parallel_size=_tensor_parallel(f),
            target=target,
            extra={k: v for k, v in data.items() if k not in known},
        )

    @classmethod
    def read(cls, path: Path) -> CalibrationDoc:
        """A calibration file: ``bench --calibrate``'s own file, or a bench result that carries one. A ``vllm bench
        serve`` result (one object, or one per line) is refused with the command that fits one from it."""
        try:
            data = read_json_file(path, "calibration")
        except DocumentError:
            _refuse_vllm_result(path)
            raise
        _refuse_vllm_result(path, data)
        if "calibration" in data and isinstance(data["calibration"], Mapping):
            data = data["calibration"]
        return cls.from_json(data, str(path))


def _refuse_vllm_result(path: Path, data: JsonObject | None = None) -> None:
    """Raise when ``path`` holds ``vllm bench serve`` results (easily taken for a calibration): they are its input."""
    from specwise.contracts.bench_formats import is_vllm_result, read_objects  # bench formats read calibrations' input
    from specwise.contracts.vllm_detailed import DETAILED

    try:
        objects = [data] if data is not None else read_objects(path)
    except DocumentError:
        return
    if objects and all(is_vllm_result(o) for o in objects):
        if not all(all(key in o for key in DETAILED) for o in objects):  # no per-request timings: nothing to fit
            raise DocumentError(
                f"{path}: a vllm bench serve result, not a calibration, and saved without --save-detailed, so no "
                "calibration can be fitted from it (it has no per-request timings): re-run vllm bench serve with "
                "--save-result --save-detailed for the baseline and each speculative config, fit them with specwise "
                "calibrate FILE... --out cal.json, then pass --calibration cal.json"
            )
        raise DocumentError(
            f"{path}: a vllm bench serve result, not a calibration: fit one from it first with specwise calibrate "
            f"{path} --out cal.json (its files: the baseline's and the speculative runs' --save-detailed results), "
            "then pass --calibration cal.json"
        )


def _check_schema(data: JsonObject, where: str) -> None:
    """Every specwise that writes a calibration's configurations and target model writes its ``schema`` with them
    (they came in one change), so a file without one is an older specwise's -- which simulate and advise cannot use
    -- or an edited one: said as the missing field, not taken for another document."""
    if data.get("schema") is None and not _CALIBRATION_KEYS & set(data):
        other = f"keys {', '.join(sorted(data)[:5])}" if data else "an empty object"
        raise DocumentError(  # review s59 F4: any JSON without a schema was "an older specwise's calibration"
            f"{where}: not a specwise calibration (no schema, and none of a calibration's predictor, points or "
            f"configs: {other}). How to make one: {CALIBRATE_A_BENCH_RUN}"
        )
    if data.get("schema") is None and "configs" not in data:
        raise DocumentError(
            f"{where}: schema: missing: this calibration was written by an older specwise: it records no "
            f"configurations and no target model, which simulate and advise need; make it again: "
            f"{CALIBRATE_A_BENCH_RUN}"
        )
    if data.get("schema") is None:
        raise DocumentError(
            f'{where}: schema: missing: every calibration specwise writes says "schema": "{SCHEMA.id}" (an edited '
            "file?)"
        )
    SCHEMA.check(data, where)


def _identity(f: Fields) -> tuple[str, str | None, str]:
    """The server the law was measured on: its engine (one specwise knows), the engine's version when recorded (a
    version number, as ``--engine-version`` and a scenario's ``[deployment].engine_version`` take it:
    :meth:`~specwise.engines.vllm_versions.VllmVersion.parse`), and the target model, without which the law would
    price any model (:func:`specwise.perfmodel.calibration_match.check_identity` refuses another model's law); the
    batch limits the replay ran at (``server``, where recorded) are counts >= 1."""
    engine = f.choice("engine", tuple(ENGINES))
    version = f.text("engine_version")
    if version is not None:
        try:
            VllmVersion.parse(version)
        except SpecwiseError:
            raise f.fail("engine_version", f"{version!r}: expected a version like 0.15 or 0.10.1") from None
    target = f.text("target")
    if target is None or not target.strip():
        raise f.fail(
            "target",
            f"missing: the calibration does not say which model it measured, and a step-time law does not carry "
            f"across models; make it again: {CALIBRATE_A_BENCH_RUN}",
        )
    if (server := f.object("server")) is not None:
        for key in ("max_num_seqs", "max_num_batched_tokens"):
            server.integer(key, low=1)
    return engine, version, target


def _check_law(law: StepLaw, pred: Fields) -> None:
    """A step time is positive and grows with work: no coefficient below 0, not all 0 (the fitter is non-negative
    least squares, so only an edited file breaks this); a fixed cost over MAX_CONSTANT_S a step is no server's."""
    for key in ("per_kv_token_s", "per_batched_token_s", "constant_s", "free_batched_tokens"):
        if getattr(law, key) < 0:
            raise pred.fail(key, f"{getattr(law, key)!r}: negative (a step cannot take less time with more work)")
    if law.per_kv_token_s + law.per_batched_token_s + law.constant_s <= 0:
        raise pred.fail("constant_s", "every coefficient is 0: that law gives steps that take no time")
    if law.constant_s > MAX_CONSTANT_S:
        raise pred.fail(
            "constant_s",
            f"{law.constant_s!r}: over {MAX_CONSTANT_S:g} s per step before any work (the slowest server calibrated, "
            "a CPU build, costs 0.35 s); an edited file, or milliseconds written as seconds?",
        )


def _fit_error(pred: Fields) -> float | None:
    """The law's relative RMS step-time error (CV(RMSE)), 0 or more and under 1: a calibrated speedup's band is
    speedup x (1 +- it) (:meth:`CalibrationDoc.speedup_band`), which reaches 0 at 1, and a law off by the whole mean
    step or more is no fit."""
    value = pred.number("fit_relative_rms_error")
    if value is not None and not 0.0 <= value < 1.0:
        raise pred.fail(
            "fit_relative_rms_error",
            f"{value!r}: must be 0 or more and under 1 (the RMS step-time error over the mean step; at 1 the law "
            "misses by the whole step, and a negative error is none)",
        )
    return value


def _tensor_parallel(f: Fields) -> int | None:
    """The calibrated server's tensor parallelism: absent or null in files written before it was recorded."""
    return f.integer("tensor_parallel_size", low=1, what="GPUs the model is split over")
