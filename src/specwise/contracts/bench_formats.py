"""Every bench result ``advise --bench`` reads: specwise's own (``specwise.bench/1``) and what
``vllm bench serve --save-result`` writes, the latter as a :class:`~specwise.contracts.bench.BenchDoc`; and
guidellm's report (:mod:`specwise.contracts.guidellm_report`), read in full but refused as evidence: it has no
acceptance.

The format (vLLM 0.32, ``vllm/benchmarks/serve.py``: ``benchmark()`` builds ``result``, ``main()`` adds the run's
setup and ``--metadata KEY=VALUE`` pairs at the top level and ``json.dump``s one object; ``--append-result``
appends one more object per run, each on its own line):

* ``spec_decode_num_drafts``, ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens``: ``/metrics`` counter
  deltas over the run (``fetch_spec_decode_metrics`` before and after);
* ``spec_decode_per_position_acceptance_rates``: accepted at position i / drafts, FRACTIONS;
* ``spec_decode_acceptance_rate``: accepted / draft tokens in PERCENT (``* 100``) -- specwise writes the same key
  as a fraction, which is why acceptance is read from the counts here, never from that field;
* ``spec_decode_acceptance_length``: 1 + accepted / drafts;
* ``request_rate`` (a number or ``"inf"``), ``max_concurrency``, ``model_id``, ``completed``, ``failed``,
  ``duration`` (s), ``request_throughput``, ``output_throughput`` (tokens/s), ``request_goodput`` and
  ``{mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms`` (milliseconds).

vLLM does not record the speculative method the server ran; ``--metadata speculative_config='{...}'`` (the JSON
given to ``vllm serve --speculative-config``) records it, and is read here. Without it the method is unknown
(None) and :func:`specwise.advisor.evidence.attribute_methods` decides what the run can stand for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel, SpecDecodeReading, count_beside_drafts
from specwise.contracts.document import MAX_DOCUMENT_BYTES, DocumentError, Fields, JsonObject
from specwise.contracts.guidellm_report import GuidellmReport, from_guidellm_report, is_guidellm_report
from specwise.errors import SpecwiseError
from specwise.fileio import read_bytes_bounded
from specwise.latency import LevelSummary
from specwise.stats import Percentiles

CONFIG_NAME = "vllm bench serve"
_MS = 1e-3


def is_vllm_result(data: Mapping[str, Any]) -> bool:
    """A ``vllm bench serve`` result: its setup keys (``model_id``, ``completed``) or a ``spec_decode_*`` field at
    the top level (specwise nests its own under ``levels``)."""
    return ("model_id" in data and "completed" in data) or any(k.startswith("spec_decode_") for k in data)


def parse_objects(text: str, where: str) -> list[JsonObject]:
    """One JSON object (``--save-result``) or one per line (``--append-result``)."""
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        return _json_lines(text, where, exc)
    if not isinstance(whole, dict):
        raise DocumentError(f"{where}: a bench JSON must be an object, got {type(whole).__name__}")
    return [whole]


def _json_lines(text: str, where: str, whole_error: Exception) -> list[JsonObject]:
    """JSON objects one per line; a file whose first line is not one is reported as one broken document."""
    objects: list[JsonObject] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if not objects:
                raise DocumentError(f"{where}: not a readable bench JSON ({whole_error})") from None
            raise DocumentError(f"{where}: line {n}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise DocumentError(f"{where}: line {n}: expected a JSON object, got {type(obj).__name__}")
        objects.append(obj)
    if not objects:
        raise DocumentError(f"{where}: empty file; expected a bench JSON")
    return objects


def _ms(f: Fields, metric: str) -> Percentiles:
    """``mean/median/p90/p99_<metric>_ms`` as seconds (NaN where vLLM did not write it)."""

    def sec(key: str) -> float:
        v = f.number(f"{key}_{metric}_ms")
        return v * _MS if v is not None else math.nan

    return Percentiles(sec("mean"), sec("median"), sec("p90"), sec("p99"))


def _rate(f: Fields) -> float | None:
    """``request_rate``: requests/s, or ``"inf"`` (all at once: no target rate). vLLM sends at no other rate
    (``vllm/benchmarks/serve.py`` ``get_request``: ``assert current_request_rate > 0.0``), so a rate <= 0 is refused
    where it is read, not reported later as a load no baseline was run at."""
    value = f.data.get("request_rate")
    if value is None or value == "inf":
        return None
    rate = f.number("request_rate")
    if rate is None or rate <= 0:
        raise f.fail("request_rate", f'must be > 0 (or "inf"), got {value!r}')
    return rate


def _max_concurrency(f: Fields) -> int | None:
    """``max_concurrency``: the ``--max-concurrency`` cap on requests in flight, None for no cap. vLLM caps with
    ``asyncio.Semaphore(max_concurrency) if max_concurrency else contextlib.nullcontext()`` (``benchmark()``), so 0
    (like null, not given) runs without a cap, and a negative cap is no run it makes (``asyncio.Semaphore`` refuses
    a value < 0)."""
    cap = f.integer("max_concurrency")
    if cap is not None and cap < 0:
        raise f.fail("max_concurrency", f"must be an integer >= 1 (null or 0: no cap), got {cap}")
    return cap or None


def _count(f: Fields, key: str) -> int:
    """``completed`` or ``failed``: how many requests vLLM counted as such (0 when absent); not negative."""
    return f.integer(key, 0, low=0, what="a count") or 0


def _spec_decode(f: Fields) -> SpecDecodeReading | None:
    """The counts, with per-position accepted tokens rebuilt from the fractions (rate * drafts)."""
    drafts = f.number("spec_decode_num_drafts")
    if drafts is None:
        return None
    rates = [r for r in f.numbers("spec_decode_per_position_acceptance_rates") if r is not None]
    if any(not 0.0 <= r <= 1.0 for r in rates):
        raise f.fail("spec_decode_per_position_acceptance_rates", f"rates must be fractions in [0, 1], got {rates}")
    draft_tokens = count_beside_drafts(f, "spec_decode_draft_tokens")
    accepted = count_beside_drafts(f, "spec_decode_accepted_tokens")
    for key, value in (("num_drafts", drafts), ("draft_tokens", draft_tokens), ("accepted_tokens", accepted)):
        if value < 0:
            raise f.fail(f"spec_decode_{key}", f"a count cannot be negative, got {value:g}")
    if accepted > draft_tokens:  # vLLM accepts only drafted tokens (vllm/v1/spec_decode/metrics.py)
        raise f.fail(
            "spec_decode_accepted_tokens", f"{accepted:g} accepted of {draft_tokens:g} drafted: more than were drafted"
        )
    counts = SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(r * drafts for r in rates))
    return SpecDecodeReading("vllm", counts)


def level_from_result(data: JsonObject, where: str, level: int) -> BenchLevel:
    """One ``vllm bench serve`` run as one bench level (latencies in seconds, rates per second)."""
    f = Fields(data, where)
    completed, failed = _count(f, "completed"), _count(f, "failed")
    summary = LevelSummary(
        requests=completed + failed,
        ttft_s=_ms(f, "ttft"),
        tpot_s=_ms(f, "tpot"),
        itl_s=Percentiles.of_nothing(),  # vLLM's ITL is per streamed chunk, not per token: kept as itself
        itl_per_chunk_s=_ms(f, "itl"),
        e2e_s=_ms(f, "e2el"),
        output_tokens_per_s=f.number("output_throughput", 0.0) or 0.0,
        request_rate_per_s=f.number("request_throughput", 0.0) or 0.0,
        goodput_per_s=f.number("request_goodput"),
        level=level,
        target_rate_per_s=_rate(f),
        failed=failed,
        duration_s=f.number("duration", 0.0) or 0.0,
    )
    return BenchLevel(summary, _spec_decode(f), concurrency=_max_concurrency(f))


def parse_speculative_config(raw: object, where: str) -> JsonObject | None:
    """``--metadata speculative_config='{...}'`` (a JSON string; vLLM stores metadata values as strings)."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, dict):  # written as an object rather than vLLM's string: the same config
        raw = json.dumps(raw)
    try:
        spec = json.loads(str(raw))
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{where}: metadata speculative_config is not JSON ({exc}): {str(raw)[:80]!r}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("method"), str):
        raise DocumentError(f"{where}: metadata speculative_config must be a JSON object with a 'method'")
    return spec


def _groups(objects: Sequence[JsonObject]) -> dict[tuple[str, str], list[tuple[int, JsonObject]]]:
    """Runs grouped by configuration: specwise's ``config`` name (``bench --output``) and the speculative config."""
    groups: dict[tuple[str, str], list[tuple[int, JsonObject]]] = {}
    for i, o in enumerate(objects):
        spec = o.get("speculative_config")
        key = (str(o.get("config") or ""), json.dumps(spec) if isinstance(spec, dict) else str(spec or ""))
        groups.setdefault(key, []).append((i, o))
    return groups


def _config(name: str, spec: str, runs: Sequence[tuple[int, JsonObject]], where: str, many: bool) -> BenchConfig:
    levels = []
    for n, (i, o) in enumerate(runs):
        at = f"{where}[{i}]" if many else where
        level = o.get("level")
        levels.append(level_from_result(o, at, level if isinstance(level, int) and level >= 0 else n))
    return BenchConfig(name, "", parse_speculative_config(spec or None, where), "", tuple(levels))


def from_vllm_results(objects: Sequence[JsonObject], where: str, path: Path | None = None) -> BenchDoc:
    """A bench document with one config per (config name, speculative config) and one level per run in it."""
    groups = _groups(objects)
    configs = tuple(
        _config(name or (CONFIG_NAME if len(groups) == 1 else f"{CONFIG_NAME} #{n + 1}"), spec, runs, where,
                len(objects) > 1)
        for n, ((name, spec), runs) in enumerate(groups.items())
    )  # fmt: skip
    if not any(lv.spec_decode is not None for c in configs for lv in c.levels):
        raise DocumentError(
            f"{where}: a vllm bench serve result without spec_decode_* fields (the server ran without speculative "
            "decoding, or its /metrics was unreachable): it measured no acceptance"
        )
    models = {str(o.get("model_id") or "") for o in objects}
    model = models.pop() if len(models) == 1 else ""
    return BenchDoc(run_id="", db="", model=model, configs=configs, path=path)


def _table_rows(data: JsonObject) -> list[JsonObject] | None:
    """The rows of a ``specwise bench --output FILE.json`` (None: not one)."""
    rows = data.get("rows")
    if not str(data.get("format", "")).startswith("specwise bench --output") or not isinstance(rows, list):
        return None
    return [r for r in rows if isinstance(r, dict)]


def _refuse_other_formats(path: Path) -> None:
    """A results database or a gzip file, named as such from its first bytes (before the size limit: a database is
    often larger), with what to do; review s59: said as "can't decode byte 0xf8"."""
    try:
        if not path.is_file():  # a pipe or a device is read once, by read_bytes_bounded
            return
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        return  # read_bytes_bounded says what is wrong
    if head.startswith(b"SQLite format 3\x00"):
        raise DocumentError(
            f"{path}: a bench results database (--db), not a bench JSON: write a run's JSON with specwise bench "
            f"--resume RUN_ID --db {path} --json > run.json (a finished run is printed, not re-run; a --launch run's "
            "with --launch FILE too)"
        )
    if head.startswith(b"\x1f\x8b"):
        raise DocumentError(f"{path}: a gzip file: decompress it first (gunzip -k {path})")


def read_objects(path: Path) -> list[JsonObject]:
    """The JSON objects of a bench file (one, or one per line), size-bounded; each refusal in one line."""
    where = str(path)
    _refuse_other_formats(path)
    try:
        raw = read_bytes_bounded(path, MAX_DOCUMENT_BYTES, "bench")
    except SpecwiseError as exc:
        raise DocumentError(str(exc)) from None
    try:
        text = raw.decode("utf-8-sig")  # a leading BOM dropped, as read_text_bounded drops it
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{where}: not a readable bench JSON ({exc})") from None
    return parse_objects(text, where)


def read_guidellm(path: Path) -> GuidellmReport:
    """A guidellm report's loads as a bench document (latency and throughput per load; no acceptance)."""
    objects = read_objects(path)
    if len(objects) != 1 or not is_guidellm_report(objects[0]):
        raise DocumentError(f"{path}: not a guidellm report (no top-level 'benchmarks' list)")
    return from_guidellm_report(objects[0], str(path), path)


def read_bench(path: Path) -> BenchDoc:
    """A specwise bench result or a ``vllm bench serve`` result; a guidellm report is read and refused for what
    it lacks (acceptance), anything else refused as unrecognised -- each in one line."""
    where = str(path)
    objects = read_objects(path)
    rows = _table_rows(objects[0]) if len(objects) == 1 else None
    if rows:
        return from_vllm_results(rows, where, path)
    if all(is_vllm_result(o) for o in objects):
        return from_vllm_results(objects, where, path)
    if len(objects) == 1 and is_guidellm_report(objects[0]):
        raise DocumentError(guidellm_refusal(from_guidellm_report(objects[0], where, path), where))
    if len(objects) == 1:
        return BenchDoc.from_json(objects[0], where, path)
    raise DocumentError(f"{where}: {UNRECOGNISED}")


def guidellm_refusal(report: GuidellmReport, where: str) -> str:
    """Why a guidellm report, read in full, cannot be acceptance evidence: guidellm reads no server counters."""
    return (
        f"{where}: a guidellm {report.guidellm_version} report ({report.loads()}): guidellm measures latency at the "
        "client and records no speculative-decoding counters, so it gives no acceptance; measure with "
        "'specwise bench URL' (it reads the server's /metrics) or 'vllm bench serve --save-result'"
    )


UNRECOGNISED = (
    "not a bench result specwise reads (a specwise bench JSON, or vllm bench serve --save-result with "
    "spec_decode_* fields)"
)
