"""Review 12, defects 5, 6 and 9-11 at the Python API: every mistake is one SpecwiseError naming the argument,
before any work (the module's promise), and a local model may be given as a Path, as simulate's scenario may.

* #9 ``reserve_bytes="x"`` raised TypeError, ``names="x"`` AttributeError, and the unknown-keyword message offered
  the internal ``names``.
* #10 ``tp=True`` / ``max_model_len=True`` planned TP 1 and a 1-token context; ``reserve_bytes=1.5e9`` turned
  ``kv_cache_tokens`` and ``per_gpu.reserve_bytes`` into floats.
* #11 ``inspect`` / ``check_pair`` / ``plan_memory`` refused a Path as "expected a catalog id or a local path".
* #5/#6 as plan-memory: ``max_num_batched_tokens`` below ``max_num_seqs`` and a draft model at ``draft_tp=1`` under
  ``tp=4`` said ``fits``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import specwise
from specwise.cli import main
from specwise.errors import SpecwiseError
from tests.conftest import LLAMA_TINY, write_model_dir

TARGET = "meta-llama/Llama-3.1-70B-Instruct"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
GPU = "H100-SXM-80GB"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"reserve_bytes": "x"}, "reserve_bytes: expected an integer, got 'x'"),
        ({"reserve_bytes": 1.5e9}, "reserve_bytes: expected an integer, got 1500000000.0"),
        ({"reserve_bytes": -1}, "reserve_bytes: expected an integer >= 0"),
        ({"reserve_bytes": True}, "reserve_bytes: expected an integer, got True"),
        ({"tp": True}, "tp: expected an integer, got True"),
        ({"max_model_len": True}, "max_model_len: expected an integer, got True"),
        ({"num_gpus": True}, "num_gpus: expected an integer, got True"),
        ({"draft": DRAFT, "draft_tp": True}, "draft_tp: expected an integer, got True"),
        ({"max_num_seqs": 8.0}, "max_num_seqs: expected an integer, got 8.0"),
        ({"kv_cache_dtype": None}, "kv_cache_dtype: expected a string, got None"),
        ({"kv_cache_dtype": "int8"}, "kv_cache_dtype: 'int8' is not one of auto"),
        ({"quantization": 5}, "quantization: expected a string, got 5"),
        ({"max_num_batched_tokens": 10}, "max_num_batched_tokens=10: must be at least max_num_seqs (256): vLLM's"),
        (
            {"draft": DRAFT, "draft_tp": 1},
            "draft_tp=1, but vLLM V1 runs a draft model only at the target's tensor parallelism (4): set draft_tp=4",
        ),
    ],
)
def test_plan_memory_refuses_each_mistake_in_one_line(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        specwise.plan_memory(TARGET, GPU, **{"tp": 4, **kwargs})
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_plan_memory_checks_its_arguments_before_any_model_is_resolved() -> None:
    # "before any work": an unknown target is not looked up when an argument is already wrong
    with pytest.raises(SpecwiseError, match=r"^max_num_batched_tokens=10: must be at least"):
        specwise.plan_memory("no/such-model", GPU, max_num_batched_tokens=10)
    with pytest.raises(SpecwiseError, match=r"^tp: expected an integer"):
        specwise.plan_memory("no/such-model", GPU, tp=True)


def test_names_is_not_a_keyword_of_plan_memory() -> None:
    # before: names="x" raised AttributeError, and the list of keywords offered it
    with pytest.raises(SpecwiseError) as exc:
        specwise.plan_memory(TARGET, GPU, tp=4, names="x")
    assert "unexpected keyword argument 'names'" in str(exc.value)
    with pytest.raises(SpecwiseError) as exc:
        specwise.plan_memory(TARGET, GPU, tp=4, foo=1)
    takes = str(exc.value).split("it takes ", 1)[1]
    assert "names" not in takes.split(", ") and "reserve_bytes" in takes


def test_an_integer_reserve_keeps_the_document_integer() -> None:
    data = specwise.plan_memory(TARGET, GPU, tp=4, reserve_bytes=1_500_000_000).to_json()
    assert type(data["kv_cache_tokens"]) is int and data["per_gpu"]["reserve_bytes"] == 1_500_000_000
    assert type(data["per_gpu"]["reserve_bytes"]) is int


def test_a_path_is_a_local_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: "model: expected a catalog id or a local path, got PosixPath(...)"
    model = write_model_dir(tmp_path, "tiny", LLAMA_TINY)
    view = specwise.inspect(model)
    assert main(["inspect", str(model), "--json"]) == 0
    assert json.loads(json.dumps(view.to_json())) == json.loads(capsys.readouterr().out)
    assert specwise.check_pair(model, model).compatible
    assert specwise.plan_memory(model, GPU).target.name == specwise.plan_memory(str(model), GPU).target.name
    with pytest.raises(SpecwiseError, match=r"^model: expected a catalog id or a local path \(str or Path\), got 5$"):
        specwise.inspect(5)  # type: ignore[arg-type]
