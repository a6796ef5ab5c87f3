"""Terminal output at 80 and 120 columns: every id and every number appears whole (never cut to ``deepsee…`` or
``2.…``), tables fold instead; ``--wide`` prints them at full width."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from specwise.catalog import catalog_gpus, catalog_model_spec, catalog_models, resolve_model
from specwise.cli import main
from specwise.contracts.advice import Advice
from specwise.contracts.sweep import SweepResult
from specwise.monitor.report import MonitorReport, ServerWindow
from specwise.monitor.window import WindowStats
from specwise.report.advise import render_advise, rule_counts
from specwise.report.models import CatalogRow, ModelSpecView, render_catalog, render_gpus, render_model_spec
from specwise.report.monitor import render_monitor
from specwise.report.sim import render_sweep
from specwise.report.tables import print_table

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"
WIDTHS = (80, 120)


def recorder(width: int) -> Console:
    return Console(width=width, record=True, highlight=False, soft_wrap=False, color_system=None)


def lines_fit(text: str, width: int) -> None:
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_long, too_long[:3]


def assert_whole(text: str, values: list[str]) -> None:
    missing = [v for v in values if v not in text]
    assert not missing, missing[:10]
    assert "…" not in text


@pytest.mark.parametrize("width", WIDTHS)
def test_models_ids_and_numbers_whole(width: int) -> None:
    entries = list(catalog_models().values())
    rows = [CatalogRow.of(e.id, e.family, e.roles, catalog_model_spec(e.id)) for e in entries]
    out = recorder(width)
    render_catalog(rows, "", out)
    text = out.export_text()
    lines_fit(text, width)
    assert_whole(text, [r.id for r in rows] + [f"{r.vocab_size:,}" for r in rows])
    assert_whole(text, [f"{r.kv_bytes_per_token:,}" for r in rows])


def test_models_wide_is_one_table() -> None:
    entries = list(catalog_models().values())[:3]
    rows = [CatalogRow.of(e.id, e.family, e.roles, catalog_model_spec(e.id)) for e in entries]
    out = recorder(80)
    render_catalog(rows, "", out, wide=True)
    text = out.export_text()
    assert "┃ id" in text  # the framed table, wider than 80 columns
    assert max(len(line) for line in text.splitlines()) > 80
    for r in rows:
        assert any(r.id in line and f"{r.vocab_size:,}" in line for line in text.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
def test_gpus_whole(width: int) -> None:
    gpus = list(catalog_gpus().values())
    out = recorder(width)
    render_gpus(gpus, out)
    text = out.export_text()
    lines_fit(text, width)
    assert_whole(text, [g.name for g in gpus] + [f"{g.interconnect_bytes_per_s / 1e9:,.0f} GB/s" for g in gpus])


@pytest.mark.parametrize("width", WIDTHS)
def test_inspect_whole(width: int) -> None:
    spec = resolve_model("meta-llama/Llama-3.1-70B-Instruct")
    out = recorder(width)
    render_model_spec(ModelSpecView(spec, "bf16"), out)
    text = out.export_text()
    lines_fit(text, width)
    assert_whole(text, [spec.name, f"{spec.vocab_size:,}", f"{spec.max_position_embeddings:,}"])


def _sweep(name: str) -> SweepResult:
    return SweepResult.from_json(json.loads((GOLDEN / name).read_text()))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", ["simulate-llama70b-4xh100.json", "simulate-llama70b-ngram.json"])
def test_simulate_numbers_whole(case: str, width: int) -> None:
    doc = _sweep(case)
    out = recorder(width)
    render_sweep(doc, out)
    text = out.export_text()
    lines_fit(text, width)
    speedups = [f"{r.speedup(doc.decision_metric):.2f}" for r in doc.results if r.k and r.speedup(doc.decision_metric)]
    assert_whole(text, [doc.target, *((doc.draft and [doc.draft]) or []), *speedups])


def _advice(name: str) -> Advice:
    return Advice.from_json(json.loads((GOLDEN / name).read_text()))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.glob("advise-*.json")))
def test_advise_whole(case: str, width: int) -> None:
    doc = _advice(case)
    out = recorder(width)
    render_advise(doc, out)
    text = out.export_text()
    ids = [c.candidate for c in doc.candidates] + [doc.target, doc.gpu]
    numbers = [f"{c.memory.kv_cache_tokens:,}" for c in doc.candidates]
    assert_whole(text, ids + numbers)
    for c in doc.candidates:
        assert rule_counts(c.rules) in text


def test_advise_explains_rules_and_checks_every_candidate() -> None:
    doc = _advice("advise-draft-does-not-fit.json")
    out = recorder(120)
    render_advise(doc, out)
    text = out.export_text()
    assert "rules: how many rule checks pass, warn, fail" in text
    assert re.search(r"\d+ pass, \d+ warn, \d+ fail", text)
    assert not re.search(r"\b\dp \dw \df\b", text)
    for loser in doc.ranked[1:]:
        assert f"rule checks, {loser.candidate}:" in text


def test_advise_serve_command_one_flag_per_line() -> None:
    doc = _advice("advise-summarize-low-qps.json")
    out = recorder(80)
    render_advise(doc, out)
    text = out.export_text()
    flags = [a for a in doc.serve.argv if a.startswith("--")]
    for flag in flags:
        assert any(line.strip().startswith(flag) for line in text.splitlines()), flag


@pytest.mark.parametrize("width", WIDTHS)
def test_monitor_whole(width: int) -> None:
    stats = WindowStats(
        window_s=30.0,
        drafts=100.0,
        acceptance_rate=0.6123,
        mean_acceptance_length=2.4567,
        per_position_acceptance=(0.81, 0.62, 0.43, 0.24),
        draft_tokens_per_s=10.0,
        accepted_tokens_per_s=6.0,
        generation_tokens_per_s=1234.5,
        requests_per_s=3.25,
        running=17.0,
        waiting=4.0,
        kv_cache_usage=0.5,
        preemptions_per_s=0.0,
    )
    url = "http://inference-node-with-a-long-name.internal.example.com:8000/metrics"
    report = MonitorReport(30.0, (ServerWindow(url, stats), ServerWindow("http://b:8000/metrics", error="refused")))
    out = recorder(width)
    render_monitor(report, out)
    text = out.export_text()
    lines_fit(text, width)
    assert_whole(text, [url, "0.61", "2.46", "0.81", "0.24", "1234.5", "3.25", "refused"])


@pytest.mark.parametrize("width", (30, 80))
def test_print_table_never_cuts(width: int) -> None:
    table = Table(title="t")
    table.add_column("id")
    for col in ("alpha", "beta", "gamma", "delta"):
        table.add_column(col, justify="right")
    table.add_column("note", overflow="fold")
    ids = ["org-with-a-long-name/Model-Name-That-Is-Long-70B", "short"]
    for i in ids:
        table.add_row(i, "123,456,789", "0.987654", "42", "1.00x", "a note that is long enough to wrap " * 2)
    out = recorder(width)
    print_table(out, table)
    text = out.export_text()
    assert_whole(text, [*ids, "123,456,789", "0.987654", "1.00x"]) if width >= 50 else None
    assert "…" not in text


@pytest.mark.parametrize(
    "argv",
    [
        ["models"],
        ["gpus"],
        ["inspect", "meta-llama/Llama-3.1-70B-Instruct"],
        ["check-pair", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--draft", "meta-llama/Llama-3.2-1B-Instruct"],
        ["plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100-SXM-80GB", "--tp", "4"],
        ["speedup", "--alpha", "0.8", "--k", "4", "--cost-ratio", "0.05"],
    ],
)
@pytest.mark.parametrize("width", WIDTHS)
def test_cli_output_fits(
    argv: list[str], width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(argv) in (0, 1)
    text = capsys.readouterr().out
    assert "…" not in text
    lines_fit(text, width)
    for arg in argv:
        if "/" in arg or arg.endswith("GB"):
            assert arg in text


def test_cli_wide_flag(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["models", "--wide"]) == 0
    text = capsys.readouterr().out
    assert "┃ id" in text and max(len(line) for line in text.splitlines()) > 80


def test_a_folded_table_keeps_its_headers_on_one_line_and_pads_nothing() -> None:
    """The id column on its own line (its ids are wider than the terminal allows beside the rest): the other
    columns' headers stay on one line where they fit, and no line is padded with blanks out to the console."""
    table = Table(title="crossover")
    table.add_column("series")
    for col in ("load", "published", "within 2x"):
        table.add_column(col, justify="right")
    series = "specdecode-bench: meta-llama/Meta-Llama-3-70B-Instruct eagle k=6 cnn_dailymail on H100-SXM-80GB " * 2
    table.add_row(series.strip(), "batch", "105", "yes")
    out = recorder(120)
    print_table(out, table)
    lines = out.export_text().splitlines()
    assert series.strip() in lines
    header = next(line for line in lines if "published" in line)
    assert "within 2x" in header
    assert all(line == line.rstrip() for line in lines), [line for line in lines if line != line.rstrip()]


def test_wide_keeps_a_long_title_on_one_line() -> None:
    """--wide prints rows at their natural width; the title goes with them, one line (it wrapped at 80)."""
    title = "ngram -> models/some-very-long-directory/target-model: T=0, greedy drafting, quant none, class all " * 2
    for wide in (True, False):
        table = Table(title=title.strip())
        table.add_column("k")
        table.add_row("1")
        out = recorder(80)
        print_table(out, table, wide=wide)
        lines = out.export_text().splitlines()
        assert (title.strip() in lines) is wide  # without --wide it wraps at the terminal's 80 columns
        assert wide or max(len(line) for line in lines) <= 80


def test_wide_keeps_simulate_and_plan_memory_sentences_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s47b F6: with --wide (a pipe's grep), simulate's and plan-memory's sentences wrapped at 80 columns,
    as advise's no longer did; without it they still fold to the terminal."""
    doc = _sweep("simulate-llama70b-ngram.json")
    for wide in (True, False):
        out = recorder(80)
        render_sweep(doc, out, wide=wide)
        lines = out.export_text().splitlines()
        predictor = [line for line in lines if line.startswith("predictor: ")]
        assert len(predictor) == 1
        assert (len(predictor[0]) > 80) is wide and (predictor[0].rstrip().endswith(")") or not wide)
    monkeypatch.setenv("COLUMNS", "80")
    argv = ["plan-memory", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX4090"]
    assert main([*argv, "--wide"]) == 1
    [verdict] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("does not fit")]
    assert verdict.endswith("--max-model-len 38752 or less would fit")
    assert main(argv) == 1
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80
