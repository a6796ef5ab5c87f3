"""advise's ``vllm serve`` command and launch file, read by vLLM's own parser and config builder (slow; review 12 #2):
the KV cache dtype, token budget and online quantisation the plan used are the ones vLLM would run with. No weights are
loaded: the engine config is built from the models' config.json only."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import parse_inputs
from tests.integration.engine import DRAFT, ENV, MODEL, PYTHON, require_engine

pytestmark = [pytest.mark.slow, pytest.mark.integration]

_PARSE = """
import json, sys
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.usage.usage_lib import UsageContext
from vllm.utils.argparse_utils import FlexibleArgumentParser
for argv in json.load(sys.stdin):
    assert argv[:2] == ["vllm", "serve"], argv
    ns = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(argv[2:])
    ns.model = ns.model_tag or ns.model
    args = AsyncEngineArgs.from_cli_args(ns)
    args.skip_tokenizer_init = True
    cfg = args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    spec = cfg.speculative_config
    print(json.dumps({"kv": cfg.cache_config.cache_dtype, "batched": cfg.scheduler_config.max_num_batched_tokens,
                      "seqs": cfg.scheduler_config.max_num_seqs, "len": cfg.model_config.max_model_len,
                      "method": spec.method if spec else None}))
"""


@pytest.fixture(scope="module", autouse=True)
def _engine() -> None:
    require_engine(DRAFT / "config.json")


def _doc(tmp_path: Path, min_speedup: float = 1.05) -> dict[str, Any]:
    data = {
        "name": "smollm2-cpu",
        "deployment": {
            "target": str(MODEL),
            "gpu": "L4",
            "max_model_len": 2048,
            "max_num_seqs": 8,
            "max_num_batched_tokens": 4096,
            "kv_cache_dtype": "fp8",
        },
        "advise": {"operating_qps": 0.5, "min_speedup": min_speedup},
        "sweep": {"qps": [0.5, 1.0], "num_requests": 100},
        "workload": [
            {
                "name": "code",
                "task": "code",
                "temperature": 0.0,
                "prompt_tokens": {"dist": "fixed", "mean": 200},
                "output_tokens": {"dist": "fixed", "mean": 100},
            }
        ],
        "candidate": [{"method": "draft_model", "draft": str(DRAFT), "k": [0, 2, 4], "acceptance": 0.9}],
    }
    return advise(parse_inputs(data, "inline.toml", tmp_path), processes=1).to_json()


def _vllm_reads(argvs: list[list[str]]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(PYTHON), "-c", _PARSE],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", **ENV},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_vllm_runs_the_planned_kv_cache_and_token_budget(tmp_path: Path) -> None:
    enabled = _doc(tmp_path)
    assert enabled["decision"] == "enable", enabled["reason"]
    speedup = next(c for c in enabled["candidates"] if c["verdict"] == "enable")["speedup_at_operating_qps"]
    # the point estimate clears this minimum, the band's low end does not: measure first, with a launch file
    measure = _doc(tmp_path, min_speedup=round(speedup * 0.999, 4))
    assert measure["decision"] == "measure_first", measure["reason"]
    launch = tomllib.loads(measure["measure"]["launch_toml"])
    argvs = [enabled["vllm"]["serve_argv"]] + [
        ["vllm", "serve", launch["model"], *launch["extra_args"]]
        + (["--speculative-config", json.dumps(c["speculative_config"])] if "speculative_config" in c else [])
        for c in launch["config"]
    ]
    rows = _vllm_reads(argvs)
    assert [r["method"] for r in rows] == ["draft_model", None, "draft_model"]
    for r in rows:
        assert (r["kv"], r["batched"], r["seqs"], r["len"]) == ("fp8", 4096, 8, 2048), r
