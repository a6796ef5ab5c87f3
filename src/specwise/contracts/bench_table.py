"""``specwise bench --output FILE``: one row per level (and per configuration with ``--launch``), with the field
names and units ``vllm bench serve --save-result`` uses (``vllm/benchmarks/serve.py``, vLLM 0.32), so a sheet or
script built for vLLM's results reads specwise's too, and ``advise --bench`` reads the file back.

Formats, by extension: ``.csv`` (a header row; per-position rates joined by ``;``), ``.jsonl`` (one object per line,
as ``vllm bench serve --append-result`` writes) and ``.json`` (``{"format", "fields", "rows"}``: the rows and
:data:`FIELDS`, each field's unit and meaning).

Units are vLLM's: latencies in milliseconds, ``spec_decode_acceptance_rate`` in PERCENT (specwise's own bench JSON
writes a fraction under that key), per-position rates as fractions. A NaN or infinite number is never written: it
is null in JSON (which has neither, RFC 8259 section 6) and an empty cell in CSV.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel
from specwise.errors import SpecwiseError
from specwise.stats import Percentiles

FORMAT = "specwise bench --output/1 (vllm bench serve field names and units)"
EXTENSIONS = (".csv", ".json", ".jsonl")

Cell = str | int | float | list[float | None] | None

_LATENCY = {"ttft": "time to first token", "tpot": "time per output token after the first",
            "itl": "inter-token latency as vllm bench serve measures it: the gap before each streamed chunk, one "
            "sample per chunk (a speculative chunk of several tokens is one gap)",
            "itl_per_token": "specwise: inter-token latency token-normalised (a chunk of m tokens after a gap g is m "
            "samples of g/m)",
            "e2el": "end-to-end request latency"}  # fmt: skip
_STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"))

FIELDS: dict[str, str] = {
    "config": "specwise: the --launch configuration's name ('' for a run against --url)",
    "level": "specwise: the level's index in the run",
    "model_id": "the served model",
    "speculative_config": "JSON string of the configuration's vLLM --speculative-config (null: none or unknown)",
    "request_rate": "target requests/s of an open-loop level; 'inf' for a closed-loop level (as vLLM)",
    "max_concurrency": "requests kept in flight by a closed-loop level (null for open loop)",
    "completed": "requests that succeeded",
    "failed": "requests that failed",
    "duration": "seconds the level took",
    "request_throughput": "completed requests/s",
    "request_goodput": "requests/s meeting the --slo-ttft/--slo-tpot SLOs (null without SLOs)",
    "output_throughput": "output tokens/s",
    **{
        f"{name}_{metric}_ms": f"{name} {what}, milliseconds" for metric, what in _LATENCY.items() for name, _ in _STATS
    },
    "spec_decode_num_drafts": "drafts over the level (/metrics counter delta)",
    "spec_decode_draft_tokens": "draft tokens proposed over the level",
    "spec_decode_accepted_tokens": "draft tokens accepted over the level",
    "spec_decode_acceptance_rate": "accepted / draft tokens, PERCENT (0-100) as vLLM writes it",
    "spec_decode_acceptance_length": "1 + accepted tokens / drafts (includes the bonus token)",
    "spec_decode_per_position_acceptance_rates": "accepted at draft position i / drafts, fractions (CSV: ';'-joined)",
}


def check_extension(path: Path) -> None:
    if path.suffix.lower() not in EXTENSIONS:
        raise SpecwiseError(f"--output {path}: the extension says the format; use one of {', '.join(EXTENSIONS)}")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _latency(name: str, p: Percentiles) -> dict[str, Cell]:
    return {f"{stat}_{name}_ms": _ms(getattr(p, attr)) for stat, attr in _STATS}


def _ms(seconds: float) -> float | None:
    return seconds * 1e3 if math.isfinite(seconds) else None


def _count(value: float) -> int | float:
    """A counter delta as vLLM writes it (an integer) when it is one."""
    return int(value) if value.is_integer() else value


def _spec_decode(level: BenchLevel) -> dict[str, Cell]:
    """vLLM's ``spec_decode_*`` fields; a level without counts (SGLang gauges, llama.cpp) gives what it has."""
    sd = level.spec_decode
    keys = [k for k in FIELDS if k.startswith("spec_decode_")]
    out: dict[str, Cell] = dict.fromkeys(keys)
    if sd is None:
        return out
    if sd.counts is not None:
        c = sd.counts
        rate = c.acceptance_rate
        out.update(
            spec_decode_num_drafts=_count(c.drafts),
            spec_decode_draft_tokens=_count(c.draft_tokens),
            spec_decode_accepted_tokens=_count(c.accepted_tokens),
            spec_decode_acceptance_rate=rate * 100 if rate is not None else None,
            spec_decode_acceptance_length=c.mean_acceptance_length,
            spec_decode_per_position_acceptance_rates=list(c.per_position_rates),
        )
        return out
    out.update(
        spec_decode_draft_tokens=sd.draft_tokens,
        spec_decode_accepted_tokens=sd.accepted_tokens,
        spec_decode_acceptance_rate=sd.acceptance_rate * 100 if sd.acceptance_rate is not None else None,
        spec_decode_acceptance_length=sd.acceptance_length,
    )
    return out


def level_row(doc: BenchDoc, config: BenchConfig | None, level: BenchLevel) -> dict[str, Cell]:
    s = level.summary
    spec = config.speculative_config if config is not None else doc.speculative_config
    row: dict[str, Cell] = {
        "config": config.name if config is not None else "",
        "level": s.level,
        "model_id": doc.model,
        "speculative_config": json.dumps(dict(spec), sort_keys=True) if spec is not None else None,
        "request_rate": s.target_rate_per_s if s.target_rate_per_s is not None else "inf",
        "max_concurrency": level.concurrency,
        "completed": s.requests - s.failed,
        "failed": s.failed,
        "duration": s.duration_s,
        "request_throughput": s.request_rate_per_s,
        "request_goodput": _finite(s.goodput_per_s),
        "output_throughput": s.output_tokens_per_s,
    }
    latencies = (("ttft", s.ttft_s), ("tpot", s.tpot_s), ("itl", s.itl_per_chunk_s), ("itl_per_token", s.itl_s))
    for name, p in (*latencies, ("e2el", s.e2e_s)):
        row.update(_latency(name, p))
    row.update(_spec_decode(level))
    return row


def bench_rows(doc: BenchDoc) -> list[dict[str, Cell]]:
    """One row per (configuration, level), in :data:`FIELDS` order."""
    if doc.configs:
        return [level_row(doc, cfg, lv) for cfg in doc.configs for lv in cfg.levels]
    return [level_row(doc, None, lv) for lv in doc.levels]


def _finite_cell(value: Cell) -> Cell:
    """``value`` with NaN and infinities as None (in a list too)."""
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _csv_cell(value: Cell) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, list):
        return ";".join("" if v is None else f"{v:.6g}" for v in value)
    return value


def render(rows: Sequence[dict[str, Cell]], suffix: str) -> str:
    """The file's text for ``suffix`` (``.csv``, ``.json`` or ``.jsonl``)."""
    suffix = suffix.lower()
    rows = [{k: _finite_cell(v) for k, v in row.items()} for row in rows]
    if suffix == ".csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(list(FIELDS))
        for row in rows:
            writer.writerow([_csv_cell(row[k]) for k in FIELDS])
        return buf.getvalue()
    if suffix == ".jsonl":
        return "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows)
    return json.dumps({"format": FORMAT, "fields": FIELDS, "rows": rows}, indent=1, allow_nan=False) + "\n"
