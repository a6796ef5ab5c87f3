"""Flags that would be ignored or contradict another are refused in one line with exit 2, as ``--draft-tp``
without ``--draft`` is (review 16, finding 9): ``plan-memory --num-speculative-tokens`` without ``--draft``;
``bench --launch`` with ``--url``, ``--model`` or a ``--metrics-url`` (it starts its own servers); ``export
prometheus-rules --min-drafts 0``, which ``monitor`` refuses; and an advise scenario given to ``monitor`` or
``export`` names that command, not ``simulate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main

ROOT = Path(__file__).resolve().parents[2]
ADVISE_SCENARIO = str(ROOT / "examples" / "advise" / "summarize-low-qps.toml")
PLAN = ["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "L40S"]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_plan_memory_k_without_a_draft_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, [*PLAN, "--num-speculative-tokens", "8"])  # before: exit 0, the plan without a draft
    assert err.startswith("specwise plan-memory: error: --num-speculative-tokens: no --draft given")


def test_plan_memory_k_with_a_draft_still_sizes_the_reserve(capsys: pytest.CaptureFixture[str]) -> None:
    """With a draft, k is used (the logits rows of the reserve), and leaving it out is the default 4."""
    plans = {}
    for k in ([], ["--num-speculative-tokens", "4"], ["--num-speculative-tokens", "16"]):
        assert main([*PLAN, "--draft", "Qwen/Qwen3-0.6B", "--json", *k]) in (0, 1)
        plans[tuple(k)] = capsys.readouterr().out
    assert plans[()] == plans[("--num-speculative-tokens", "4")] != plans[("--num-speculative-tokens", "16")]


@pytest.mark.parametrize(
    "extra",
    [
        ["--url", "http://127.0.0.1:9"],
        ["--model", "m"],
        ["--metrics-url", "http://127.0.0.1:9/metrics"],
    ],
    ids=["url", "model", "metrics-url"],
)
def test_bench_launch_refuses_a_running_servers_flags(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launch = tmp_path / "launch.toml"
    launch.write_text('model = "m"\n[[config]]\nname = "baseline"\n')
    argv = ["bench", "--launch", str(launch), *extra, "--rates", "1", "--db", str(tmp_path / "r.sqlite")]
    err = _refused(capsys, argv)  # before: the flag was dropped and vllm serve started
    assert err.startswith(f"specwise bench: error: {extra[0]}: not with --launch, which starts its own servers")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch.toml"]  # no server log, no database


def test_bench_launch_keeps_metrics_url_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metrics-url none`` (read no counters) applies to launched servers too: not refused for --launch."""
    launch = tmp_path / "launch.toml"
    launch.write_text("this is not TOML")
    argv = ["bench", "--launch", str(launch), "--metrics-url", "none", "--db", str(tmp_path / "r.sqlite")]
    assert "invalid TOML" in _refused(capsys, argv)


def test_export_min_drafts_is_checked_as_monitors(capsys: pytest.CaptureFixture[str]) -> None:
    monitor = _refused(capsys, ["monitor", "--url", "http://127.0.0.1:9", "--once", "--min-drafts", "0"])
    export = _refused(capsys, ["export", "prometheus-rules", "--min-drafts", "0"])  # before: exit 0
    assert "argument --min-drafts: expected a number > 0, got '0'" in monitor
    assert "argument --min-drafts: expected a number > 0, got '0'" in export
    assert main(["export", "prometheus-rules", "--min-drafts", "45"]) == 0
    assert ">= 0.15" in capsys.readouterr().out  # 45 drafts per 5 minutes, as a rate per second


@pytest.mark.parametrize(
    ("argv", "reader"),
    [
        (["monitor", "--url", "http://127.0.0.1:9/metrics", "--once"], "monitor --scenario"),
        (["export", "prometheus-rules"], "export prometheus-rules --scenario"),
        (["simulate"], "simulate"),
    ],
    ids=["monitor", "export", "simulate"],
)
def test_an_advise_scenario_names_the_command_that_read_it(
    argv: list[str], reader: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(capsys, [*argv, "--scenario", ADVISE_SCENARIO])
    assert "looks like a `specwise advise` scenario" in err
    assert f"; {reader} takes one [speculation] table" in err
