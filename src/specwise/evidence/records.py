"""The published evidence set: one record per measured point, with its provenance (``evidence/data/*.json``; one
file per source family, each record naming its URL, table or figure, how it was read, engine and version, GPU,
TP, models, method, k, dataset and lengths, load, acceptance when published, and the metric measured).

What a record says about speculation is normalised here to one number, :attr:`EvidenceRecord.speedup`: the
published speedup (``throughput_speedup``, ``tpot_speedup``, ``e2e_latency_speedup``), or the ratio of the SD and
no-SD values the source gives side by side (throughput: SD / no-SD; a latency: no-SD / SD).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from specwise.contracts.document import Fields
from specwise.methods import METHODS
from specwise.specs.quant import QUANTIZATION_CHOICES
from specwise.units import KV_CACHE_DTYPES

SPEEDUP_METRICS = ("throughput_speedup", "tpot_speedup", "e2e_latency_speedup")
THROUGHPUT_METRICS = ("output_tokens_per_s",)
LATENCY_METRICS = ("tpot_s", "e2e_latency_s")
LOAD_KINDS = ("batch", "concurrency", "qps")


STATISTICS = ("mean", "p50")
ARRIVALS = ("poisson", "constant")
# How the source sampled its dataset's requests, where that sets their lengths (evidence/lengths.py): "dataset" (the
# dataset's own lengths, the default), "vllm-benchmark-serving" (vLLM's serving benchmark: each ShareGPT request
# generates up to its reply's length) or "sglang-bench-serving" (SGLang's, adapted from it: each ShareGPT request asks
# for its reply's length, without vLLM's length filter)
# A published speedup within 1% of 1 is a tie, counted neither as a slowdown nor as a speedup: the sources call such
# points "0%" (llm-d's Qwen3-32B EAGLE-3 guide: 209.7 vs 210.1 ms p50 TPOT at 8 QPS, "0%"), and a figure read to
# +-0.5% (SpecDecode-Bench's bars) cannot tell 0.995 from 1.005.
TIE_WITHIN = 0.01
LENGTHS_PROTOCOLS = ("dataset", "vllm-benchmark-serving", "sglang-bench-serving")
# a release the record states: a leading number ("0.15.1 (image ...)"), never one quoted in prose ("before vLLM 0.8")
_STATED_RELEASE = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?\b")


def stated_release(engine_version: str) -> str | None:
    """The release an ``engine_version`` states: the number it starts with ("0.15.1 (image
    vllm/vllm-openai:v0.15.1)" -> "0.15.1", "v0.7.2" -> "0.7.2"), never one quoted in prose ("not stated (... before
    vLLM 0.8 ...)" -> None)."""
    found = _STATED_RELEASE.match(engine_version)
    return None if found is None else f"{found.group(1)}.{found.group(2)}.{found.group(3) or 0}"


@dataclass(frozen=True)
class Ladder:
    """A load that is one stage of a ladder the source ran back to back: ``rates_per_s`` are every stage's rate in
    order (the load's value among them), each ``stage_s`` long, so a queue an over-capacity stage leaves carries
    into the next, and the requests of one stage still running when the next starts share the server with it."""

    rates_per_s: tuple[float, ...]
    stage_s: float


@dataclass(frozen=True)
class Load:
    kind: str  # batch (a closed batch of copies) | concurrency (N in flight) | qps (arrivals per second)
    value: float
    arrivals: str = "poisson"  # qps: Poisson or constant-rate (evenly spaced) arrivals
    ladder: Ladder | None = None  # qps: the ladder of stages, run back to back, that this load is one of
    # concurrency: the requests the source's run sent in all, scored over the whole run (first send to last completion,
    # the ramp-down's smaller batches included) as ``vllm bench serve --num-prompts N`` scores its output throughput,
    # and vLLM's offline ``LLM.generate`` over a list times it; None: a run long enough to score as its steady state
    requests: int | None = None

    @property
    def steady_closed_loop(self) -> bool:
        """A closed loop scored as a long run's steady state (no stated run length)."""
        return self.kind == "concurrency" and self.requests is None

    @property
    def users(self) -> int:
        """The requests a closed loop keeps in flight: the whole ones of its value, at least 1."""
        return max(1, int(self.value))

    def to_json(self) -> dict[str, Any]:
        """The load as ``validate --json`` reports it: kind and value, and the run length where one is stated."""
        out: dict[str, Any] = {"kind": self.kind, "value": self.value}
        if self.requests is not None:
            out["requests"] = self.requests
        return out


@dataclass(frozen=True)
class EvidenceRecord:
    id: str
    family: str
    kind: str  # measured | simulated
    where: str
    how_read: str
    url: str
    engine: str
    engine_version: str
    gpu: str
    tp: int
    target: str
    draft: str | None
    method: str  # "none" for plain decoding
    k: int | None
    verification: str  # chain | tree
    tree_size: int | None
    tree_depth: int | None
    temperature: float | None
    dataset: str
    prompt_tokens: float | None
    output_tokens: float | None
    load: Load
    acceptance_length: float | None
    per_position: tuple[float, ...] | None
    metric: str
    value: float
    baseline_value: float | None
    uncertainty: float | None
    notes: str
    tree_branching: int | None = None  # a tree's top-k per draft step (SGLang's speculative_eagle_topk)
    # The target generated in thinking (reasoning) mode: another workload than the same dataset without it (longer
    # outputs, other acceptance), so never one series with it.
    reasoning: bool = False
    statistic: str = "mean"  # of a latency metric over the requests: mean or p50 (median)
    lengths_protocol: str = "dataset"  # how the source sampled its requests' lengths (LENGTHS_PROTOCOLS)
    # A lookup (n-gram, suffix) whose source published vLLM's counters: the share of decode steps that had a match,
    # vLLM's num_drafts / (generated - accepted - requests) (``acceptance/lookup.py``); ``per_position`` is then per
    # match, vLLM's definition. None: ``per_position`` counts a step without a match as a rejection (traces).
    match_rate: float | None = None
    # The vLLM release a record whose engine_version states none is replayed as: declared once for its source family
    # (``source.replay_release``, with its basis) from the source's dates and images, before any replay; see
    # :attr:`release`.
    replay_release: str | None = None
    # The weights and KV cache as the source served them, where it says (its ``--quantization``,
    # ``--speculative-model-quantization`` / a draft's own flag, ``--kv-cache-dtype``); None: as the checkpoint
    # stores them (the catalog's), and the KV cache in the model's dtype.
    quantization: str | None = None
    draft_quantization: str | None = None
    kv_cache_dtype: str | None = None
    # How a record's own prompt_tokens / output_tokens were arrived at where the source does not print them (e.g.
    # "ASSUMED: the means of bench_serving's random lengths ..."); None: published with the record.
    lengths_how: str | None = None

    @property
    def release(self) -> str | None:
        """The release the record is replayed as: the number its ``engine_version`` starts with ("0.15.1 (image
        vllm/vllm-openai:v0.15.1)" -> "0.15.1"; "not stated (... before vLLM 0.8 ...)" states none), else its
        family's declared :attr:`replay_release`."""
        return stated_release(self.engine_version) or self.replay_release

    @property
    def served_as(self) -> str:
        """The weights and KV cache the record states, for a series' name ("target fp8, draft fp8, KV fp8"); empty
        where it states none (as the checkpoints store them)."""
        parts = (("target", self.quantization), ("draft", self.draft_quantization), ("KV", self.kv_cache_dtype))
        return ", ".join(f"{what} {how}" for what, how in parts if how is not None)

    @property
    def speculative(self) -> bool:
        return self.method != "none"

    @property
    def proposes_nothing(self) -> bool:
        """A speculative method run with k = 0: the proposer is enabled but proposes no draft token, so its ratio to
        plain decoding is the overhead of having speculation on, never a speedup or slowdown of speculating."""
        return self.speculative and self.k == 0

    @property
    def speedup(self) -> float | None:
        """The published speedup of speculation (> 1 faster, < 1 slower); None for plain decoding or a value
        published without its no-SD twin."""
        if not self.speculative:
            return None
        if self.metric in SPEEDUP_METRICS:
            return self.value
        if self.baseline_value is None or self.value <= 0 or self.baseline_value <= 0:
            return None
        if self.metric in THROUGHPUT_METRICS:
            return self.value / self.baseline_value
        return self.baseline_value / self.value

    @property
    def is_tie(self) -> bool:
        """A published speedup within :data:`TIE_WITHIN` of 1: neither a speedup nor a slowdown in substance."""
        s = self.speedup
        return s is not None and not self.proposes_nothing and abs(s - 1.0) < TIE_WITHIN

    @property
    def is_slowdown(self) -> bool:
        """A published speedup below 1 by more than a tie (:attr:`is_tie`); never a k = 0 overhead
        (:attr:`proposes_nothing`)."""
        s = self.speedup
        return s is not None and not self.proposes_nothing and s <= 1.0 - TIE_WITHIN

    @property
    def series(self) -> tuple[Any, ...]:
        """What the same experiment at another load shares (for anchoring acceptance at its lowest load)."""
        return (
            self.family,
            self.engine,
            self.gpu,
            self.tp,
            self.target,
            self.draft,
            self.method,
            self.k,
            self.verification,
            self.tree_size,
            self.dataset,
            self.temperature,
            self.reasoning,
            self.metric in SPEEDUP_METRICS or self.baseline_value is not None,
            self.kind,  # a simulated point is not the measured one at the same load
            self.prompt_tokens,
            self.output_tokens,
            self.lengths_protocol,  # another workload is another experiment
            self.quantization,  # other weights or another KV cache are another deployment
            self.draft_quantization,
            self.kv_cache_dtype,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any], family: str, default_url: str, where: str) -> EvidenceRecord:
        f = Fields(data, where)
        load = f.object("load")
        if load is None:
            raise f.fail("load", "missing")
        kind = load.choice("kind", LOAD_KINDS, required=True)
        tree = f.object("tree")
        per_position = data.get("per_position")
        return cls(
            id=f.text("id", required=True) or "",
            family=family,
            kind=f.text("kind", "measured") or "measured",
            where=f.text("where", "") or "",
            how_read=f.text("how_read", "") or "",
            url=f.text("url", default_url) or default_url,
            engine=f.text("engine", "vllm") or "vllm",
            engine_version=f.text("engine_version", "") or "",
            gpu=f.text("gpu", "unknown") or "unknown",
            tp=f.integer("tp", 1) or 1,
            target=f.text("target", required=True) or "",
            draft=f.text("draft"),
            method=f.text("method", required=True) or "",
            k=f.integer("k"),
            verification=f.text("verification", "chain") or "chain",
            tree_size=f.integer("k") if tree is not None else None,
            tree_depth=tree.integer("depth") if tree is not None else None,
            tree_branching=tree.integer("branching") if tree is not None else None,
            temperature=f.number("temperature"),
            dataset=f.text("dataset", "") or "",
            prompt_tokens=f.number("prompt_tokens"),
            output_tokens=f.number("output_tokens"),
            load=_load(load, kind),
            acceptance_length=f.number("acceptance_length"),
            per_position=tuple(x for x in f.numbers("per_position") if x is not None) if per_position else None,
            metric=f.text("metric", required=True) or "",
            value=f.number("value", required=True) or 0.0,
            baseline_value=f.number("baseline_value"),
            uncertainty=f.number("uncertainty"),
            notes=f.text("notes", "") or "",
            reasoning=f.flag("reasoning"),
            statistic=f.choice("statistic", STATISTICS),
            lengths_protocol=f.choice("lengths_protocol", LENGTHS_PROTOCOLS),
            match_rate=_match_rate(f, per_position is not None, data.get("method")),
            quantization=f.optional_choice("quantization", QUANTIZATION_CHOICES[1:]),
            draft_quantization=f.optional_choice("draft_quantization", QUANTIZATION_CHOICES[1:]),
            kv_cache_dtype=f.optional_choice("kv_cache_dtype", KV_CACHE_DTYPES[1:]),
            lengths_how=_lengths_how(f),
        )


def _lengths_how(f: Fields) -> str | None:
    """How the record's own lengths were arrived at: said only beside both of them, and as an assumption."""
    how = f.text("lengths_how")
    if how is None:
        return None
    if f.number("prompt_tokens") is None or f.number("output_tokens") is None:
        raise f.fail("lengths_how", "says how the record's prompt_tokens and output_tokens were arrived at: give both")
    if not how.startswith("ASSUMED: "):
        raise f.fail("lengths_how", "lengths the source does not print are an assumption: start it 'ASSUMED: '")
    return how


def _match_rate(f: Fields, has_per_position: bool, method: object) -> float | None:
    rate = f.number("match_rate")
    if rate is None:
        return None
    known = METHODS.get(method) if isinstance(method, str) else None
    if known is None or not known.is_lookup:
        raise f.fail("match_rate", f"only a lookup method (n-gram, suffix) drafts on a match; method is {method!r}")
    if not 0.0 < rate <= 1.0:
        raise f.fail("match_rate", f"a share of decode steps, in (0, 1]; got {rate:g}")
    if not has_per_position:
        raise f.fail("match_rate", "comes with per_position (the per-match rates it splits from)")
    return rate


def _load(load: Fields, kind: str) -> Load:
    value = load.number("value", required=True) or 0.0
    arrivals = load.choice("arrivals", ARRIVALS)
    ladder = load.object("ladder")
    if (arrivals != "poisson" or ladder is not None) and kind != "qps":
        raise load.fail("arrivals" if ladder is None else "ladder", "only a qps load has arrivals or a ladder")
    requests = _requests(load, kind, value)
    if ladder is None:
        return Load(kind, value, arrivals, requests=requests)
    rates = tuple(x for x in ladder.numbers("rates_per_s") if x is not None)
    stage_s = ladder.number("stage_s", required=True) or 0.0
    if stage_s <= 0 or not rates or any(x <= 0 for x in rates):
        raise load.fail("ladder", "stage_s and every rate must be positive")
    if rates.count(value) != 1:
        raise load.fail("ladder", f"the load's value {value:g} must be exactly one of its rates_per_s")
    return Load(kind, value, arrivals, Ladder(rates, stage_s))


MAX_RUN_REQUESTS = 100_000  # a stated run longer than this is a steady state: leave ``requests`` out


def _requests(load: Fields, kind: str, value: float) -> int | None:
    """A closed loop's stated run length: whole requests, at least the concurrency (a run of fewer never had the
    stated load in flight) and at most :data:`MAX_RUN_REQUESTS` (the replay simulates every one)."""
    requests = load.integer("requests")
    if requests is None:
        return None
    if requests > MAX_RUN_REQUESTS:
        raise load.fail(
            "requests",
            f"{requests} is over {MAX_RUN_REQUESTS:,}: a run that long is a steady state, leave requests out",
        )
    if kind != "concurrency":
        raise load.fail("requests", f"only a concurrency load is a run of so many requests; this load is {kind}")
    if requests < max(value, 1):
        raise load.fail("requests", f"{requests} requests never keep {value:g} in flight: the stated load was not run")
    return requests


def _replay_release(source: Fields) -> str | None:
    """A family's declared replay release (``{"version": "0.18.0", "basis": "..."}``): a plain release number and
    the reason it was chosen, which the file must state."""
    declared = source.object("replay_release")
    if declared is None:
        return None
    version = declared.text("version", required=True) or ""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise declared.fail("version", f"a release number such as 0.18.0; got {version!r}")
    if not (declared.text("basis", required=True) or "").strip():
        raise declared.fail("basis", "state why the source ran this release")
    return version


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    url: str
    records: tuple[EvidenceRecord, ...]


@cache
def load_families() -> tuple[Family, ...]:
    """Every source family shipped in ``evidence/data``, records in file order."""
    out = []
    folder = resources.files("specwise.evidence").joinpath("data")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        data = json.loads(entry.read_text(encoding="utf-8"))
        if data.get("schema") != "specwise.evidence/1":
            continue
        src = data.get("source", {})
        family, url = str(data["family"]), str(src.get("url", ""))
        records = tuple(
            EvidenceRecord.from_json(r, family, url, f"{entry.name}: records[{i}]")
            for i, r in enumerate(data["records"])
        )
        declared = _replay_release(Fields(src, f"{entry.name}: source"))
        if declared is not None:
            records = tuple(r if r.release is not None else replace(r, replay_release=declared) for r in records)
        out.append(Family(family, str(src.get("title", family)), url, records))
    return tuple(out)


def all_records() -> tuple[EvidenceRecord, ...]:
    return tuple(r for fam in load_families() for r in fam.records)
