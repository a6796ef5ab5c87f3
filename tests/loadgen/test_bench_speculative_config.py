"""Review E: ``specwise bench --url`` could not say which speculation the server ran, so ``advise --bench`` refused
its result for any scenario of two candidates, pointing at another tool's flag. ``bench --speculative-config JSON``
keeps it with the run (the result JSON, the --output rows, a --resume), and advise matches the run by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"
TARGET = "meta-llama/Llama-3.1-70B-Instruct"  # the example's target, as the server's served name
NGRAM = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 4}'


def _bench(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Path]:
    out = tmp_path / "bench.json"
    with MockServer(MockBehaviour(model_name=TARGET)) as server:
        argv = ["bench", "--url", server.url, "--model", TARGET, "--rates", "20", "--requests-per-level", "6"]
        argv += ["--max-tokens", "24", "--db", str(tmp_path / "b.sqlite"), "--json", *extra]
        code = main(argv)
    out.write_text(capsys.readouterr().out)
    return code, out


def test_the_config_is_kept_and_advise_matches_the_run_by_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _bench(tmp_path, capsys, "--speculative-config", NGRAM, "--output", str(tmp_path / "rows.json"))
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["speculative_config"] == json.loads(NGRAM)
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    assert rows and all(json.loads(r["speculative_config"]) == json.loads(NGRAM) for r in rows)
    argv = ["advise", "--scenario", str(EXAMPLE), "--processes", "1", "--json", "--bench", str(out)]
    assert main(argv) in (0, 1)  # two candidates: the run is matched to ngram, not refused as ambiguous
    advice = json.loads(capsys.readouterr().out)
    ngram = next(c for c in advice["candidates"] if c["method"] == "ngram")
    assert ngram["evidence"][0]["kind"] == "measured"
    other = next(c for c in advice["candidates"] if c["method"] != "ngram")
    assert all(e["kind"] != "measured" for e in other["evidence"])


def test_without_it_two_candidates_are_ambiguous_and_the_error_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _bench(tmp_path, capsys)
    assert code == 0 and "speculative_config" not in json.loads(out.read_text())
    assert main(["advise", "--scenario", str(EXAMPLE), "--processes", "1", "--bench", str(out)]) == 2
    err = capsys.readouterr().err
    assert "specwise bench --url URL --speculative-config" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("ngram", "expected the JSON of vllm serve --speculative-config"),
        ('{"num_speculative_tokens": 4}', "an object with a 'method'"),
        ("[1]", "an object with a 'method'"),
    ],
)
def test_a_bad_config_is_refused_before_any_request(value: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--speculative-config", value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "argument --speculative-config" in err and said in err


def test_not_with_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    launch = Path(__file__).resolve().parents[2] / "examples" / "launch" / "smollm2.toml"
    assert main(["bench", "--launch", str(launch), "--speculative-config", NGRAM, "--db", str(tmp_path / "x")]) == 2
    assert "--speculative-config: not with --launch" in capsys.readouterr().err


def test_resume_keeps_the_stored_config_takes_a_missing_one_and_refuses_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review G: ``--resume RUN --speculative-config X`` ignored X without a word."""
    db = str(tmp_path / "b.sqlite")
    with MockServer(MockBehaviour(model_name=TARGET)) as server:
        argv = ["bench", "--url", server.url, "--model", TARGET, "--rates", "20", "--requests-per-level", "4"]
        assert main([*argv, "--max-tokens", "16", "--db", db, "--run-id", "r1", "--json"]) == 0
        capsys.readouterr()
        resume = ["bench", "--url", server.url, "--resume", "r1", "--db", db, "--json"]
        assert main([*resume, "--speculative-config", NGRAM]) == 0  # none stored: taken
        assert json.loads(capsys.readouterr().out)["speculative_config"] == json.loads(NGRAM)
        assert main(resume) == 0  # and kept for the next --resume
        assert json.loads(capsys.readouterr().out)["speculative_config"] == json.loads(NGRAM)
        other = '{"method": "eagle3", "model": "x", "num_speculative_tokens": 3}'
        assert main([*resume, "--speculative-config", other]) == 2
    err = capsys.readouterr().err
    assert "--speculative-config: run r1 was started with" in err and len(err.strip().splitlines()) == 1
