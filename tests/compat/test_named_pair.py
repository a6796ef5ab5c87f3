"""check-pair, plan-memory and the API check a named draft through one function (:mod:`specwise.compat.named`):
the deployment's max_model_len reaches the pair check in each, so a context the draft covers draws no warning
asking for the cap that was already given."""

from __future__ import annotations

import json

import pytest

import specwise
from specwise.cli import main

LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"  # trained with 2,048 positions


def _findings(doc: dict[str, object]) -> dict[str, str]:
    return {f["check"]: f["status"] for f in doc["findings"]}  # type: ignore[attr-defined, index]


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert err == ""
    doc: dict[str, object] = json.loads(out)
    return doc


@pytest.mark.parametrize("length", [None, "2048"])
def test_plan_memory_and_check_pair_agree_on_max_model_len(
    capsys: pytest.CaptureFixture[str], length: str | None
) -> None:
    context = [] if length is None else ["--max-model-len", length]
    pair = _cli_json(capsys, "check-pair", "--target", LLAMA8, "--draft", EAGLE3, *context)
    plan = _cli_json(capsys, "plan-memory", "--target", LLAMA8, "--draft", EAGLE3, "--gpu", "H100-SXM-80GB", *context)
    assert plan["compatibility"] == pair
    if length is None:  # the target's 131,072 positions: the head's 2,048 are too few
        assert _findings(pair)["max_length"] == "warn"
    else:  # capped at the head's positions: nothing to warn about
        assert "max_length" not in _findings(pair) or _findings(pair)["max_length"] == "pass"
        assert "131,072" not in json.dumps(plan)


def test_api_plan_memory_passes_max_model_len_to_the_pair_check() -> None:
    plan = specwise.plan_memory(LLAMA8, "H100-SXM-80GB", draft=EAGLE3, max_model_len=2048)
    assert plan.compatibility == specwise.check_pair(LLAMA8, EAGLE3, max_model_len=2048)
    assert plan.compatibility is not None and "131,072" not in json.dumps(plan.compatibility.to_json())
