"""Read and validate a scenario TOML file (documented with an example in ``examples/``).

Every error is one line naming the file and the field, e.g.
``scenario.toml: [[workload]] #2 'chat'.acceptance: must be in [0, 1], got 1.3``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specwise.acceptance.model import AcceptanceModel
from specwise.catalog import resolve_draft, resolve_gpu, resolve_model
from specwise.compat.pair import check_pair
from specwise.errors import SpecError, SpecwiseError
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.scenario.model import DECISION_METRICS, METHODS, Scenario, SweepSpec
from specwise.sim.distributions import Arrivals, LengthDist
from specwise.sim.workload import WorkloadClass
from specwise.specs.draft import DraftChoice

_MISSING = object()


class _Section:
    def __init__(self, data: Any, where: str, file: str) -> None:
        if not isinstance(data, Mapping):
            raise SpecwiseError(f"{file}: {where}: expected a table")
        self.data, self.where, self.file = data, where, file

    def check_keys(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise SpecwiseError(
                f"{self.file}: {self.where}: unknown key(s): {', '.join(unknown)} "
                f"(allowed: {', '.join(sorted(allowed))})"
            )

    def fail(self, key: str, message: str) -> SpecwiseError:
        return SpecwiseError(f"{self.file}: {self.where}.{key}: {message}")

    def get(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.data:
            if default is _MISSING:
                raise self.fail(key, "required field is missing")
            return default
        return self.data[key]

    def string(self, key: str, default: Any = _MISSING) -> Any:
        value = self.get(key, default)
        if value is not default and not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {value!r}")
        return value

    def positive_int(self, key: str, default: Any = _MISSING) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(key, f"must be a positive integer, got {value!r}")
        return value

    def number(
        self,
        key: str,
        default: Any = _MISSING,
        *,
        low: float | None = None,
        high: float | None = None,
        strict_low: bool = False,
    ) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, got {value!r}")
        if low is not None and (value < low or (strict_low and value == low)):
            raise self.fail(key, f"must be {'>' if strict_low else '>='} {low}, got {value}")
        if high is not None and value > high:
            raise self.fail(key, f"must be <= {high}, got {value}")
        return float(value)

    def number_list(self, key: str, default: Any = _MISSING) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        ):
            raise self.fail(key, f"must be a non-empty list of numbers, got {value!r}")
        return [float(v) for v in value]


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecwiseError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecwiseError(f"{path}: cannot read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecwiseError(f"{path}: invalid TOML: {exc}") from None
    return parse_scenario(data, file=str(path), base_dir=path.parent)


def parse_scenario(data: Mapping[str, Any], *, file: str = "scenario", base_dir: Path | None = None) -> Scenario:
    root = _Section(data, "scenario", file)
    unknown = set(data) - {"name", "deployment", "speculation", "sweep", "workload"}
    if unknown:
        raise SpecwiseError(f"{file}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    dep = _Section(root.get("deployment"), "[deployment]", file)
    spec = _Section(root.get("speculation"), "[speculation]", file)
    sweep = _Section(root.get("sweep", {}), "[sweep]", file)
    dep.check_keys(
        {
            "target",
            "gpu",
            "tp",
            "max_model_len",
            "gpu_memory_utilization",
            "max_num_seqs",
            "max_num_batched_tokens",
            "quantization",
            "kv_cache_dtype",
        }
    )
    spec.check_keys(
        {
            "method",
            "draft",
            "draft_tp",
            "draft_quantization",
            "k",
            "k_schedule",
            "acceptance",
            "per_position",
            "profile",
            "drafting",
        }
    )
    sweep.check_keys(
        {"qps", "num_requests", "seed", "arrivals", "burstiness_cv", "warmup_fraction", "trace_file", "decision_metric"}
    )
    metric = sweep.string("decision_metric", "e2e")
    if metric not in DECISION_METRICS:
        raise sweep.fail("decision_metric", f"expected one of {', '.join(DECISION_METRICS)}, got {metric!r}")
    target = resolve_model(dep.string("target"))
    gpu = resolve_gpu(dep.string("gpu"))
    tp = dep.positive_int("tp", 1)
    warnings: list[str] = []

    method = spec.string("method")
    if method not in METHODS:
        raise spec.fail("method", f"expected one of {', '.join(METHODS)}, got {method!r}")
    draft_choice: DraftChoice | None
    if method in ("ngram", "suffix"):
        draft_choice = DraftChoice(kind=method)
    elif method == "mtp":
        draft_choice, _ = resolve_draft("mtp", target)
    else:
        draft_choice, trained_for = resolve_draft(spec.string("draft"), target)
        assert draft_choice.spec is not None
        report = check_pair(target, draft_choice.spec, head_trained_for=trained_for)
        warnings += [f"draft/target: {f.message}" for f in report.findings if f.status == "fail"]
    draft_spec = draft_choice.spec if draft_choice else None
    draft_tp = spec.positive_int("draft_tp", tp)

    k_values = spec.get("k", [0, 1, 2, 3, 4, 5, 6, 7, 8])
    if (
        not isinstance(k_values, list)
        or not k_values
        or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= 16 for k in k_values)
    ):
        raise spec.fail("k", f"must be a non-empty list of integers in 0..16, got {k_values!r}")
    k_values = sorted(set(k_values) | {0})
    schedule = _k_schedule(spec)
    _acceptance(spec, base_dir, None, None)  # validate [speculation]'s acceptance once, before the classes

    workloads = root.get("workload")
    if not isinstance(workloads, list) or not workloads:
        raise SpecwiseError(f"{file}: at least one [[workload]] table is required")
    classes = []
    for i, raw in enumerate(workloads, start=1):
        w = _Section(raw, f"[[workload]] #{i}", file)
        w.check_keys(
            {
                "name",
                "share",
                "temperature",
                "prompt_tokens",
                "output_tokens",
                "slo_ttft_s",
                "slo_tpot_s",
                "acceptance",
                "per_position",
                "profile",
                "drafting",
            }
        )
        name = w.string("name", f"class{i}")
        w.where = f"[[workload]] #{i} {name!r}"
        temperature = w.number("temperature", 0.0, low=0.0)
        # A class's own acceptance wins; else [speculation]'s (a profile resolves per class and temperature).
        acc = _acceptance(w, base_dir, temperature, name) or _acceptance(spec, base_dir, temperature, name)
        if acc is None:
            raise w.fail(
                "acceptance", "no acceptance given: set acceptance / per_position / profile here or in [speculation]"
            )
        try:
            classes.append(
                WorkloadClass(
                    name=name,
                    share=w.number("share", 1.0, low=0.0, strict_low=True),
                    prompt_tokens=_length(w, "prompt_tokens"),
                    output_tokens=_length(w, "output_tokens"),
                    acceptance=acc,
                    temperature=temperature,
                    slo_ttft_s=w.number("slo_ttft_s", None, low=0.0, strict_low=True),
                    slo_tpot_s=w.number("slo_tpot_s", None, low=0.0, strict_low=True),
                )
            )
        except SpecError as exc:
            raise SpecwiseError(f"{file}: {w.where}: {exc}") from None

    qps = sweep.number_list("qps", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    if any(q <= 0 for q in qps):
        raise sweep.fail("qps", f"rates must be > 0, got {qps}")
    kind = sweep.string("arrivals", "poisson")
    if kind not in ("poisson", "gamma", "constant", "trace"):
        raise sweep.fail("arrivals", f"expected poisson, gamma, constant or trace, got {kind!r}")
    cv = sweep.number("burstiness_cv", 1.0, low=0.0, strict_low=True)
    trace: tuple[float, ...] = _read_trace(sweep, base_dir) if kind == "trace" else ()
    sweep_spec = SweepSpec(
        qps=tuple(sorted(qps)),
        k_values=tuple(k_values),
        num_requests=sweep.positive_int("num_requests", 1000),
        seed=int(sweep.number("seed", 0, low=0)),
        arrivals=Arrivals(kind, qps[0], cv, trace),
        warmup_fraction=sweep.number("warmup_fraction", 0.1, low=0.0, high=0.9),
    )

    if metric == "goodput" and not any(c.slo_ttft_s or c.slo_tpot_s for c in classes):
        raise sweep.fail("decision_metric", "goodput needs slo_ttft_s or slo_tpot_s on at least one [[workload]]")
    plan = plan_memory(
        MemoryPlanRequest(
            target=target,
            gpu=gpu,
            tp=tp,
            num_gpus=tp,
            draft=draft_choice,
            draft_tp=draft_tp if draft_spec else None,
            quantization=dep.string("quantization", "auto"),
            draft_quantization=spec.string("draft_quantization", "auto"),
            kv_cache_dtype=dep.string("kv_cache_dtype", "auto"),
            max_model_len=dep.positive_int("max_model_len", None),
            gpu_memory_utilization=dep.number("gpu_memory_utilization", 0.9, low=0.0, high=1.0, strict_low=True),
            max_num_seqs=dep.positive_int("max_num_seqs", 256),
            max_num_batched_tokens=dep.positive_int("max_num_batched_tokens", 8192),
            num_speculative_tokens=max(1, max(k_values)),
        )
    )
    if not plan.fits_without_draft:
        raise SpecwiseError(f"{file}: [deployment]: the target does not fit: {'; '.join(plan.problems)}")
    if not plan.fits:
        warnings.append(
            "with the draft the deployment does not fit ("
            + "; ".join(plan.problems)
            + "); speculation rows are simulated anyway with the KV left"
        )
    return Scenario(
        name=str(root.get("name", Path(file).stem)),
        target=target,
        gpu=gpu,
        tp=tp,
        method=method,
        draft=draft_spec,
        draft_tp=draft_tp,
        classes=tuple(classes),
        sweep=sweep_spec,
        max_num_seqs=dep.positive_int("max_num_seqs", 256),
        max_num_batched_tokens=dep.positive_int("max_num_batched_tokens", 8192),
        kv_cache_tokens=max(plan.kv_cache_tokens, 0),
        kv_cache_tokens_without_draft=plan.kv_cache_tokens_without_draft,
        k_schedule=schedule,
        warnings=tuple(warnings + list(plan.warnings)),
        decision_metric=metric,
        memory_plan=plan,
    )


def _read_trace(sweep: _Section, base_dir: Path | None) -> tuple[float, ...]:
    """Arrival times in seconds, one per line (a CSV's first column; '#' comments and a header skipped)."""
    path = Path(sweep.string("trace_file"))
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise sweep.fail("trace_file", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise sweep.fail("trace_file", f"{path}: cannot read ({exc})") from None
    times: list[float] = []
    for number, line in enumerate(lines, start=1):
        field = line.split("#", 1)[0].split(",", 1)[0].strip()
        if not field:
            continue
        try:
            times.append(float(field))
        except ValueError:
            if times:
                raise sweep.fail("trace_file", f"{path}:{number}: not a time in seconds: {field!r}") from None
    if len(times) < 2:
        raise sweep.fail("trace_file", f"{path}: needs at least two arrival times")
    try:
        Arrivals("trace", 1.0, 1.0, tuple(times))
    except SpecError as exc:
        raise sweep.fail("trace_file", f"{path}: {exc}") from None
    return tuple(times)


def _k_schedule(spec: _Section) -> tuple[tuple[int, int, int], ...]:
    raw = spec.get("k_schedule", [])
    if not isinstance(raw, list) or not all(
        isinstance(e, list) and len(e) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in e)
        for e in raw
    ):
        raise spec.fail("k_schedule", "must be a list of [first_batch, last_batch, k] integer triples")
    out = []
    prev_end = 0
    for start, end, k in raw:
        if start < 1 or end < start or k < 0 or start <= prev_end:
            raise spec.fail("k_schedule", f"bad or overlapping entry [{start}, {end}, {k}]")
        prev_end = end
        out.append((start, end, k))
    return tuple(out)


def _length(w: _Section, key: str) -> LengthDist:
    raw = w.get(key)
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 1:
            raise w.fail(key, f"must be >= 1, got {raw}")
        return LengthDist("fixed", float(raw), 0.0, 1, max(1, raw))
    d = _Section(raw, f"{w.where}.{key}", w.file)
    d.check_keys({"dist", "mean", "cv", "min", "max"})
    kind = d.string("dist", "fixed")
    try:
        return LengthDist(
            kind=kind,
            mean=d.number("mean", 0.0 if kind == "uniform" else _MISSING),
            cv=d.number("cv", 0.0, low=0.0),
            min=d.positive_int("min", 1),
            max=d.positive_int("max", 1_000_000),
        )
    except SpecError as exc:
        raise SpecwiseError(f"{w.file}: {w.where}.{key}: {exc}") from None


def _acceptance(
    s: _Section, base_dir: Path | None, temperature: float | None, class_name: str | None
) -> AcceptanceModel | None:
    given = [k for k in ("acceptance", "per_position", "profile") if k in s.data]
    if len(given) > 1:
        raise s.fail(given[1], f"give only one of acceptance, per_position, profile (got {', '.join(given)})")
    try:
        if "acceptance" in s.data:
            return AcceptanceModel.iid(s.number("acceptance", low=0.0, high=1.0))
        if "per_position" in s.data:
            return AcceptanceModel.from_per_position(s.number_list("per_position"))
    except SpecError as exc:
        raise SpecwiseError(f"{s.file}: {s.where}: {exc}") from None
    if "profile" in s.data:
        path = Path(s.string("profile"))
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        drafting = s.string("drafting", "greedy")
        return _acceptance_from_profile(path, drafting, temperature or 0.0, class_name, s)
    return None


def _acceptance_from_profile(
    path: Path, drafting: str, temperature: float, class_name: str | None, s: _Section
) -> AcceptanceModel:
    """Pick a result of a ``specwise profile`` JSON: same drafting mode and class, nearest temperature."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise s.fail("profile", f"{path}: no such file") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise s.fail("profile", f"{path}: not a readable JSON profile ({exc})") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not results:
        raise s.fail("profile", f"{path}: has no 'results' list")
    candidates = [
        r
        for r in results
        if isinstance(r, dict)
        and r.get("drafting", "greedy") == drafting
        and not r.get("quantization")
        and r.get("class") in (class_name, None)
        and isinstance(r.get("per_position_acceptance"), list)
    ]
    if not candidates:
        raise s.fail("profile", f"{path}: no result with drafting={drafting!r} for class {class_name!r}")
    exact = [r for r in candidates if r.get("class") == class_name] or candidates
    best = min(exact, key=lambda r: abs(float(r.get("temperature", 0.0)) - temperature))
    try:
        return AcceptanceModel.from_per_position([float(x) for x in best["per_position_acceptance"]])
    except (SpecError, TypeError, ValueError) as exc:
        raise s.fail("profile", f"{path}: bad per_position_acceptance: {exc}") from None
