"""The advise scenario TOML: a deployment, workload classes, a sweep, and the candidates to compare.

    [deployment]   as in simulate scenarios (target, gpu, tp, max_model_len, quantization, ...)
    [advise]       operating_qps (the load the decision is for), min_speedup (default 1.05)
    [sweep]        as in simulate scenarios
    [[workload]]   as in simulate scenarios, plus task = code|summarization|chat|qa|translation|other;
                   no acceptance here -- it depends on the candidate
    [[candidate]]  method, draft (draft_model/eagle/eagle3), k, draft_tp, draft_quantization, drafting,
                   prompt_lookup_min/max (ngram), and optionally acceptance / per_position / profile

Every error is one line naming the file and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.advise.priors import TASKS
from specwise.errors import SpecwiseError
from specwise.scenario.model import METHODS

_CANDIDATE_KEYS = {
    "name",
    "method",
    "draft",
    "draft_tp",
    "draft_quantization",
    "k",
    "drafting",
    "prompt_lookup_min",
    "prompt_lookup_max",
    "acceptance",
    "per_position",
    "profile",
}
_ACCEPTANCE_KEYS = ("acceptance", "per_position", "profile")


@dataclass(frozen=True)
class Candidate:
    label: str
    method: str
    raw: Mapping[str, Any]  # the [[candidate]] table as written
    drafting: str
    prompt_lookup: tuple[int, int] | None


@dataclass(frozen=True)
class AdviseInputs:
    name: str
    file: str
    base_dir: Path
    deployment: Mapping[str, Any]
    sweep: Mapping[str, Any]
    workloads: tuple[Mapping[str, Any], ...]  # without 'task'
    tasks: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    operating_qps: float
    min_speedup: float


def load_inputs(path: Path) -> AdviseInputs:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecwiseError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecwiseError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecwiseError(f"{path}: invalid TOML: {exc}") from None
    return parse_inputs(data, str(path), path.parent)


def _fail(file: str, where: str, message: str) -> SpecwiseError:
    return SpecwiseError(f"{file}: {where}: {message}")


def _lookup(c: Mapping[str, Any], file: str, where: str) -> tuple[int, int]:
    """vLLM's defaults: both 5 when neither is given; one given sets the other."""
    lo, hi = c.get("prompt_lookup_min"), c.get("prompt_lookup_max")
    if lo is None and hi is None:
        return 5, 5
    lo = lo if lo is not None else hi
    hi = hi if hi is not None else lo
    if (
        not (isinstance(lo, int) and isinstance(hi, int))
        or isinstance(lo, bool)
        or isinstance(hi, bool)
        or not 1 <= lo <= hi
    ):
        raise _fail(
            file, f"{where}.prompt_lookup_min", f"need 1 <= prompt_lookup_min <= prompt_lookup_max, got {lo}, {hi}"
        )
    return int(lo), int(hi)


def parse_inputs(data: Mapping[str, Any], file: str, base_dir: Path) -> AdviseInputs:
    unknown = set(data) - {"name", "deployment", "advise", "sweep", "workload", "candidate"}
    if unknown:
        raise SpecwiseError(f"{file}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    for key in ("deployment",):
        if not isinstance(data.get(key), Mapping):
            raise _fail(file, f"[{key}]", "required table is missing")
    adv = data.get("advise", {})
    if not isinstance(adv, Mapping):
        raise _fail(file, "[advise]", "expected a table")
    bad = set(adv) - {"operating_qps", "min_speedup"}
    if bad:
        raise _fail(file, "[advise]", f"unknown key(s): {', '.join(sorted(bad))} (allowed: min_speedup, operating_qps)")
    sweep = data.get("sweep", {})
    if not isinstance(sweep, Mapping):
        raise _fail(file, "[sweep]", "expected a table")
    qps = sweep.get("qps", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    op = adv.get("operating_qps", min(qps) if isinstance(qps, list) and qps else 1.0)
    if isinstance(op, bool) or not isinstance(op, int | float) or op <= 0:
        raise _fail(file, "[advise].operating_qps", f"must be a number > 0, got {op!r}")
    min_speedup = adv.get("min_speedup", 1.05)
    if isinstance(min_speedup, bool) or not isinstance(min_speedup, int | float) or min_speedup < 1:
        raise _fail(file, "[advise].min_speedup", f"must be a number >= 1, got {min_speedup!r}")
    if isinstance(qps, list) and all(isinstance(q, int | float) for q in qps) and op not in qps:
        sweep = {**sweep, "qps": sorted({*qps, op})}

    raw_workloads = data.get("workload")
    if not isinstance(raw_workloads, list) or not raw_workloads:
        raise SpecwiseError(f"{file}: at least one [[workload]] table is required")
    workloads, tasks = [], []
    for i, w in enumerate(raw_workloads, start=1):
        if not isinstance(w, Mapping):
            raise _fail(file, f"[[workload]] #{i}", "expected a table")
        where = f"[[workload]] #{i} {w.get('name', f'class{i}')!r}"
        for key in _ACCEPTANCE_KEYS:
            if key in w:
                raise _fail(
                    file,
                    f"{where}.{key}",
                    "acceptance depends on the candidate: give it in [[candidate]] or with --profile / --bench",
                )
        task = w.get("task", "other")
        if task not in TASKS:
            raise _fail(file, f"{where}.task", f"expected one of {', '.join(TASKS)}, got {task!r}")
        tasks.append(task)
        workloads.append({k: v for k, v in w.items() if k != "task"})

    raw_candidates = data.get("candidate")
    if not isinstance(raw_candidates, list) or not raw_candidates:
        raise SpecwiseError(f"{file}: at least one [[candidate]] table is required (method = ngram, draft_model, ...)")
    candidates = []
    labels: set[str] = set()
    for i, c in enumerate(raw_candidates, start=1):
        where = f"[[candidate]] #{i}"
        if not isinstance(c, Mapping):
            raise _fail(file, where, "expected a table")
        bad = set(c) - _CANDIDATE_KEYS
        if bad:
            raise _fail(
                file, where, f"unknown key(s): {', '.join(sorted(bad))} (allowed: {', '.join(sorted(_CANDIDATE_KEYS))})"
            )
        method = c.get("method")
        if method not in METHODS:
            raise _fail(file, f"{where}.method", f"expected one of {', '.join(METHODS)}, got {method!r}")
        if method in ("draft_model", "eagle", "eagle3") and not isinstance(c.get("draft"), str):
            raise _fail(file, f"{where}.draft", f"method {method} needs a draft model name or path")
        drafting = c.get("drafting", "greedy")
        if drafting not in ("greedy", "probabilistic"):
            raise _fail(file, f"{where}.drafting", f"expected greedy or probabilistic, got {drafting!r}")
        lookup = None
        if method == "ngram":
            lookup = _lookup(c, file, where)
        elif "prompt_lookup_min" in c or "prompt_lookup_max" in c:
            raise _fail(file, f"{where}.prompt_lookup_min", "only the ngram method has prompt lookup settings")
        given = [k for k in _ACCEPTANCE_KEYS if k in c]
        if len(given) > 1:
            raise _fail(
                file,
                f"{where}.{given[1]}",
                f"give only one of acceptance, per_position, profile (got {', '.join(given)})",
            )
        label = str(c.get("name") or (f"{method}:{c['draft']}" if "draft" in c else method))
        if label in labels:
            raise _fail(file, f"{where}.name", f"two candidates are called {label!r}; give them names")
        labels.add(label)
        candidates.append(Candidate(label, method, c, drafting, lookup))
    return AdviseInputs(
        name=str(data.get("name", Path(file).stem)),
        file=file,
        base_dir=base_dir,
        deployment=data["deployment"],
        sweep=sweep,
        workloads=tuple(workloads),
        tasks=tuple(tasks),
        candidates=tuple(candidates),
        operating_qps=float(op),
        min_speedup=float(min_speedup),
    )
