"""The real guidellm against specwise's mock server, its JSON report read back: one level per load with guidellm's
milliseconds turned into seconds, and ``advise --bench`` refusing it in one line (no acceptance counters).

Slow, and skipped unless guidellm is installed: it pulls torch (~1.5 GB with the CPU wheel), so CI does not install
it; point ``SPECWISE_GUIDELLM`` at its executable (a side venv: ``python -m venv V && V/bin/pip install
guidellm==0.8.1``) or put ``guidellm`` on PATH. The fast tier reads the report guidellm 0.8.1 wrote, recorded in
tests/fixtures/guidellm with its command."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.contracts.bench_formats import read_guidellm
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from tests.integration.engine import MODEL

pytestmark = [pytest.mark.slow, pytest.mark.integration]
GUIDELLM = os.environ.get("SPECWISE_GUIDELLM") or shutil.which("guidellm")
REQUESTS, OUTPUT_TOKENS, RATE = 20, 60, 10


@pytest.fixture(scope="module", autouse=True)
def _guidellm() -> None:
    if not GUIDELLM or not Path(GUIDELLM).exists():
        pytest.skip("guidellm not installed: set SPECWISE_GUIDELLM to its executable (pip install guidellm)")
    if not (MODEL / "tokenizer.json").exists():
        pytest.skip("SmolLM2 tokenizer missing: run 'make models'")


def _guidellm_run(url: str, out: Path) -> str:
    assert GUIDELLM is not None
    argv = [
        *(GUIDELLM, "run", "--backend"),
        f"kind=openai_http,target={url},model=meta-llama/Llama-3.1-8B-Instruct,request_format=/v1/completions",
        *("--tokenizer", f"kind=huggingface_auto,model={MODEL}"),
        *("--data", f"kind=synthetic_text,prompt_tokens=32,output_tokens={OUTPUT_TOKENS}"),
        *("--profile", f"kind=constant,rate={RATE}", "--constraint", f"kind=max_requests,count={REQUESTS}"),
        *("--seed", "kind=static,value=0", "--metrics", "kind=generative,sample_size=0"),
        *("--output", f"kind=json,path={out}", "--disable-console"),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    version = subprocess.run([GUIDELLM, "--version"], capture_output=True, text=True, timeout=60, check=True)
    return version.stdout.split()[-1]


def test_guidellm_report_is_read_in_seconds_and_refused_as_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "benchmarks.json"
    with MockServer(MockBehaviour(ttft_s=0.005, chunk_interval_s=0.002)) as server:
        version = _guidellm_run(server.url, report_path)
        served = server.state.requests
    report = read_guidellm(report_path)
    assert report.guidellm_version == version
    (level,) = report.doc.levels
    s = level.summary
    assert s.requests == REQUESTS == served and s.failed == 0 and s.target_rate_per_s == RATE
    assert level.spec_decode is None
    # the mock's physics in seconds: TTFT 5 ms, then 3 tokens every 2 ms
    assert 0.005 <= s.ttft_s.mean < 0.05 and 0.002 / 3 <= s.tpot_s.mean < 0.002
    assert s.e2e_s.mean == pytest.approx(s.ttft_s.mean + (OUTPUT_TOKENS - 1) * s.tpot_s.mean, rel=0.2)

    code = main(["advise", "--scenario", "example:advise/summarize-low-qps", "--bench", str(report_path)])
    err = capsys.readouterr().err
    assert code == 2 and f"a guidellm {version} report ({RATE} req/s)" in err and err.count("\n") <= 1
