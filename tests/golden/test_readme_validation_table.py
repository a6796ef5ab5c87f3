"""The README's validation table quotes ``specwise validate --json``: each row must be the recorded output's numbers
(``tests/golden/validate``, itself checked against a live run by ``test_published_fit_unchanged``), so a refit or a
new record that moves them cannot leave the README quoting the old ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VALIDATE = Path(__file__).parent / "validate"

# README row label -> (golden file, path to the summary in its JSON)
ROWS = {
    "published-fit, fit families": ("published-fit", ("fit",)),
    "published-fit, held-back vLLM measurements": ("published-fit", ("held_back_by_engine", "vllm")),
    "published-fit, held-back SGLang measurements": ("published-fit", ("held_back_by_engine", "sglang")),
    "published-fit, all held-back": ("published-fit", ("held_back",)),
    "roofline (analytic), held-back vLLM": ("roofline", ("held_back_by_engine", "vllm")),
}


def readme_rows() -> dict[str, list[str]]:
    """The validation table's rows, by label, bold marks removed."""
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ROWS:
            rows[cells[0]] = cells[1:]
    return rows


def summary(predictor: str, path: tuple[str, ...]) -> Any:
    data = json.loads((VALIDATE / f"{predictor}.json").read_text())
    for key in path:
        data = data[key]
    return data


def expected_cells(s: dict[str, Any]) -> list[str]:
    """A row as the README writes it: records, median, p80, within 25%, slowdowns predicted < 1."""
    return [
        str(s["records"]),
        f"{s['median_abs_rel_error']:.1%}",
        f"{s['p80_abs_rel_error']:.1%}",
        f"{s['within_25pct']:.0%}",
        f"{s['slowdowns_predicted']} of {s['slowdowns']}",
    ]


def test_every_row_is_in_the_readme() -> None:
    assert set(readme_rows()) == set(ROWS)


def test_the_readme_table_quotes_the_recorded_validation() -> None:
    rows = readme_rows()
    wrong = {
        label: (rows[label], expected_cells(summary(*where)))
        for label, where in ROWS.items()
        if rows.get(label) != expected_cells(summary(*where))
    }
    assert not wrong, f"README row -> (quoted, validate --json): {wrong}"


def test_the_readme_quotes_the_vllm_band() -> None:
    band = summary("published-fit", ("held_back_by_engine", "vllm"))["speedup_p80_abs_rel_error"]
    text = (ROOT / "README.md").read_text()
    assert re.search(rf"±{round(band * 100)}% for every vLLM scenario", text), f"band {band:.3f} not quoted"


def test_the_readme_quotes_the_vllm_band_coverage() -> None:
    """The README's claim about the band as an interval: on the held-back vLLM speedups, how often the printed band
    ``pred * (1 +- e)`` holds the published speedup, how often the exact inversion ``pred / (1 -+ e)`` would, and how
    many are over-predicted, counted from the recorded replay (the engine of each record from the evidence set)."""
    from specwise.evidence.records import all_records

    engine = {r.id: r.engine for r in all_records()}
    data = json.loads((VALIDATE / "published-fit.json").read_text())
    e = data["held_back_by_engine"]["vllm"]["speedup_p80_abs_rel_error"]
    pairs = [
        (r["predicted_speedup"], r["published_speedup"])
        for r in data["records"]
        if r["status"] == "predicted"
        and r["family"] not in data["fit_families"]
        and engine[r["id"]] == "vllm"
        and r.get("published_speedup") is not None
        and r.get("predicted_speedup") is not None
    ]
    printed = sum(p * (1 - e) <= x <= p * (1 + e) for p, x in pairs)
    inverted = sum(p / (1 + e) <= x <= p / (1 - e) for p, x in pairs)
    over = sum(p > x for p, x in pairs)
    n = len(pairs)
    text = " ".join((ROOT / "README.md").read_text().split())
    quoted = (
        f"holds the published value {printed} times in {n} (the inversion: {inverted}), because the model "
        f"over-predicts more often than it under-predicts ({over} of {n})"
    )
    assert quoted in text, quoted
