"""A/B comparison of bench runs that sent the same requests: speedups against the first configuration."""

from __future__ import annotations

from typing import Any

from specwise.stats import ratio


def compare_configs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (config, level): latency/throughput speedups vs ``runs[0]`` at the same level, and
    the config's acceptance (vLLM counters)."""
    if not runs:
        return []
    base = {lv["level"]: lv for lv in runs[0]["levels"]}
    rows = []
    for run in runs:
        for lv in run["levels"]:
            b = base.get(lv["level"])
            spec = lv.get("spec_decode") or {}
            rows.append(
                {
                    "config": run["name"],
                    "level": lv["level"],
                    "rate_per_s": lv["target_rate_per_s"],
                    "concurrency": lv.get("concurrency"),
                    "tpot_p50_s": lv["tpot_s"]["p50"],
                    "e2e_p50_s": lv["e2e_s"]["p50"],
                    "output_tokens_per_s": lv["output_tokens_per_s"],
                    "failed": lv["failed"],
                    "speedup_tpot": ratio(b["tpot_s"]["p50"], lv["tpot_s"]["p50"]) if b else None,
                    "speedup_e2e": ratio(b["e2e_s"]["p50"], lv["e2e_s"]["p50"]) if b else None,
                    "speedup_throughput": ratio(lv["output_tokens_per_s"], b["output_tokens_per_s"]) if b else None,
                    "spec_decode_acceptance_rate": spec.get("spec_decode_acceptance_rate"),
                    "spec_decode_acceptance_length": spec.get("spec_decode_acceptance_length"),
                }
            )
    return rows
