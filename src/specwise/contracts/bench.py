"""``specwise.bench/1``: a load test of a real server -- per level (a request rate or a concurrency) the latency
summary of the requests sent and the spec-decode counters the server reported over the level (``/metrics``
deltas, field names of ``vllm bench serve``); with ``--launch``, one run per server configuration, an A/B
comparison and optionally a calibration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.acceptance.model import AcceptanceModel
from specwise.contracts.calibration import CalibrationDoc
from specwise.contracts.document import DocumentError, Fields, JsonObject, Schema, json_safe, read_json_file
from specwise.errors import SpecError
from specwise.latency import LevelSummary
from specwise.methods import LOOKUP_METHODS, row_name
from specwise.stats import Percentiles, ratio

SCHEMA = Schema("specwise.bench", 1)


def count_beside_drafts(f: Fields, key: str) -> float:
    """``spec_decode_draft_tokens`` or ``spec_decode_accepted_tokens`` of a result that has
    ``spec_decode_num_drafts``: vLLM writes the three together (``vllm/benchmarks/serve.py``), so one missing is a
    misspelt or cut key, said as missing, not read as 0 (review s47b F5)."""
    value = f.number(key)
    if value is None:
        raise f.fail(key, "missing beside spec_decode_num_drafts (vLLM's result writes the three counts together)")
    return value


@dataclass(frozen=True)
class SpecDecodeReading:
    """What a level measured of speculation. vLLM: counter deltas (``counts``); llama.cpp: drafted and accepted
    token counters (a rate, no AL); SGLang: gauges (a reading, not a window)."""

    engine: str
    counts: SpecDecodeCounts | None = None
    acceptance_rate: float | None = None
    acceptance_length: float | None = None
    draft_tokens: float | None = None  # llama.cpp's counters, when that is all there is
    accepted_tokens: float | None = None

    def to_json(self) -> dict[str, Any]:
        if self.counts is not None:
            return {"engine": self.engine, **self.counts.to_dict()}
        out: dict[str, Any] = {"engine": self.engine}
        if self.draft_tokens is not None:
            out["spec_decode_draft_tokens"] = self.draft_tokens
            out["spec_decode_accepted_tokens"] = self.accepted_tokens
        out["spec_decode_acceptance_rate"] = self.acceptance_rate
        out["spec_decode_acceptance_length"] = self.acceptance_length
        return out

    @classmethod
    def from_json(cls, f: Fields) -> SpecDecodeReading:
        engine = f.text("engine", "vllm") or "vllm"
        drafts = f.number("spec_decode_num_drafts")
        if drafts is not None:
            draft_tokens = count_beside_drafts(f, "spec_decode_draft_tokens")
            accepted = count_beside_drafts(f, "spec_decode_accepted_tokens")
            rates = [r for r in f.numbers("spec_decode_per_position_acceptance_rates") if r is not None]
            return cls(engine, SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(r * drafts for r in rates)))
        return cls(
            engine,
            acceptance_rate=f.number("spec_decode_acceptance_rate"),
            acceptance_length=f.number("spec_decode_acceptance_length"),
            draft_tokens=f.number("spec_decode_draft_tokens"),
            accepted_tokens=f.number("spec_decode_accepted_tokens"),
        )


@dataclass(frozen=True)
class ReplicaReading:
    """One replica's share of a level (a fleet run: one ``--metrics-url`` per replica): its URL (credentials
    redacted), its own counter deltas, and whether *its* counters went back (its restart, no one else's)."""

    url: str
    spec_decode: SpecDecodeReading | None
    counter_reset: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "spec_decode": self.spec_decode.to_json() if self.spec_decode else None,
            "counter_reset": self.counter_reset,
        }

    @classmethod
    def from_json(cls, f: Fields) -> ReplicaReading:
        sd = f.object("spec_decode")
        return cls(
            url=f.text("url", "") or "",
            spec_decode=SpecDecodeReading.from_json(sd) if sd else None,
            counter_reset=bool(f.data.get("counter_reset", False)),
        )


@dataclass(frozen=True)
class BenchLevel:
    """A level's reading. With several replicas, ``spec_decode`` is pooled (their counter deltas summed) and
    ``replicas`` holds each one's own; with one, ``replicas`` is empty."""

    summary: LevelSummary
    spec_decode: SpecDecodeReading | None = None
    counter_reset: bool = False
    scrape_errors: tuple[str, ...] = ()
    concurrency: int | None = None
    replicas: tuple[ReplicaReading, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = self.summary.to_dict()
        d["spec_decode"] = self.spec_decode.to_json() if self.spec_decode else None
        d["counter_reset"] = self.counter_reset
        d["scrape_errors"] = list(self.scrape_errors)
        d["concurrency"] = self.concurrency
        if self.replicas:
            d["replicas"] = [r.to_json() for r in self.replicas]
        return d

    @classmethod
    def from_json(cls, f: Fields) -> BenchLevel:
        sd = f.object("spec_decode")
        return cls(
            summary=_level_summary(f),
            spec_decode=SpecDecodeReading.from_json(sd) if sd else None,
            counter_reset=bool(f.data.get("counter_reset", False)),
            scrape_errors=tuple(str(e) for e in f.data.get("scrape_errors") or ()),
            concurrency=f.integer("concurrency"),
            replicas=tuple(ReplicaReading.from_json(r) for r in f.objects("replicas")),
        )


def _percentiles(f: Fields, key: str) -> Percentiles:
    p = f.object(key)
    if p is None:
        return Percentiles.of_nothing()
    nan = float("nan")
    return Percentiles(*(v if v is not None else nan for v in (p.number(x) for x in ("mean", "p50", "p90", "p99"))))


def _level_summary(f: Fields) -> LevelSummary:
    errors = f.data.get("errors") or {}
    return LevelSummary(
        requests=f.integer("requests", 0) or 0,
        ttft_s=_percentiles(f, "ttft_s"),
        tpot_s=_percentiles(f, "tpot_s"),
        itl_s=_percentiles(f, "itl_s"),
        e2e_s=_percentiles(f, "e2e_s"),
        output_tokens_per_s=f.number("output_tokens_per_s", 0.0) or 0.0,
        request_rate_per_s=f.number("request_rate_per_s", 0.0) or 0.0,
        goodput_per_s=f.number("goodput_per_s"),
        level=f.integer("level", 0) or 0,
        target_rate_per_s=f.number("target_rate_per_s"),
        failed=f.integer("failed", 0) or 0,
        duration_s=f.number("duration_s", 0.0) or 0.0,
        errors={str(k): int(v) for k, v in errors.items()} if isinstance(errors, Mapping) else {},
        sessions=f.integer("sessions", 1) or 1,
        itl_per_chunk_s=_percentiles(f, "itl_per_chunk_s"),
    )


@dataclass(frozen=True)
class SpeculativeSetting:
    """What a launched vLLM ``--speculative-config`` (a launch file's table, as stored with the run) says, read in
    one place: the method, the draft checkpoint, k (``num_speculative_tokens``; 0 when not a positive whole
    number). A value of the wrong type reads as not given."""

    method: str | None = None
    draft: str | None = None
    k: int = 0

    @classmethod
    def of(cls, config: Mapping[str, Any] | None) -> SpeculativeSetting:
        if not config:
            return cls()
        method, draft, k = config.get("method"), config.get("model"), config.get("num_speculative_tokens")
        whole = int(k) if isinstance(k, int | float) and not isinstance(k, bool) and float(k).is_integer() else 0
        return cls(
            row_name(method) if isinstance(method, str) else None,  # deepseek_mtp and the like run as mtp
            draft if isinstance(draft, str) else None,
            max(whole, 0),
        )


@dataclass(frozen=True)
class BenchConfig:
    """One launched server configuration and its levels."""

    name: str
    run_id: str
    speculative_config: JsonObject | None
    server_log: str
    levels: tuple[BenchLevel, ...]

    @property
    def method(self) -> str | None:
        return SpeculativeSetting.of(self.speculative_config).method

    @property
    def draft(self) -> str | None:
        return SpeculativeSetting.of(self.speculative_config).draft

    def pooled_acceptance(self) -> SpecDecodeCounts | None:
        """Counts summed over the levels (None when no level drafted)."""
        counted = [lv.spec_decode.counts for lv in self.levels if lv.spec_decode and lv.spec_decode.counts]
        counted = [c for c in counted if c.drafts > 0 and c.accepted_per_position]
        if not counted:
            return None
        width = max(c.k for c in counted)
        padded = [
            SpecDecodeCounts(
                c.drafts, c.draft_tokens, c.accepted_tokens, c.accepted_per_position + (0.0,) * (width - c.k)
            )
            for c in counted
        ]
        return SpecDecodeCounts.total(width, padded)

    def match_rate(self) -> float | None:
        """The share of decode steps that drafted, pooled over the levels -- a lookup's (n-gram, suffix) match rate,
        which vLLM's counters do not give directly (``num_drafts`` counts only steps with a draft,
        ``vllm/v1/core/sched/scheduler.py``). Every request's first token comes from its prefill and every decode
        step emits 1 + its accepted tokens, so decode steps = output tokens - completed requests - accepted tokens;
        output tokens per request = ``output_tokens_per_s / request_rate_per_s`` (both over the same span).
        Assumes the server ran only this level's requests. None without counters or completed requests."""
        drafts = steps = 0.0
        for lv in self.levels:
            counts, s = (lv.spec_decode.counts if lv.spec_decode else None), lv.summary
            completed = s.requests - s.failed
            if counts is None or completed <= 0 or s.request_rate_per_s <= 0:
                continue
            tokens = completed * s.output_tokens_per_s / s.request_rate_per_s
            drafts += counts.drafts
            steps += tokens - completed - counts.accepted_tokens
        return min(1.0, drafts / steps) if drafts > 0 and steps > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "run_id": self.run_id,
            "speculative_config": dict(self.speculative_config) if self.speculative_config is not None else None,
            "server_log": self.server_log,
            "levels": [lv.to_json() for lv in self.levels],
        }

    @classmethod
    def from_json(cls, f: Fields) -> BenchConfig:
        spec = f.data.get("speculative_config")
        if spec is not None and not isinstance(spec, Mapping):
            raise f.fail("speculative_config", "expected an object or null")
        return cls(
            name=f.text("name", required=True) or "",
            run_id=f.text("run_id", "") or "",
            speculative_config=spec,
            server_log=f.text("server_log", "") or "",
            levels=tuple(BenchLevel.from_json(lv) for lv in f.objects("levels")),
        )


@dataclass(frozen=True)
class CompareRow:
    """One (config, level) of an A/B comparison: speedups vs the first config at the same level."""

    config: str
    level: int
    rate_per_s: float | None
    concurrency: int | None
    tpot_p50_s: float
    e2e_p50_s: float
    output_tokens_per_s: float
    failed: int
    speedup_tpot: float | None
    speedup_e2e: float | None
    speedup_throughput: float | None
    spec_decode_acceptance_rate: float | None
    spec_decode_acceptance_length: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def compare_configs(configs: Sequence[BenchConfig]) -> tuple[CompareRow, ...]:
    """One row per (config, level): latency/throughput speedups vs ``configs[0]`` at the same level, and the
    config's acceptance (vLLM counters)."""
    if not configs:
        return ()
    base = {lv.summary.level: lv.summary for lv in configs[0].levels}
    rows = []
    for cfg in configs:
        for lv in cfg.levels:
            s, b = lv.summary, base.get(lv.summary.level)
            sd = lv.spec_decode
            rows.append(
                CompareRow(
                    config=cfg.name,
                    level=s.level,
                    rate_per_s=s.target_rate_per_s,
                    concurrency=lv.concurrency,
                    tpot_p50_s=s.tpot_s.p50,
                    e2e_p50_s=s.e2e_s.p50,
                    output_tokens_per_s=s.output_tokens_per_s,
                    failed=s.failed,
                    speedup_tpot=ratio(b.tpot_s.p50, s.tpot_s.p50) if b else None,
                    speedup_e2e=ratio(b.e2e_s.p50, s.e2e_s.p50) if b else None,
                    speedup_throughput=ratio(s.output_tokens_per_s, b.output_tokens_per_s) if b else None,
                    spec_decode_acceptance_rate=_reading(sd, "rate"),
                    spec_decode_acceptance_length=_reading(sd, "length"),
                )
            )
    return tuple(rows)


def _server_speculation(f: Fields) -> JsonObject | None:
    """``speculative_config`` of a run against a server: an object with a string ``method``, or absent."""
    spec = f.data.get("speculative_config")
    if spec is None:
        return None
    if not isinstance(spec, Mapping) or not isinstance(spec.get("method"), str):
        raise f.fail("speculative_config", "expected the server's --speculative-config: an object with a 'method'")
    return spec


def _temperatures(f: Fields) -> tuple[float, ...]:
    """``temperatures``: the sampling temperatures a run's requests carried, each a number >= 0."""
    values = [v for v in f.numbers("temperatures") if v is not None]
    if any(not 0 <= v < float("inf") for v in values):
        raise f.fail("temperatures", f"expected sampling temperatures (numbers >= 0), got {values!r}")
    return tuple(sorted(set(values)))


def _reading(sd: SpecDecodeReading | None, what: str) -> float | None:
    if sd is None:
        return None
    if sd.counts is not None:
        return sd.counts.acceptance_rate if what == "rate" else sd.counts.mean_acceptance_length
    return sd.acceptance_rate if what == "rate" else sd.acceptance_length


@dataclass(frozen=True)
class MeasuredAcceptance:
    model: AcceptanceModel
    source: str
    config: str
    match_rate: float | None = None  # a lookup's share of decode steps with a draft, when the run gives it
    temperatures: tuple[float, ...] = ()  # the sampling temperatures its requests carried; (): not recorded


@dataclass(frozen=True)
class BenchDoc:
    run_id: str
    db: str
    model: str
    url: str | None = None
    levels: tuple[BenchLevel, ...] = ()  # a run against a server
    configs: tuple[BenchConfig, ...] = ()  # a --launch run: one per server configuration
    calibration: CalibrationDoc | None = None
    jsonl: str | None = None
    path: Path | None = field(default=None, compare=False)
    # the sampling temperatures the requests carried (a prompt's own, else --temperature), sorted; (): not recorded
    # (a vllm bench serve result, a specwise bench file written before they were)
    temperatures: tuple[float, ...] = ()
    # a run against a server: the speculative config it said the server runs (bench --speculative-config); None:
    # not said (advise --bench then takes the run for a scenario's only candidate)
    speculative_config: JsonObject | None = None
    # a run against a server: the checkpoint the server loaded for ``model``, as its GET /v1/models says (vLLM's
    # card ``root``: :func:`specwise.loadgen.client.served_root`); None: not said
    model_root: str | None = None

    @property
    def name(self) -> str:
        return self.path.name if self.path else "bench"

    @property
    def comparison(self) -> tuple[CompareRow, ...]:
        return compare_configs(self.configs)

    @property
    def acceptance_configs(self) -> tuple[BenchConfig, ...]:
        """The configs whose acceptance a run measured: the launched ones, or, for a run against a server, one
        config of its levels whose speculation is unknown (``speculative_config`` None)."""
        if self.configs or not self.levels:
            return self.configs
        server = f"server {self.url or ''}".strip()
        return (BenchConfig(server, self.run_id, self.speculative_config, "", self.levels),)

    def measured_acceptance(
        self, method: str, draft: str | None, matches: Callable[[str | None, str | None], bool]
    ) -> MeasuredAcceptance | None:
        """Per-position acceptance of the first config with this method (and, for a draft model, a draft whose
        name ``matches`` the candidate's), pooled over its levels."""
        for cfg in self.acceptance_configs:
            if cfg.method != method or (method == "draft_model" and not matches(draft, cfg.draft)):
                continue
            pooled = cfg.pooled_acceptance()
            if pooled is None:
                continue
            rates = pooled.per_position_rates
            try:
                model = AcceptanceModel.from_per_position(rates)
            except SpecError as exc:
                raise DocumentError(f"{self.name}: config {cfg.name!r}: bad per-position rates ({exc})") from None
            al = 1 + sum(rates)
            source = f"measured: {self.name} config {cfg.name!r}, {int(pooled.drafts):,} drafts, AL {al:.2f}"
            match = cfg.match_rate() if method in LOOKUP_METHODS else None
            if match is not None:
                source += f" per match, a match in {match:.0%} of decode steps (drafts / steps)"
            return MeasuredAcceptance(model, source, cfg.name, match, self.temperatures)
        return None

    def to_json(self) -> dict[str, Any]:
        """The document as strict JSON: a statistic of no samples (NaN, e.g. the mean TTFT of a level whose
        requests all failed) is null, as ``from_json`` reads it back. It names its schema, as the other documents do
        (review s46d: a bench/2 file would have been read as bench/1)."""
        out: dict[str, Any] = {"schema": SCHEMA.id, "run_id": self.run_id, "db": self.db}
        if self.temperatures:
            out["temperatures"] = list(self.temperatures)
        if self.configs:
            out["model"] = self.model
            out["configs"] = [c.to_json() for c in self.configs]
            out["comparison"] = [r.to_json() for r in self.comparison]
            if self.calibration is not None:
                out["calibration"] = self.calibration.to_json()
            finite: dict[str, Any] = json_safe(out)
            return finite
        out.update(url=self.url, model=self.model, levels=[lv.to_json() for lv in self.levels])
        if self.model_root is not None:
            out["model_root"] = self.model_root
        if self.speculative_config is not None:
            out["speculative_config"] = dict(self.speculative_config)
        if self.jsonl:
            out["jsonl"] = self.jsonl
        safe: dict[str, Any] = json_safe(out)
        return safe

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "bench", path: Path | None = None) -> BenchDoc:
        SCHEMA.check(data, where, required=False)
        if "results" in data and "configs" not in data:
            raise DocumentError(f"{where}: is a specwise profile, expected a specwise bench result (--bench)")
        if "configs" not in data and "levels" not in data:
            raise DocumentError(
                f"{where}: not a bench result specwise reads (no 'configs' or 'levels' of a specwise bench JSON, "
                "no spec_decode_* fields of a vllm bench serve --save-result JSON)"
            )
        f = Fields(data, where)
        cal = f.object("calibration")
        return cls(
            run_id=f.text("run_id", "") or "",
            db=f.text("db", "") or "",
            model=f.text("model", "") or "",
            url=f.text("url"),
            levels=tuple(BenchLevel.from_json(lv) for lv in f.objects("levels")),
            configs=tuple(BenchConfig.from_json(c) for c in f.objects("configs")),
            calibration=CalibrationDoc.from_json(cal.data, cal.where) if cal else None,
            jsonl=f.text("jsonl"),
            path=path,
            temperatures=_temperatures(f),
            speculative_config=_server_speculation(f),
            model_root=f.text("model_root"),
        )

    @classmethod
    def read(cls, path: Path) -> BenchDoc:
        return cls.from_json(read_json_file(path, "bench"), str(path), path)
