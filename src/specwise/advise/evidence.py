"""Which acceptance each (candidate, workload class) is simulated with, and where it came from.

Precedence: measured on a real server (``--bench``) > profiled offline on real weights (``--profile`` or the
candidate's ``profile``) > given in the scenario (``acceptance`` / ``per_position``) > an ASSUMED prior.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.acceptance.model import AcceptanceModel
from specwise.advise.inputs import AdviseInputs, Candidate
from specwise.advise.priors import prior
from specwise.errors import SpecError, SpecwiseError

KINDS = ("measured", "profiled", "given", "assumed")


@dataclass(frozen=True)
class Evidence:
    workload: str
    kind: str  # one of KINDS
    source: str
    model: AcceptanceModel


def read_json_doc(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecwiseError(f"{path}: no such {what} file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecwiseError(f"{path}: not a readable {what} JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise SpecwiseError(f"{path}: a {what} JSON must be an object")
    return doc


def _name_matches(candidate_draft: str | None, doc_draft: str | None) -> bool:
    if not candidate_draft or not doc_draft:
        return False
    a = Path(candidate_draft.rstrip("/")).name.lower().replace("_", "-")
    b = Path(doc_draft.rstrip("/")).name.lower().replace("_", "-")
    return a == b or a in b or b in a


def profile_for(
    candidate: Candidate, profiles: Sequence[tuple[Path, dict[str, Any]]]
) -> tuple[Path, dict[str, Any]] | None:
    """The profile measuring this candidate: same method; for model drafts the same draft (by name)."""
    method = "draft_model" if candidate.method in ("draft_model", "eagle", "eagle3", "mtp") else candidate.method
    same = [(p, d) for p, d in profiles if d.get("method") == method]
    if method == "draft_model":
        same = [(p, d) for p, d in same if _name_matches(candidate.raw.get("draft"), d.get("draft"))] or (
            same if len(same) == 1 and len([c for c in profiles]) == 1 else []
        )
    return same[0] if same else None


def _pick_profile_result(
    doc: dict[str, Any], path: Path, workload: str, task: str, temperature: float, drafting: str
) -> tuple[AcceptanceModel, str]:
    results = [r for r in doc.get("results", []) if isinstance(r, dict) and not r.get("quantization")]
    results = [r for r in results if r.get("drafting") == drafting] or results
    if not results:
        raise SpecwiseError(f"{path}: no unquantised results in the profile")
    for cls in (workload, task, None):
        pool = [r for r in results if r.get("class") == cls]
        if pool:
            best = min(pool, key=lambda r: abs(float(r.get("temperature", 0.0)) - temperature))
            try:
                model = AcceptanceModel.from_per_position([float(x) for x in best["per_position_acceptance"]])
            except (SpecError, TypeError, ValueError, KeyError) as exc:
                raise SpecwiseError(f"{path}: bad per_position_acceptance ({exc})") from None
            al = model.mean_acceptance_length(len(best["per_position_acceptance"]))
            return model, (
                f"profiled: {path.name}, class {cls or 'all'}, T={best.get('temperature')} "
                f"({best.get('drafting')} drafting), AL(k={len(best['per_position_acceptance'])}) {al:.2f}"
            )
    raise SpecwiseError(f"{path}: no result to use")  # pragma: no cover - pool None always matches


def bench_for(
    candidate: Candidate, benches: Sequence[tuple[Path, dict[str, Any]]]
) -> tuple[AcceptanceModel, str] | None:
    """Measured per-position acceptance of a launched config with the candidate's method (pooled over levels)."""
    for path, doc in benches:
        for cfg in doc.get("configs", []):
            spec = cfg.get("speculative_config") or {}
            if spec.get("method") != candidate.method:
                continue
            if candidate.method == "draft_model" and not _name_matches(candidate.raw.get("draft"), spec.get("model")):
                continue
            drafts = 0.0
            accepted_pp: list[float] = []
            for lv in cfg.get("levels", []):
                sd = lv.get("spec_decode") or {}
                n = float(sd.get("spec_decode_num_drafts") or 0)
                rates = sd.get("spec_decode_per_position_acceptance_rates") or []
                if n <= 0 or not rates:
                    continue
                accepted_pp += [0.0] * (len(rates) - len(accepted_pp))
                for i, r in enumerate(rates):
                    accepted_pp[i] += float(r) * n
                drafts += n
            if drafts > 0:
                rates = [a / drafts for a in accepted_pp]
                model = AcceptanceModel.from_per_position(rates)
                al = 1 + sum(rates)
                return model, (f"measured: {path.name} config {cfg.get('name')!r}, {int(drafts):,} drafts, AL {al:.2f}")
    return None


def resolve_evidence(
    inputs: AdviseInputs,
    candidate: Candidate,
    profiles: Sequence[tuple[Path, dict[str, Any]]],
    benches: Sequence[tuple[Path, dict[str, Any]]],
) -> list[Evidence]:
    out = []
    measured = bench_for(candidate, benches)
    prof = profile_for(candidate, profiles)
    if prof is None and "profile" in candidate.raw:
        path = Path(str(candidate.raw["profile"]))
        path = path if path.is_absolute() else inputs.base_dir / path
        prof = (path, read_json_doc(path, "profile"))
    for w, task in zip(inputs.workloads, inputs.tasks, strict=True):
        name = str(w.get("name", "class"))
        temperature = float(w.get("temperature", 0.0))
        if measured is not None:
            out.append(Evidence(name, "measured", measured[1], measured[0]))
        elif prof is not None:
            model, source = _pick_profile_result(prof[1], prof[0], name, task, temperature, candidate.drafting)
            out.append(Evidence(name, "profiled", source, model))
        elif "acceptance" in candidate.raw or "per_position" in candidate.raw:
            out.append(Evidence(name, "given", "given in the scenario", _given(candidate, inputs.file)))
        else:
            p = prior(candidate.method, task, temperature, candidate.drafting)
            out.append(Evidence(name, "assumed", p.source, p.model))
    return out


def _given(candidate: Candidate, file: str) -> AcceptanceModel:
    try:
        if "acceptance" in candidate.raw:
            return AcceptanceModel.iid(float(candidate.raw["acceptance"]))
        return AcceptanceModel.from_per_position([float(x) for x in candidate.raw["per_position"]])
    except (SpecError, TypeError, ValueError) as exc:
        raise SpecwiseError(f"{file}: [[candidate]] {candidate.label!r}: {exc}") from None


def workload_tables(inputs: AdviseInputs, evidence: Sequence[Evidence], k_max: int) -> list[Mapping[str, Any]]:
    """[[workload]] tables for the simulator, each with the per-position acceptance its evidence gives."""
    out: list[Mapping[str, Any]] = []
    for w, e in zip(inputs.workloads, evidence, strict=True):
        out.append({**w, "per_position": list(e.model.per_position(max(k_max, 1)))})
    return out


def temperature_curves(
    inputs: AdviseInputs, candidates: Sequence[Candidate], profiles: Sequence[tuple[Path, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """First-position acceptance vs temperature per candidate: measured points from profiles (all prompts, no
    quantisation), else the prior's curve for each task, labelled as assumed."""
    out: list[dict[str, Any]] = []
    for path, doc in profiles:
        for r in doc.get("results", []):
            if isinstance(r, dict) and r.get("class") is None and not r.get("quantization"):
                pp = r.get("per_position_acceptance") or [None]
                if pp[0] is not None:
                    out.append(
                        {
                            "series": f"{path.name} ({r.get('drafting')}, profiled)",
                            "temperature": float(r["temperature"]),
                            "acceptance": float(pp[0]),
                        }
                    )
    profiled = {c.label for c in candidates if profile_for(c, profiles) is not None}
    for c in candidates:
        if c.label in profiled:
            continue
        for task in sorted(set(inputs.tasks)):
            for t in (0.0, 0.25, 0.5, 0.75, 1.0):
                p = prior(c.method, task, t, c.drafting)
                out.append(
                    {
                        "series": f"{c.label} / {task} (assumed)",
                        "temperature": t,
                        "acceptance": p.model.per_position(1)[0],
                    }
                )
    return out
