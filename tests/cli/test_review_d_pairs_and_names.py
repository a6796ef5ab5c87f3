"""Review D: check-pair answers for a model-free draft (compatible with any target, exit 0) and for ``mtp`` on a
target without MTP layers (an incompatible pair, exit 1), as the README and its --help say, in text, --json and the
Python API alike; an empty model or example name is refused naming its flag or argument (exit 2), never read as
"not given"."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import specwise
from specwise.cli import main
from specwise.errors import SpecwiseError

QWEN8 = "Qwen/Qwen3-8B"  # no MTP layers


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method", ["ngram", "suffix", "NGram"])
def test_check_pair_model_free_is_compatible(capsys: pytest.CaptureFixture[str], method: str) -> None:
    code, out, err = _run(capsys, "check-pair", "--target", QWEN8, "--draft", method)
    assert (code, err) == (0, "")
    assert "compatible (model-free: no weights, no KV, works with any target)" in out
    assert "not compatible" not in out

    code, out, err = _run(capsys, "check-pair", "--target", QWEN8, "--draft", method, "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    # the document every check-pair --json prints, with what does not apply null rather than a made-up number
    assert list(doc) == ["target", "draft", "compatible", "param_ratio", "active_param_ratio", "byte_ratio", "findings"]
    assert doc["target"] == QWEN8 and doc["draft"] == method.lower() and doc["compatible"] is True
    assert doc["param_ratio"] is None and doc["active_param_ratio"] is None and doc["byte_ratio"] is None
    [finding] = doc["findings"]
    assert finding["check"] == "method" and finding["status"] == "pass"
    assert finding["evidence"]["model_free"] is True
    assert set(finding["evidence"]["not_applicable"]) >= {"vocab", "tokenizer", "size_ratio"}


def test_check_pair_model_free_still_checks_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check-pair", "--target", QWEN8, "--draft", "ngram", "--max-model-len", "99999999")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "--max-model-len 99999999 exceeds" in err


def test_check_pair_mtp_without_mtp_layers_is_incompatible(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check-pair", "--target", QWEN8, "--draft", "mtp")
    assert (code, err) == (1, "")
    assert "has no MTP layers" in out and "not compatible" in out

    code, out, err = _run(capsys, "check-pair", "--target", QWEN8, "--draft", "mtp", "--json")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert doc["compatible"] is False and doc["draft"] == "mtp" and doc["param_ratio"] is None
    [finding] = doc["findings"]
    assert finding["status"] == "fail" and "has no MTP layers" in finding["message"]


def test_check_pair_mtp_with_mtp_layers_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check-pair", "--target", "deepseek-ai/DeepSeek-V3", "--draft", "mtp", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["compatible"] is True and doc["param_ratio"] > 1


def test_api_check_pair_agrees_with_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    for draft, code in (("ngram", 0), ("suffix", 0), ("mtp", 1)):
        report = specwise.check_pair(QWEN8, draft)
        rc, out, _ = _run(capsys, "check-pair", "--target", QWEN8, "--draft", draft, "--json")
        assert rc == code and report.compatible is (code == 0)
        assert report.to_json() == json.loads(out)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["check-pair", "--target", QWEN8, "--draft", ""], "argument --draft: expected a non-empty value"),
        (["check-pair", "--target", QWEN8, "--draft", "  "], "argument --draft: expected a non-empty value"),
        (["check-pair", "--target", "", "--draft", "Qwen/Qwen3-0.6B"], "argument --target: expected a non-empty value"),
        (["check-pair", "--target", "", "--draft", "ngram"], "argument --target: expected a non-empty value"),
        (["inspect", ""], "argument ID_OR_PATH: expected a non-empty value"),
        (["plan-memory", "--target", "", "--gpu", "H100"], "argument --target: expected a non-empty value"),
        (
            ["plan-memory", "--target", QWEN8, "--draft", "", "--gpu", "H100"],
            "argument --draft: expected a non-empty value",
        ),
        (
            ["plan-memory", "--target", QWEN8, "--draft", "", "--gpu", "H100", "--num-speculative-tokens", "3"],
            "argument --draft: expected a non-empty value",
        ),
        (["drafts", "--target", ""], "argument --target: expected a non-empty value"),
        (["examples", ""], "argument NAME: expected a non-empty value"),
        (["examples", " ", "--json"], "argument NAME: expected a non-empty value"),
    ],
)
def test_an_empty_name_is_refused_naming_its_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], err
    assert "Traceback" not in err


def test_examples_without_name_still_lists(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "examples", "--json")
    assert code == 0 and len(json.loads(out)) > 1


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: specwise.check_pair(QWEN8, ""), "draft: empty name"),
        (lambda: specwise.check_pair("", "ngram"), "target: empty name"),
        (lambda: specwise.inspect(""), "model: empty name"),
        (lambda: specwise.plan_memory("", "H100"), "target: empty name"),
        (lambda: specwise.plan_memory(QWEN8, "H100", draft=""), "draft: empty name"),
    ],
)
def test_the_api_names_the_empty_argument(call: Callable[[], object], named: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        call()
    assert str(exc.value).startswith(named)
