"""``specwise validate --report OUT.html``: one self-contained page (tables, the decision score, a scatter of
predicted against published speedups, each series against its load), written atomically; its errors before the
replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.evidence.records import all_records
from specwise.report import validate_plots
from specwise.validate.predict import Prediction

FAMILIES = "eagle3-paper,vllm-blog-2024"


def test_the_report_is_one_self_contained_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "validation.html"
    assert main(["validate", "--family", FAMILIES, "--report", str(out)]) == 0
    assert f"report: {out}" in capsys.readouterr().out
    page = out.read_text()
    assert "<script" not in page and not re.search(r"""(src|href)=["']?https?:""", page)  # nothing fetched
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', page)
    # the scatter, then one grid per family with a series at 3 loads or more, held-back first
    assert images == [
        "predicted vs published",
        "eagle3-paper: speedup against load",
        "vllm-blog-2024: speedup against load",
    ]
    for section in ("Acceptance criteria", "Would the advice have been right? (min_speedup 1.05)", "Crossover"):
        assert section in page
    assert "enable on a published slowdown:" in page and "&plusmn;" in page
    assert f"specwise validate --predictor published-fit --family {FAMILIES} --report {out}" in page
    # the blog's no-speculation arms beside its speedups (the EAGLE-3 paper publishes speedups only), and their median
    # speed ratio as the recorded replay has it
    assert "Plain decoding inside the speculative runs" in page
    recorded = json.loads((Path(__file__).parents[1] / "golden/validate/published-fit.json").read_text())
    blog = next(f for f in recorded["baseline_speed_in_speculative_runs"] if f["family"] == "vllm-blog-2024")
    row = "<td class=name>vllm-blog-2024</td><td class=name>held back</td><td>9</td><td>9</td>"
    row += f"<td>{blog['median_ratio']:.2f}</td>"
    assert row in page


def test_json_and_report_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v.html"
    assert main(["validate", "--family", "vllm-blog-2024", "--min-speedup", "1.2", "--json", "--report", str(out)]) == 0
    assert capsys.readouterr().out.lstrip().startswith("{")  # stdout stays one JSON document
    assert "(min_speedup 1.2)" in out.read_text() and "--min-speedup 1.2" in out.read_text()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--report", "{tmp}/v.txt"], "the report is HTML; give a .html file name"),
        (["--report", "{tmp}"], "is a directory"),
        (["--report", "{tmp}/v.html", "--like", "example:schedule-llama31-70b-1b"], "--report: not with --like"),
    ],
)
def test_report_errors_come_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    args = [a.format(tmp=tmp_path) for a in extra]
    assert main(["validate", "--family", "no-such-family", *args]) == 2  # the family would fail later
    err = capsys.readouterr().err
    assert says in err and "no-such-family" not in err


def test_a_failed_plot_leaves_no_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_: object) -> bytes:
        raise RuntimeError("plot failed")

    monkeypatch.setattr(validate_plots, "series_grid", broken)
    out = tmp_path / "v.html"
    assert main(["validate", "--family", "vllm-blog-2024", "--report", str(out)]) == 3
    assert not out.exists() and list(tmp_path.iterdir()) == []


def _member(record_id: str, status: str = "predicted") -> Prediction:
    r = next(r for r in all_records() if r.id == record_id)
    return Prediction(r, status, predicted_speedup=1.1)


def test_series_are_the_speculative_runs_at_three_loads_or_more() -> None:
    ids = [f"eagle3-paper-vllm-llama31-8b-eagle-k2-bs{b}" for b in (16, 2, 4)]
    two = [f"eagle3-paper-vllm-llama31-8b-eagle3-k2-bs{b}" for b in (2, 4)]
    preds = [_member(ids[0]), _member(ids[1], "anchor"), _member(ids[2]), *map(_member, two)]
    preds.append(Prediction(preds[0].record, "skipped"))  # not predicted: not in a series
    (s,) = validate_plots.series_of(preds)
    assert [m.record.load.value for m in s.members] == [2, 4, 16]  # ascending, the anchor kept (drawn hollow)
    assert s.load_kind == "batch" and "Llama-3.1-8B-Instruct" in s.title and "RTX-3090" in s.title


def test_small_axes_keep_their_ticks_apart() -> None:
    assert validate_plots._thinned([2, 4, 8, 16, 24, 32, 48, 56, 64]) == [2, 4, 8, 16, 24, 32, 48, 64]


def test_the_command_on_the_page_is_quoted_for_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "my report.html"
    assert main(["validate", "--family", "vllm-blog-2024", "--min-speedup", "1.125", "--report", str(out)]) == 0
    assert f"--min-speedup 1.125 --report &#x27;{out}&#x27;" in out.read_text()  # html-escaped quotes


def test_the_command_is_shown_as_run_not_as_a_band(tmp_path: Path) -> None:
    """Sentences this report writes show an ASCII band as ``±``; a path that happens to contain ``+-5%`` does not."""
    out = tmp_path / "a+-5%.html"
    assert main(["validate", "--family", "vllm-blog-2024", "--report", str(out)]) == 0
    page = out.read_text()
    assert f"--report {out}</code>" in page and "a&plusmn;5%" not in page


def test_min_speedup_is_refused_with_like(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--like", "example:schedule-llama31-70b-1b", "--min-speedup", "1.1"]) == 2
    assert "--min-speedup: not with --like" in capsys.readouterr().err
