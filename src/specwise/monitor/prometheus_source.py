"""Read the same vLLM series from a Prometheus server (HTTP API ``/api/v1/query``) instead of scraping each
server: the path for fleets that already run Prometheus.

One instant query per instance returns every ``vllm:*`` series at its latest sample; they become the same
:class:`~specwise.metrics.exposition.Scrape` a direct scrape gives (Prometheus' own ``instance`` and ``job``
labels dropped), so windows, rules and alerts are computed by the same code. Prometheus does not store the
``_created`` samples, so resets are detected from decreasing counters only.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

from specwise.errors import SpecwiseError
from specwise.metrics.exposition import Sample, Scrape, labels_key
from specwise.monitor.fetch import redact_url

_DROP = ("__name__", "instance", "job")


def _query(prom_url: str, promql: str, timeout_s: float) -> list[dict[str, Any]]:
    url = prom_url.rstrip("/") + "/api/v1/query"
    prom_url = redact_url(prom_url)  # as reported: never with credentials
    try:
        resp = httpx.get(url, params={"query": promql}, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise SpecwiseError(f"{prom_url}: Prometheus query failed: {type(exc).__name__}") from None
    try:
        body = resp.json()
    except ValueError:
        raise SpecwiseError(f"{prom_url}: Prometheus answered HTTP {resp.status_code} without JSON") from None
    if resp.status_code >= 400 or body.get("status") != "success":
        raise SpecwiseError(f"{prom_url}: Prometheus query failed: {body.get('error', f'HTTP {resp.status_code}')}")
    data = body.get("data") or {}
    if data.get("resultType") != "vector":
        raise SpecwiseError(f"{prom_url}: expected an instant vector, got {data.get('resultType')!r}")
    result: list[dict[str, Any]] = data.get("result") or []
    return result


def discover_instances(prom_url: str, timeout_s: float = 10.0) -> list[str]:
    """Every ``instance`` that exports vLLM series."""
    rows = _query(prom_url, 'group by (instance) ({__name__=~"vllm:.+"})', timeout_s)
    return sorted({str(r.get("metric", {}).get("instance")) for r in rows if r.get("metric", {}).get("instance")})


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def prometheus_scrape(prom_url: str, instance: str, timeout_s: float = 10.0) -> Scrape:
    rows = _query(prom_url, f'{{__name__=~"vllm:.+",instance="{_escape(instance)}"}}', timeout_s)
    prom_url = redact_url(prom_url)
    if not rows:
        raise SpecwiseError(f"{prom_url}: no vllm:* series for instance {instance!r}")
    samples = []
    for r in rows:
        metric = r.get("metric") or {}
        try:
            value = float(r["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            raise SpecwiseError(f"{prom_url}: malformed sample for {metric.get('__name__')!r}") from None
        if math.isnan(value):
            continue
        labels = {k: str(v) for k, v in metric.items() if k not in _DROP}
        samples.append(Sample(str(metric.get("__name__")), labels_key(labels), value))
    return Scrape(tuple(samples))


def target_url(prom_url: str, instance: str) -> str:
    """How a Prometheus-backed target is named in events and the history database."""
    return f"{prom_url.rstrip('/')}#instance={instance}"


def split_target(url: str) -> tuple[str, str]:
    prom, _, instance = url.partition("#instance=")
    return prom, instance
