"""Client overhead: how fast the bench harness sends streamed requests, against a zero-latency mock, next to a
reference client in the same run.

The mock (specwise.loadgen.mock_server: zero TTFT and chunk interval, a new connection per request, 4 tokens in 2
SSE chunks + [DONE]) runs in its own process. At each offered rate, with Poisson arrivals and the same request
count, three clients run one after another against it:

* ``specwise``: the harness itself (:func:`specwise.loadgen.runner.run_plan`: the scheduler, SSE parsing with
  per-chunk token counts from continuous_usage_stats, records committed by the batch writer -- everything a bench
  run does);
* ``vllm_like``: a faithful minimal copy of ``vllm bench serve``'s client loop (an aiohttp session, a Poisson
  request generator awaiting asyncio.sleep between requests, one task per request, ``iter_any`` + json per SSE
  message, TTFT/ITL kept in lists). ``--vllm-python`` (a Python with vLLM) is the way to run the real one, but this
  machine has no vLLM, so the comparison is against this copy;
* ``httpx`` (``--httpx``): the previous harness transport, an ``httpx.AsyncClient`` stream per request with the same
  SSE parsing, with the pool as the harness had it and with keep-alive off (``max_keepalive_connections=0``: no idle
  connections for the pool to scan).

Reported per client and rate: achieved request rate (completed / span from first send to last end), scheduling lag
(actual send - scheduled send) p50/p99, TTFT p50/p99, failures, and the client process's CPU seconds per request
(time.process_time over the run; the mock's CPU is its own process). Each rate runs the two clients ``--repeats``
times, alternating, and the ratios (specwise / vllm_like achieved rate, CPU per request) are of the medians, all
from the same run. On a 2-core machine the mock and the client share the cores; load from elsewhere moves single
runs, which is why they alternate.

Run:  python bench/client_overhead.py --rates 600,800,1200 --httpx --out bench/results/client_overhead.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import numpy as np

from specwise.loadgen.client import ClientConfig, RequestSpec, _body, _Stream
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.sse import DONE, sse_payload
from specwise.loadgen.store import ResultStore
from specwise.traffic import Arrivals

ROOT = Path(__file__).resolve().parents[1]
Row = dict[str, Any]


def _stats(name: str, rate: float, sched: list[float], starts: list[float], ends: list[float], ttft: list[float],
           failed: int, cpu: float, n: int) -> Row:  # fmt: skip
    lag = np.array(starts) - np.array(sched)
    span = max(ends) - min(starts)
    return {
        "client": name,
        "target_rate_per_s": rate,
        "requests": n,
        "achieved_rate_per_s": round((n - failed) / span, 1),
        "lag_p50_ms": round(float(np.percentile(lag, 50)) * 1e3, 2),
        "lag_p99_ms": round(float(np.percentile(lag, 99)) * 1e3, 2),
        "ttft_p50_ms": round(float(np.percentile(ttft, 50)) * 1e3, 2) if ttft else None,
        "ttft_p99_ms": round(float(np.percentile(ttft, 99)) * 1e3, 2) if ttft else None,
        "failed": failed,
        "cpu_ms_per_request": round(cpu / n * 1e3, 3),
    }


def specwise_client(url: str, rate: float, n: int) -> Row:
    reqs = tuple(RequestSpec(f"r{i}", "hello", 4) for i in range(n))
    plan = BenchPlan(
        client=ClientConfig(base_url=url, model="mock", request_timeout_s=60),
        levels=(LevelPlan(0, rate, reqs),),
        arrivals=Arrivals("poisson", rate),
        metrics_url=None,
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "o.sqlite")
        c0 = time.process_time()
        asyncio.run(run_plan(plan, store, "o"))
        cpu = time.process_time() - c0
        records = store.records("o")
        store.close()
    assert len(records) == n
    ok = [r for r in records if r.ok]
    return _stats(
        "specwise", rate, [r.scheduled_s for r in records], [r.start_s for r in records], [r.end_s for r in records],
        [r.ttft_s for r in ok if r.ttft_s is not None], n - len(ok), cpu, n,
    )  # fmt: skip


Sender = Callable[[float], Awaitable[tuple[float, float, float | None, bool]]]


async def _poisson(rate: float, n: int, send: Sender) -> list[tuple[float, float, float, float | None, bool]]:
    """vLLM's ``get_request`` + ``benchmark`` loop: sleep until the next arrival, create a task, repeat. The arrival
    times are the ones the harness's plan draws for the same rate and count (same seed), so every client is offered
    the same schedule."""
    offsets = Arrivals("poisson", rate).times(np.random.default_rng([0, 0]), n)
    tasks = []
    t0 = time.perf_counter()
    for i in range(n):
        due = t0 + float(offsets[i] - offsets[0])
        if i:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))

        async def one(scheduled: float = due) -> tuple[float, float, float, float | None, bool]:
            return (scheduled, *await send(scheduled))

        tasks.append(asyncio.create_task(one()))
    return list(await asyncio.gather(*tasks))


def vllm_like(url: str, rate: float, n: int) -> Row:
    """A minimal, faithful copy of vllm/benchmarks/lib/endpoint_request_func.py async_request_openai_completions
    and its serve loop (aiohttp session with a TCPConnector, iter_any, split messages on blank lines)."""
    api_url = url + "/v1/completions"

    async def run() -> list[tuple[float, float, float, float | None, bool]]:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300, keepalive_timeout=60)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=6 * 3600)) as s:

            async def send(_: float) -> tuple[float, float, float | None, bool]:
                payload = {"model": "mock", "prompt": "hello", "temperature": 0.0, "max_tokens": 4, "stream": True,
                           "stream_options": {"include_usage": True}}  # fmt: skip
                headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY')}"}
                st = time.perf_counter()
                ttft, ok, text, itl, last = None, False, "", [], st
                try:
                    async with s.post(url=api_url, json=payload, headers=headers) as response:
                        if response.status == 200:
                            buf = b""
                            async for chunk_bytes in response.content.iter_any():
                                buf += chunk_bytes
                                *messages, buf = buf.split(b"\n\n")
                                for m in messages:
                                    m = m.strip()
                                    if not m or m.startswith(b":"):
                                        continue
                                    chunk = m.decode().removeprefix("data: ")
                                    if chunk == "[DONE]":
                                        continue
                                    data = json.loads(chunk)
                                    if choices := data.get("choices"):
                                        now = time.perf_counter()
                                        if ttft is None:
                                            ttft = now - st
                                        else:
                                            itl.append(now - last)
                                        last = now
                                        text += choices[0].get("text") or ""
                            ok = True
                except (aiohttp.ClientError, OSError, TimeoutError):
                    ok = False
                return st, time.perf_counter(), ttft, ok

            return await _poisson(rate, n, send)

    c0 = time.process_time()
    rows = asyncio.run(run())
    cpu = time.process_time() - c0
    return _from_rows("vllm_like", rate, n, rows, cpu)


def _from_rows(name: str, rate: float, n: int, rows: list[tuple[float, float, float, float | None, bool]],
               cpu: float) -> Row:  # fmt: skip
    return _stats(
        name, rate, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
        [r[3] for r in rows if r[3] is not None and r[4]], sum(1 for r in rows if not r[4]), cpu, n,
    )  # fmt: skip


def httpx_client(url: str, rate: float, n: int, keepalive: bool) -> Row:
    """The previous transport: one httpx stream per request, the harness's SSE parsing and token accounting."""
    cfg = ClientConfig(base_url=url, model="mock", request_timeout_s=60)

    async def run() -> list[tuple[float, float, float, float | None, bool]]:
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=256 if keepalive else 0)
        async with httpx.AsyncClient(limits=limits) as client:
            sem = asyncio.Semaphore(256)

            async def send(_: float) -> tuple[float, float, float | None, bool]:
                st, stream = time.perf_counter(), _Stream()
                ok = False
                async with sem:
                    try:
                        async with client.stream("POST", cfg.url, json=_body(cfg, RequestSpec("x", "hello", 4))) as r:
                            async for line in r.aiter_lines():
                                payload = sse_payload(line.encode())
                                if payload is DONE:
                                    ok = True
                                elif isinstance(payload, dict):
                                    stream.add(payload, time.perf_counter())
                    except httpx.HTTPError:
                        ok = False
                return st, time.perf_counter(), (stream.first - st) if stream.first else None, ok

            return await _poisson(rate, n, send)

    c0 = time.process_time()
    rows = asyncio.run(run())
    cpu = time.process_time() - c0
    return _from_rows("httpx_keepalive_pool" if keepalive else "httpx_no_keepalive", rate, n, rows, cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "client_overhead.json")
    parser.add_argument("--rates", default="600,800,1200")
    parser.add_argument("--seconds", type=float, default=2.0, help="requests per rate = rate x this (at least 600)")
    parser.add_argument("--httpx", action="store_true", help="also run the httpx transport (previous harness)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each client per rate (medians)")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    mock = subprocess.Popen(
        [sys.executable, "-m", "specwise.loadgen.mock_server", "0", "0"], stdout=subprocess.PIPE, text=True
    )
    rows: list[Row] = []
    try:
        assert mock.stdout is not None
        url = mock.stdout.readline().strip()
        vllm_like(url, 200.0, 200)  # warm-up (imports, first connections)
        for rate in rates:
            n = max(600, int(rate * args.seconds))
            for rep in range(args.repeats):  # alternating, so load from elsewhere hits both clients alike
                for run in (specwise_client, vllm_like):
                    row = {**run(url, rate, n), "repeat": rep}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    time.sleep(0.5)
            if args.httpx:
                for keepalive in (True, False):
                    row = httpx_client(url, rate, n, keepalive)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    finally:
        mock.terminate()
        mock.wait(timeout=10)
    ratios = {}
    for rate in rates:

        def med(client: str, key: str, rate: float = rate) -> float:
            return float(np.median([r[key] for r in rows if r["client"] == client and r["target_rate_per_s"] == rate]))

        ratios[f"{rate:g}"] = {
            "specwise_median": {k: med("specwise", k) for k in ("achieved_rate_per_s", "lag_p99_ms", "ttft_p50_ms")},
            "vllm_like_median": {k: med("vllm_like", k) for k in ("achieved_rate_per_s", "lag_p99_ms", "ttft_p50_ms")},
            "achieved_rate_specwise_over_vllm_like": round(
                med("specwise", "achieved_rate_per_s") / med("vllm_like", "achieved_rate_per_s"), 3
            ),
            "cpu_per_request_vllm_like_over_specwise": round(
                med("vllm_like", "cpu_ms_per_request") / med("specwise", "cpu_ms_per_request"), 3
            ),
        }
    doc = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "python bench/client_overhead.py " + " ".join(sys.argv[1:]),
        "reference": "vllm_like: a minimal copy of vllm bench serve's aiohttp client loop (no vLLM on this machine)",
        "rows": rows,
        "ratios": ratios,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(ratios, indent=2))


if __name__ == "__main__":
    main()
