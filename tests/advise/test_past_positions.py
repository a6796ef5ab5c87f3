"""Review 16, finding 2: advise recommended a k past the draft positions its acceptance was measured (``--bench``)
or given (``per_position``) for, called the source "measured" / "given", and warned of nothing -- where simulate,
on the same input, says that those positions reuse the last one's conditional rate. advise now says so per
candidate (its ``warnings``, in the text and the JSON) with simulate's own wording, and its evidence says "measured
to k=4, extrapolated beyond"; k is not capped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.decision import past_positions
from specwise.cli import main
from specwise.contracts.advice import EvidenceUsed
from specwise.contracts.document import Fields
from tests.readme_examples import ROOT

EXAMPLE = ROOT / "examples/advise/summarize-low-qps.toml"
DRAFT = "draft_model:meta-llama/Llama-3.2-1B-Instruct"

# a `vllm bench serve --save-result` file of the example's draft pair, measured at num_speculative_tokens = 4
VLLM_BENCH_K4: dict[str, Any] = {
    "date": "20261201-120000",
    "backend": "vllm",
    "model_id": "meta-llama/Llama-3.1-70B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-70B-Instruct",
    "num_prompts": 200,
    "request_rate": 0.5,
    "burstiness": 1.0,
    "max_concurrency": None,
    "duration": 400.0,
    "completed": 200,
    "failed": 0,
    "total_input_tokens": 400000,
    "total_output_tokens": 40000,
    "request_throughput": 0.5,
    "output_throughput": 100.0,
    "total_token_throughput": 1100.0,
    "mean_ttft_ms": 100.0,
    "median_ttft_ms": 90.0,
    "p99_ttft_ms": 300.0,
    "mean_tpot_ms": 15.0,
    "median_tpot_ms": 14.0,
    "p99_tpot_ms": 30.0,
    "mean_itl_ms": 40.0,
    "median_itl_ms": 38.0,
    "p99_itl_ms": 80.0,
    "mean_e2el_ms": 3000.0,
    "median_e2el_ms": 2900.0,
    "p99_e2el_ms": 6000.0,
    "spec_decode_acceptance_rate": 62.5,
    "spec_decode_acceptance_length": 3.5,
    "spec_decode_num_drafts": 16000,
    "spec_decode_draft_tokens": 64000,
    "spec_decode_accepted_tokens": 40000,
    "spec_decode_per_position_acceptance_rates": [0.8, 0.65, 0.55, 0.5],
    "speculative_config": json.dumps(
        {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}
    ),
}


def _advise(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    rc = main(["advise", *args, "--json", "--processes", "1"])
    return rc, json.loads(capsys.readouterr().out)


def _text(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "400")
    main(["advise", *args, "--processes", "1"])
    return " ".join(capsys.readouterr().out.split())


def _with_draft_acceptance(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(EXAMPLE.read_text().rstrip("\n") + f"\n{line}\n")  # the example's last table is the draft's
    return path


def _draft(doc: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in doc["candidates"] if c["candidate"] == DRAFT)


def test_a_k_past_the_measured_positions_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = tmp_path / "vb_draft.json"
    bench.write_text(json.dumps(VLLM_BENCH_K4))
    args = ["--scenario", str(EXAMPLE), "--bench", str(bench)]
    rc, doc = _advise(args, capsys)
    draft = _draft(doc)
    assert rc == 0 and doc["recommended"] == DRAFT and draft["k"] == 6  # not capped: the user is told instead
    (ev,) = draft["evidence"]
    assert ev["kind"] == "measured" and ev["positions"] == 4
    assert ev["source"].endswith("-- measured to k=4, extrapolated beyond")
    assert (
        "[[workload]] 'summarize': acceptance was measured for 4 draft position(s); position(s) 5-6 reuse the last "
        "one's conditional rate (an assumption: measure at k=6)"
    ) in draft["warnings"]
    text = _text(args, capsys, monkeypatch)
    assert "measured to k=4, extrapolated beyond" in text  # the candidates table's "acceptance from"
    assert f"warning ({DRAFT}): [[workload]] 'summarize': acceptance was measured for 4 draft position(s)" in text


def test_a_k_past_the_given_positions_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """simulate's wording ("is given for ... reuse the last one's conditional rate"), said by advise too."""
    path = _with_draft_acceptance(tmp_path, "per_position = [0.9, 0.8]")
    rc, doc = _advise(["--scenario", str(path)], capsys)
    draft = _draft(doc)
    assert rc == 0 and draft["k"] == 6
    assert (
        "[[workload]] 'summarize': acceptance is given for 2 draft position(s); position(s) 3-6 reuse the last "
        "one's conditional rate (an assumption: measure at k=6)"
    ) in draft["warnings"]
    assert draft["evidence"][0]["source"] == "given in the scenario -- given to k=2, extrapolated beyond"
    assert "given to k=2, extrapolated beyond" in _text(["--scenario", str(path)], capsys, monkeypatch)


@pytest.mark.parametrize("line", ["per_position = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]", "acceptance = 0.8"])
def test_no_warning_when_the_acceptance_covers_k(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    """Rates given for every position of k, or one rate for every position (i.i.d. alpha), extrapolate nothing."""
    _, doc = _advise(["--scenario", str(_with_draft_acceptance(tmp_path, line))], capsys)
    draft = _draft(doc)
    assert draft["k"] > 2 and not any("draft position(s)" in w for w in draft["warnings"])
    assert draft["evidence"][0]["source"] == "given in the scenario"


def test_past_positions_labels_only_what_runs_past_them() -> None:
    rates = (0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05)
    measured = EvidenceUsed("chat", "measured", "measured: run.json", rates, positions=3)
    alpha = EvidenceUsed("chat", "given", "given in the scenario", rates)  # one rate for every position
    prior = EvidenceUsed("code", "assumed", "ASSUMED prior", rates)
    (m, a, p), notes = past_positions((measured, alpha, prior), 5)
    assert m.source == "measured: run.json -- measured to k=3, extrapolated beyond" and m.source.endswith(
        f" -- {m.label(5)}"
    )
    assert (a, p) == (alpha, prior)
    assert notes == (
        "[[workload]] 'chat': acceptance was measured for 3 draft position(s); position(s) 4-5 reuse the last one's "
        "conditional rate (an assumption: measure at k=5)",
    )
    assert past_positions((measured,), 3) == ((measured,), ())  # at k=3 nothing is extrapolated
    one_past = past_positions((measured,), 4)[1][0]
    assert one_past.endswith("position(s) 4 reuse the last one's conditional rate (an assumption: measure at k=4)")


def test_the_positions_round_trip_and_stay_out_when_unknown() -> None:
    ev = EvidenceUsed("chat", "profiled", "profiled: p.json", (0.7,), positions=5)
    assert EvidenceUsed.from_json(Fields(ev.to_json(), "ev")) == ev
    assert "positions" not in EvidenceUsed("chat", "assumed", "prior", (0.7,)).to_json()  # older outputs unchanged
