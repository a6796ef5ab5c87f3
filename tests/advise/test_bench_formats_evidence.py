"""``advise --bench`` takes measured acceptance from a ``vllm bench serve --save-result`` file (previously it fell
back to the ASSUMED prior without a word) and from a ``specwise bench URL`` run; a run that does not say which
speculation it measured stands for the scenario's only candidate, and is refused when there are several."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve" / "eagle3-on-mock.json"

SCENARIO = """
name = "llama8b-eagle3"

[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
tp = 1
max_model_len = 2048
max_num_seqs = 64

[advise]
operating_qps = 1
min_speedup = 1.05

[sweep]
qps = [1, 4]
num_requests = 40

[[workload]]
name = "chat"
task = "chat"
temperature = 0.0
prompt_tokens = { dist = "lognormal", mean = 500, cv = 0.4, min = 50, max = 1500 }
output_tokens = { dist = "lognormal", mean = 200, cv = 0.4, min = 16, max = 500 }

[[candidate]]
method = "eagle3"
draft = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
k = [0, 3]
"""

NGRAM = """
[[candidate]]
method = "ngram"
k = [0, 3]
"""


def _advise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *bench: Path, extra: str = ""
) -> tuple[int, dict[str, Any], str]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO + extra)
    argv = ["advise", "--scenario", str(scenario), "--json", "--processes", "1"]
    for b in bench:
        argv += ["--bench", str(b)]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out) if code in (0, 1) else {}, err


def _evidence(doc: dict[str, Any], label_prefix: str = "eagle3") -> dict[str, Any]:
    cand = next(c for c in doc["candidates"] if c["candidate"].startswith(label_prefix))
    (ev,) = cand["evidence"]
    return dict(ev)


def test_vllm_result_turns_assumed_into_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, before, _ = _advise(tmp_path, capsys)
    assert code in (0, 1) and _evidence(before)["kind"] == "assumed" and before["assumed_acceptance_for"] == ["chat"]
    code, after, _ = _advise(tmp_path, capsys, FIXTURE)
    ev = _evidence(after)
    assert code in (0, 1) and ev["kind"] == "measured" and after["assumed_acceptance_for"] == []
    assert ev["source"] == "measured: eagle3-on-mock.json config 'vllm bench serve', 800 drafts, AL 2.95"
    assert ev["per_position"][:4] == pytest.approx([1.0, 0.95, 0.0, 0.0])


def test_result_without_metadata_stands_for_the_only_candidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(FIXTURE.read_text())
    del data["speculative_config"]
    bench = tmp_path / "plain.json"
    bench.write_text(json.dumps(data))
    code, doc, _ = _advise(tmp_path, capsys, bench)
    ev = _evidence(doc)
    assert code in (0, 1) and ev["kind"] == "measured"
    assert "speculation not recorded; taken as eagle3" in ev["source"]


def test_result_without_metadata_is_ambiguous_with_two_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(FIXTURE.read_text())
    del data["speculative_config"]
    bench = tmp_path / "plain.json"
    bench.write_text(json.dumps(data))
    code, _, err = _advise(tmp_path, capsys, bench, extra=NGRAM)
    assert code == 2
    assert "does not say which speculation the server ran" in err and "--metadata speculative_config=" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_other_method_in_metadata_is_not_used_for_this_candidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(FIXTURE.read_text())
    data["speculative_config"] = json.dumps({"method": "ngram", "num_speculative_tokens": 4})
    bench = tmp_path / "ngram.json"
    bench.write_text(json.dumps(data))
    code, doc, _ = _advise(tmp_path, capsys, bench, extra=NGRAM)
    assert code in (0, 1)
    assert _evidence(doc, "eagle3")["kind"] == "assumed" and _evidence(doc, "ngram")["kind"] == "measured"


PCT = {"mean": 0.02, "p50": 0.02, "p90": 0.03, "p99": 0.04}
COUNTS = {
    "engine": "vllm",
    "spec_decode_num_drafts": 100,
    "spec_decode_draft_tokens": 300,
    "spec_decode_accepted_tokens": 150,
    "spec_decode_per_position_acceptance_rates": [0.7, 0.5, 0.3],
}
EAGLE3 = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}


def _server_run(path: Path, counts: dict[str, Any] | None = COUNTS, **fields: Any) -> Path:
    """A ``specwise bench URL`` result at ``path``: one level (with ``counts`` as its spec-decode reading, or none)
    of a run against http://gpu-box:8000 serving the scenario's target, ``fields`` added or replacing the defaults."""
    level: dict[str, Any] = {"level": 0, "requests": 20, "ttft_s": PCT, "tpot_s": PCT, "itl_s": PCT, "e2e_s": PCT}
    if counts is not None:
        level["spec_decode"] = counts
    doc: dict[str, Any] = {"schema": "specwise.bench/1", "run_id": "r1", "db": "x.sqlite", "url": "http://gpu-box:8000"}
    doc |= {"model": "meta-llama/Llama-3.1-8B-Instruct", "levels": [level], **fields}
    path.write_text(json.dumps(doc))
    return path


def test_specwise_run_against_a_server_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``specwise bench URL`` (levels, no launched configs) was ignored by advise too."""
    bench = _server_run(tmp_path / "url.json")
    code, doc, _ = _advise(tmp_path, capsys, bench)
    ev = _evidence(doc)
    assert code in (0, 1) and ev["kind"] == "measured" and "server http://gpu-box:8000" in ev["source"]
    assert ev["per_position"][:3] == pytest.approx([0.7, 0.5, 0.3])


@pytest.mark.parametrize("root", [None, "/data/ckpt-7b"])
def test_a_run_of_another_model_name_is_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], root: str | None
) -> None:
    """A server benched under a served name (vllm serve --served-model-name) measured a model advise cannot tell is
    the deployment's target: refused with the reason and what to do, not a warning under an ASSUMED headline."""
    loaded: dict[str, Any] = {"model_root": root} if root else {}  # what GET /v1/models said it loaded (or nothing)
    bench = _server_run(tmp_path / "served-as-llama.json", model="llama", speculative_config=EAGLE3, **loaded)
    code, _, err = _advise(tmp_path, capsys, bench)
    assert code == 2
    assert f"{bench}: not used by any candidate (" in err
    assert "it measured target llama, the deployment serves meta-llama/Llama-3.1-8B-Instruct" in err
    assert "--served-model-name ALIAS CHECKPOINT" in err
    assert ("the server loaded it from /data/ckpt-7b" in err) is (root is not None)


def test_unrecognised_json_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "other.json"
    bench.write_text(json.dumps({"results": {"ttft": 1}, "note": "some other tool"}))
    code, _, err = _advise(tmp_path, capsys, bench)
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_run_in_which_nothing_drafted_is_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A specwise bench run against a server without speculation (or whose /metrics was not read) has no
    spec-decode counts: it used to leave the evidence ASSUMED with exit 0 and no word."""
    bench = _server_run(tmp_path / "plain.json", counts=None, run_id="r2")
    code, doc, err = _advise(tmp_path, capsys, bench)
    assert code == 2 and doc == {}
    assert len(err.strip().splitlines()) == 1 and "no level of this run drafted" in err


def test_a_run_of_another_lookup_window_is_refused_with_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The right target with another n-gram window: the refusal says to match the window, not to serve the model
    under its checkpoint's name (first-hour audit 2026-12-07: it gave the alias advice for a window mismatch)."""
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 2}
    bench = _server_run(tmp_path / "ngram-2.json", speculative_config=ngram)
    code, _, err = _advise(tmp_path, capsys, bench, extra=NGRAM + "prompt_lookup_min = 4\nprompt_lookup_max = 4\n")
    assert code == 2
    assert "its n-gram lookup was 2-2, the candidate's is 4-4" in err
    assert "give the candidate the run's prompt_lookup_min and prompt_lookup_max" in err
    assert "--served-model-name" not in err and "another model" not in err
