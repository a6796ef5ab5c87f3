"""Judged on goodput, at an operating load where plain decoding meets the SLOs for no request, a speedup over zero
means nothing: advise said "Do not enable ... goodput p50 speedup 0.00x (band 0.00-0.00x)", exit 1, where simulate
said only speculation meets the SLOs (review s44b). It is measure first when a k meets them, disable (no
configuration meets them) when none does; and a rate has no p50."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from tests.readme_examples import ROOT

EXAMPLE = ROOT / "examples/advise/summarize-low-qps.toml"


def _advise(tmp_path: Path, capsys: pytest.CaptureFixture[str], slo: str) -> tuple[int, dict[str, object]]:
    text = EXAMPLE.read_text().replace("num_requests = 200\n", 'num_requests = 200\ndecision_metric = "goodput"\n')
    text = text.replace('task = "summarization"\n', f'task = "summarization"\n{slo}\n', 1)
    path = tmp_path / "goodput.toml"
    path.write_text(text)
    rc = main(["advise", "--scenario", str(path), "--json", "--processes", "1"])
    return rc, json.loads(capsys.readouterr().out)


def test_only_speculation_meeting_the_slo_is_measure_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _advise(tmp_path, capsys, "slo_tpot_s = 0.012")
    draft = next(c for c in doc["candidates"] if c["candidate"].startswith("draft_model"))  # type: ignore[attr-defined]
    assert rc == 0 and draft["verdict"] == "measure_first", draft["reason"]
    assert "plain decoding meets the SLOs for no request" in draft["reason"]
    assert draft["speedup_at_operating_qps"] is None  # a ratio to no goodput: null, as the README says
    assert "0.00x" not in json.dumps(doc) and "goodput p50" not in json.dumps(doc)


def test_no_configuration_meeting_the_slo_is_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _advise(tmp_path, capsys, "slo_ttft_s = 0.001")
    assert rc == 1 and doc["decision"] == "disable"
    for c in doc["candidates"]:  # type: ignore[attr-defined]
        assert "no request meets the SLOs, with or without speculation" in c["reason"]
