"""Datasets through ``specwise bench`` against the mock server: a ShareGPT file as multi-turn chat, categories,
prompts that survive --resume, and the flag mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.store import ResultStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "datasets"
FAST = MockBehaviour(ttft_s=0.001, chunk_interval_s=0.0005)


def _bench(url: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["bench", "--url", url, "--model", "mock", "--rates", "200", "--max-tokens", "6",
            "--db", str(tmp_path / "b.sqlite"), "--run-id", "r1", "--json", *extra]  # fmt: skip


def test_a_sharegpt_file_replays_its_conversations_as_chat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sharegpt = EXAMPLES / "sharegpt_sample.json"
    with MockServer(FAST) as server:
        argv = _bench(server.url, tmp_path, "--endpoint", "chat", "--prompts", str(sharegpt), "--turns", "all")
        assert main([*argv, "--requests-per-level", "9"]) == 0
        bodies = list(server.state.bodies)
    doc = json.loads(capsys.readouterr().out)
    assert doc["levels"][0]["requests"] == 9 and doc["levels"][0]["failed"] == 0
    sent = sorted((len(b["messages"]), b["messages"][-1]["content"]) for b in bodies)
    assert len(sent) == 9
    longest = max(bodies, key=lambda b: len(b["messages"]))["messages"]
    assert [m["role"] for m in longest] == ["user", "assistant"] * 2 + ["user"]
    assert longest[-1]["content"] == "Should I run every day to get there faster?"
    assert longest[1]["content"].startswith("Start with run-walk intervals")  # the dataset's own answer
    system = next(b["messages"] for b in bodies if b["messages"][0]["role"] == "system")
    assert system[1]["content"].startswith("What is the difference between a virus")
    store = ResultStore(tmp_path / "b.sqlite")
    try:
        assert {r.workload_class for r in store.records("r1")} == {None}
        stored = store.run_config("r1")["prompts"]
    finally:
        store.close()
    assert sum(1 for p in stored if p.get("history")) == 5  # kept for --resume: the same requests again


def test_categories_and_completions_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(FAST) as server:
        argv = _bench(server.url, tmp_path, "--prompts", str(EXAMPLES / "spec_bench_sample.jsonl"))
        assert main([*argv, "--category", "qa,rag", "--requests-per-level", "10"]) == 0
        prompts = [b["prompt"] for b in server.state.bodies]
    capsys.readouterr()
    assert len(prompts) == 10 and prompts[0] == "What is the capital city of Australia?"
    assert sum(p.startswith("Use the passage") for p in prompts) == 5


def test_dataset_flag_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://127.0.0.1:9"  # never reached: each mistake is found before a request
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "x", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt"}]}]')
    cases = [
        (["--prompts", str(bad)], "bad.json: record 1: conversations[1].value: expected a string, got null"),
        (["--category", "qa"], "--category and --turns select from a dataset: give --prompts"),
        (["--prompts", str(EXAMPLES / "spec_bench_sample.jsonl"), "--category", "code"],
         "no prompts of category code; its categories: math_reasoning, mt_bench, qa, rag, summarization, translation"),
        (["--synthetic-tokens", "32"], "mock: no such file or directory, and not an ORG/NAME model id"),
        (["--synthetic-tokens", "32", "--tokenizer", "org/absent"], "org/absent: not in the local Hugging Face cache"),
    ]  # fmt: skip
    for extra, message in cases:
        assert main(_bench(url, tmp_path, *extra)) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
