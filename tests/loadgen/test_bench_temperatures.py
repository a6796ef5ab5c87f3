"""A bench result records the sampling temperatures its requests carried (a prompt's own, else --temperature), so
advise can say when it applies that acceptance to a workload at another temperature."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.plan import RunConfig
from specwise.prompts.items import PromptItem


def test_the_temperatures_sent_are_the_prompts_own_else_the_runs() -> None:
    prompts = (PromptItem("a"), PromptItem("b", temperature=1.0), PromptItem("c", temperature=0.0))
    assert RunConfig("", "", prompts, temperature=0.7).sent_temperatures() == (0.0, 0.7, 1.0)
    # request i sends prompt i: with 2 requests a level, the third prompt is never sent
    assert RunConfig("", "", prompts, temperature=0.7, requests_per_level=2).sent_temperatures() == (0.7, 1.0)
    assert RunConfig("", "", (PromptItem("a"),)).sent_temperatures() == (0.0,)


def test_a_bench_run_records_its_temperature(tmp_path: Path) -> None:
    argv = ["bench", "--model", "m", "--rates", "50", "--requests-per-level", "4", "--max-tokens", "8"]
    argv += ["--temperature", "0.7", "--db", str(tmp_path / "b.sqlite"), "--json"]
    with MockServer(MockBehaviour(ttft_s=0.002, chunk_interval_s=0.001)) as server:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*argv, "--url", server.url]) == 0
    assert json.loads(out.getvalue())["temperatures"] == [0.7]


def test_a_launch_run_records_its_temperature(tmp_path: Path) -> None:
    from tests.loadgen.test_launch_resume import _mock_launch

    argv = ["bench", "--launch", str(_mock_launch(tmp_path)), "--rates", "50", "--requests-per-level", "4"]
    argv += ["--max-tokens", "8", "--temperature", "0.3", "--db", str(tmp_path / "b.sqlite"), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    doc = json.loads(out.getvalue())
    assert doc["temperatures"] == [0.3] and [c["name"] for c in doc["configs"]] == ["a", "b"]
