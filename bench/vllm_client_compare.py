"""specwise bench vs the real ``vllm bench serve`` (issue 16): the same zero-latency mock, the same offered rates
and request counts, alternating, in one run.

The mock (specwise.loadgen.mock_server, zero TTFT and chunk interval) runs in its own process. At each rate both
clients are run as their users run them -- ``vllm bench serve`` from the vLLM environment (``make vllm``: the
random dataset, the SmolLM2 tokenizer from ``make models``) and ``specwise bench`` -- ``--repeats`` times,
alternating. Reported: the achieved request rate each tool reports for itself (vLLM's ``request_throughput``,
specwise's ``request_rate_per_s``), failures, and the ratio of the medians. Process start-up (vLLM's imports take
seconds) is outside both tools' own measurement windows, so it does not enter the rates.

Run:  python bench/vllm_client_compare.py --rates 600,1200 --requests 1200 --repeats 2 \\
          --out bench/results/vllm_client_compare.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VLLM = ROOT / ".venv-vllm" / "bin" / "vllm"
TOKENIZER = ROOT / "models" / "smollm2-135m"
SPECWISE = [sys.executable, "-m", "specwise.cli"]
MOCK = (
    "import sys, time\n"
    "from specwise.loadgen.mock_server import MockBehaviour, MockServer\n"
    "with MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=2)) as s:\n"
    "    print(s.url, flush=True)\n"
    "    sys.stdin.read()\n"
)


def _vllm(url: str, rate: float, n: int, out: Path, constant: bool) -> dict[str, Any]:
    cmd = [str(VLLM), "bench", "serve", "--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions",
           "--model", "mock", "--tokenizer", str(TOKENIZER), "--dataset-name", "random", "--random-input-len", "16",
           "--random-output-len", "4", "--num-prompts", str(n), "--request-rate", f"{rate:g}", "--seed", "0",
           "--ignore-eos", "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name,
           *(["--burstiness", "1000"] if constant else [])]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
    doc = json.loads(out.read_text())
    return {"client": "vllm bench serve", "rate": rate, "achieved_rate_per_s": doc["request_throughput"],
            "completed": doc["completed"], "failed": n - doc["completed"]}  # fmt: skip


def _specwise(url: str, rate: float, n: int, db: Path, constant: bool) -> dict[str, Any]:
    cmd = [*SPECWISE, "bench", "--url", url, "--model", "mock", "--rates", f"{rate:g}", "--requests-per-level",
           str(n), "--max-tokens", "4", "--metrics-url", "none", "--db", str(db), "--json",
           *(["--arrivals", "constant"] if constant else [])]  # fmt: skip
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
    level = json.loads(proc.stdout)["levels"][0]
    return {"client": "specwise bench", "rate": rate, "achieved_rate_per_s": level["request_rate_per_s"],
            "completed": level["requests"] - level["failed"], "failed": level["failed"]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="600,1200")
    ap.add_argument("--requests", type=int, default=1200)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--constant",
        action="store_true",
        help="evenly spaced arrivals (vLLM: --burstiness 1000), so below saturation the achieved rate measures the "
        "client, not the draw of Poisson gaps (1/sqrt(n) = 2.9%% at 1,200 requests)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "vllm_client_compare.json")
    args = ap.parse_args()
    if not VLLM.exists() or not TOKENIZER.is_dir():
        sys.exit("needs the vLLM environment and the SmolLM2 tokenizer: make models")
    rates = [float(r) for r in args.rates.split(",")]
    mock = subprocess.Popen([sys.executable, "-c", MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert mock.stdout is not None
    url = mock.stdout.readline().strip()
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rate in rates:
                for i in range(args.repeats):
                    runs = [("vllm", i), ("specwise", i)] if i % 2 == 0 else [("specwise", i), ("vllm", i)]
                    for who, rep in runs:
                        out = Path(tmp) / f"{who}-{rate:g}-{rep}"
                        if who == "vllm":
                            row = _vllm(url, rate, args.requests, out.with_suffix(".json"), args.constant)
                        else:
                            row = _specwise(url, rate, args.requests, out.with_suffix(".sqlite"), args.constant)
                        rows.append({**row, "repeat": rep})
                        print(f"{row['client']:17s} {rate:6g} req/s offered: {row['achieved_rate_per_s']:7.1f} "
                              f"achieved, {row['failed']} failed", flush=True)  # fmt: skip
    finally:
        mock.kill()
    ratios = {}
    for rate in rates:
        med = {c: statistics.median(r["achieved_rate_per_s"] for r in rows if r["rate"] == rate and r["client"] == c)
               for c in ("specwise bench", "vllm bench serve")}  # fmt: skip
        ratios[f"{rate:g}"] = round(med["specwise bench"] / med["vllm bench serve"], 3)
        print(f"{rate:6g} req/s: specwise / vllm bench serve achieved rate (medians) = {ratios[f'{rate:g}']:.3f}")
    doc = {
        "command": "python bench/vllm_client_compare.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": 2, "python": platform.python_version(), "platform": platform.platform()},
        "requests_per_run": args.requests,
        "arrivals": "constant" if args.constant else "poisson",
        "rows": rows,
        "ratio_specwise_over_vllm": ratios,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
