"""advise's vLLM config against the real engine (slow; `make test-integration`): the generated
--speculative-config passes vLLM's own SpeculativeConfig validation and starts a real vLLM CPU server."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.engines import Speculation, get_engine
from specwise.loadgen.launcher import EngineServer, LaunchFile, ServerConfig
from specwise.methods import get_method
from tests.integration.engine import DRAFT, ENV, EXTRA, MODEL, PYTHON, require_engine

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _engine() -> None:
    require_engine()


_VALIDATE = """
import json, sys
from vllm.config import SpeculativeConfig
for cfg in json.load(sys.stdin):
    c = SpeculativeConfig(**cfg)
    print(json.dumps({"method": c.method, "k": c.num_speculative_tokens,
                      "schedule": c.num_speculative_tokens_per_batch_size}))
"""


def test_generated_model_free_configs_pass_vllm_validation() -> None:
    low = advise(load_inputs(ROOT / "examples/advise/summarize-low-qps.toml"), processes=1).to_json()
    # n-gram is "measure first" there (the 1B draft is recommended): the config it would measure is the one checked
    generated = next(c for c in low["candidates"] if c["candidate"] == "ngram")["speculative_config"]
    assert generated["method"] == "ngram"
    scheduled = get_engine("vllm").speculative_config(
        Speculation(get_method("ngram"), 4, prompt_lookup=(2, 4), schedule=((1, 34, 4), (35, 256, 0)))
    )
    proc = subprocess.run(
        [str(PYTHON), "-c", _VALIDATE],
        input=json.dumps([generated, scheduled]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert rows[0] == {"method": "ngram", "k": generated["num_speculative_tokens"], "schedule": None}
    assert rows[1]["schedule"] == [[1, 34, 4], [35, 256, 0]]


def test_generated_draft_model_config_starts_real_vllm(tmp_path: Path) -> None:
    data = {
        "name": "smollm2-cpu",
        "deployment": {"target": str(MODEL), "gpu": "L4", "max_model_len": 2048, "max_num_seqs": 8},
        "advise": {"operating_qps": 0.5},
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
    doc = advise(parse_inputs(data, "inline.toml", tmp_path), processes=1).to_json()
    assert doc["decision"] == "enable", doc["reason"]
    spec = doc["vllm"]["speculative_config"]
    assert spec["method"] == "draft_model" and spec["model"] == str(DRAFT)
    launch = LaunchFile(
        model=str(MODEL),
        served_model_name="smollm2",
        python=str(PYTHON),
        configs=(ServerConfig("advised", spec),),
        extra_args=EXTRA,
        env=ENV,
        startup_timeout_s=600,
    )
    with EngineServer(launch, launch.configs[0], tmp_path / "vllm.log") as url:
        r = httpx.post(
            url + "/v1/completions",
            json={"model": "smollm2", "prompt": "def add(a, b):", "max_tokens": 24, "temperature": 0},
            timeout=120,
        )
        assert r.status_code == 200, r.text
        text = httpx.get(url + "/metrics", timeout=10).text
    m = re.search(r"^vllm:spec_decode_num_draft_tokens_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    assert m and float(m.group(1)) > 0  # the server really speculated with the advised config
