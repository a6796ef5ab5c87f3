"""Review E: with ``--metric goodput``, a load where no request met the SLOs without speculation (plain goodput 0)
showed best k 0 with no legend, and JSON's ``best_speedup_by_qps`` said 0.0 there, which reads as "speculation
destroys goodput". The speedup is undefined: "-" and a footnote in text, null in JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.contracts.sweep import SweepResult

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"
ARGS = ["simulate", "--scenario", str(EXAMPLE), "--num-requests", "200", "--metric", "goodput", "--processes", "1"]


def test_an_undefined_goodput_speedup_is_null_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the example up to 48 QPS: since the refits of 2026-12-06 a few requests meet the SLOs at 16 and 24 QPS
    text = EXAMPLE.read_text().replace("qps = [0.5, 1, 2, 4, 8, 12, 16]", "qps = [0.5, 4, 16, 48]")
    path = tmp_path / "to48.toml"
    path.write_text(text)
    args = [*ARGS[:2], str(path), *ARGS[3:]]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sweep = SweepResult.from_json(doc)
    undefined = [q for q in sweep.qps if sweep.speedup_undefined(q)]
    assert undefined  # the top load: no request meets the SLOs without speculation
    for q in undefined:
        key = f"{q:g}"
        assert all(r["speedup_goodput"] is None for r in doc["results"] if r["qps"] == q)
        assert doc["best_speedup_by_qps"][key] is None and doc["best_speedup_band_by_qps"][key] is None
    defined = [q for q in sweep.qps if q not in undefined]
    assert all(isinstance(doc["best_speedup_by_qps"][f"{q:g}"], float) for q in defined)
    assert SweepResult.from_json(json.loads(json.dumps(sweep.to_json()))).to_json() == sweep.to_json()
    assert main([*args, "--wide"]) == 0
    out = capsys.readouterr().out
    loads = ", ".join(f"{q:g}" for q in undefined)
    assert f"-: at {loads} QPS no request met the SLOs without speculation (goodput 0)" in out


def test_where_only_speculation_meets_the_slos_it_is_said_not_called_a_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review G: with SLOs plain decoding never meets, the headline said "speculation does not pay at any simulated
    rate" and JSON never_pays true, while k=6 had goodput where plain decoding had none."""
    text = (EXAMPLE.parent / "llama70b-ngram.toml").read_text()
    text = text.replace("k = [0, 1, 2, 3, 4, 5, 6, 7, 8]", "k = [0, 2, 4, 6]")
    text = text.replace("k_schedule = [[1, 32, 4], [33, 96, 2], [97, 1024, 0]]\n", "")
    text = text.replace("qps = [0.5, 1, 2, 4, 8, 16]", "qps = [0.5, 1]").replace(
        "slo_tpot_s = 0.05", "slo_tpot_s = 0.017"
    )
    path = tmp_path / "tight.toml"
    path.write_text(text)
    argv = ["simulate", "--scenario", str(path), "--metric", "goodput", "--num-requests", "200", "--processes", "1"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sweep = SweepResult.from_json(doc)
    only = [q for q in sweep.qps if sweep.only_speculation_has_goodput(q) is not None]
    assert only and doc["never_pays"] is False
    assert main([*argv, "--wide"]) == 0
    out = capsys.readouterr().out
    assert "does not pay" not in out
    for q in only:
        top = sweep.only_speculation_has_goodput(q)
        assert top is not None
        assert f"only speculation meets the SLOs at {q:g} QPS: {top.goodput_per_s:.2f} req/s with k={top.k}" in out
