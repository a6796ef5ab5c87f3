"""vLLM (V1): ``vllm serve`` flags, the ``--speculative-config`` JSON (``vllm/config/speculative.py``
SpeculativeConfig fields), the OpenAI server module the harness launches, and the Prometheus names of
``vllm/v1/metrics/loggers.py`` and ``vllm/v1/spec_decode/metrics.py``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specwise.engines.base import (
    LOOPBACK,
    ONLINE_QUANTIZATION,
    Deployment,
    SpecMetricNames,
    Speculation,
    heads_split_refusal,
)
from specwise.engines.vllm_versions import (
    V0_ERA_CONFIGS,
    VllmVersion,
    drafting_refusal,
    first_off_batch,
    heterogeneous_vocab_refusal,
    method_refusal,
    probabilistic_drafting_key,
    schedule_form,
    schedule_notes,
    served_draft_tp,
    speculation_engine,
)
from specwise.errors import SpecwiseError
from specwise.methods import Method

# Quantisation vLLM applies to an unquantised checkpoint at load time. INT8/INT4 need a quantised checkpoint
# (AWQ, GPTQ, compressed-tensors W8A8...), which vLLM detects from its config: no flag to emit for those.


@dataclass(frozen=True)
class VllmMetricNames:
    """vLLM V1 Prometheus names (labels: model_name, engine; per-position also: position).

    vLLM's V0 engine (``vllm/engine/metrics.py``, to 0.9) exports the same draft-token and accepted-token counters
    (label: model_name only, no ``_created``: it calls ``prometheus_client.disable_created_metrics()``) but no drafts
    counter and no per-position counts; instead it has the ``*_v0`` names below. Its counters add lifetime totals at
    every log interval, so no acceptance is read from them (:mod:`specwise.metrics.spec_decode`). vLLM V1 before
    0.8.5 exports the two token counters only (real counts): its acceptance rate is read, not AL."""

    spec_drafts: str = "vllm:spec_decode_num_drafts_total"
    spec_draft_tokens: str = "vllm:spec_decode_num_draft_tokens_total"  # V0 and V1
    spec_accepted: str = "vllm:spec_decode_num_accepted_tokens_total"  # V0 and V1
    spec_emitted_v0: str = "vllm:spec_decode_num_emitted_tokens_total"  # V0 only: accepted prefix + bonus tokens
    spec_acceptance_rate_v0: str = "vllm:spec_decode_draft_acceptance_rate"  # V0 only: a gauge
    spec_efficiency_v0: str = "vllm:spec_decode_efficiency"  # V0 only: a gauge
    spec_accepted_per_pos: str = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    spec_drafts_created: str = "vllm:spec_decode_num_drafts_created"  # a Unix timestamp, not a count
    running: str = "vllm:num_requests_running"
    waiting: str = "vllm:num_requests_waiting"
    kv_usage: str = "vllm:kv_cache_usage_perc"
    # the same gauge's name in V0 and in V1 before 0.10 (0.8.5's vllm/v1/metrics/loggers.py exports only this one;
    # 0.10 and 0.11 both; 0.16 only kv_cache_usage_perc), read where a page has no gauge of the current name
    kv_usage_before_0_10: str = "vllm:gpu_cache_usage_perc"
    preemptions: str = "vllm:num_preemptions_total"
    generation_tokens: str = "vllm:generation_tokens_total"
    prompt_tokens: str = "vllm:prompt_tokens_total"
    request_success: str = "vllm:request_success_total"
    ttft: str = "vllm:time_to_first_token_seconds"
    itl: str = "vllm:inter_token_latency_seconds"
    # the same histogram's name before 0.11 (vllm/v1/metrics/loggers.py: "Deprecated in 0.11 - Renamed as
    # vllm:inter_token_latency_seconds"; hidden from 0.11 unless --show-hidden-metrics-for-version)
    itl_before_0_11: str = "vllm:time_per_output_token_seconds"
    tpot: str = "vllm:request_time_per_output_token_seconds"  # per request; exported from 0.11 (vLLM PR #24015)
    e2e: str = "vllm:e2e_request_latency_seconds"
    series_labels: tuple[str, ...] = ("model_name", "engine")


METRICS = VllmMetricNames()

# PromQL for acceptance over a window (vLLM's v1/spec_decode/metrics.py docstring).
PROMQL_ACCEPTANCE_RATE = (
    "sum(rate(vllm:spec_decode_num_accepted_tokens_total[5m])) / sum(rate(vllm:spec_decode_num_draft_tokens_total[5m]))"
)
PROMQL_ACCEPTANCE_LENGTH = (
    "1 + sum(rate(vllm:spec_decode_num_accepted_tokens_total[5m])) / sum(rate(vllm:spec_decode_num_drafts_total[5m]))"
)


class VllmEngine:
    """``version`` (None: the current vLLM, 0.32 when written) decides the form of a k-by-batch-size schedule:
    :mod:`specwise.engines.vllm_versions`."""

    name = "vllm"
    metrics = METRICS
    spec_metrics = SpecMetricNames(
        drafts=METRICS.spec_drafts,
        draft_tokens=(METRICS.spec_draft_tokens,),
        accepted_tokens=(METRICS.spec_accepted,),
        accepted_per_position=METRICS.spec_accepted_per_pos,
        created=METRICS.spec_drafts_created,
    )

    def __init__(self, version: VllmVersion | None = None) -> None:
        self.version = version
        schedule_form(version)  # a version too old for --speculative-config is refused here, in one line

    def speculative_config(self, s: Speculation) -> dict[str, Any]:
        """k is ``num_speculative_tokens``; with a schedule the version takes, it is the largest k the schedule
        uses (``num_speculative_tokens_per_batch_size`` takes ``[[first_batch, last_batch, k], ...]``); for a
        version without one, the k at the operating load (and, on 0.8-0.9, ``disable_by_batch_size``)."""
        if (refused := self.refusal(s.method, s.draft, s.drafting)) is not None:
            raise SpecwiseError(refused)
        form = schedule_form(self.version)
        cfg: dict[str, Any] = {"method": s.method.name}
        if s.method.needs_draft_checkpoint and s.draft:
            cfg["model"] = s.draft
        native = form == "per_batch_size"
        cfg["num_speculative_tokens"] = max([s.k, *(band[2] for band in s.schedule)]) if native else s.k
        if s.prompt_lookup and "prompt_lookup_min" in s.method.settings:
            cfg["prompt_lookup_min"], cfg["prompt_lookup_max"] = s.prompt_lookup
        if s.method.has_weights and s.target_tp > 1:
            cfg["draft_tensor_parallel_size"] = self.draft_tp(s)
        if s.schedule and native:
            cfg["num_speculative_tokens_per_batch_size"] = [list(b) for b in s.schedule]
        off = first_off_batch(s.schedule)
        if form == "disable_by_batch_size" and off is not None:
            cfg["disable_by_batch_size"] = off
        drafting = probabilistic_drafting_key(self.version)
        if s.drafting == "probabilistic" and s.method.samples_from_a_distribution and drafting is not None:
            cfg[drafting[0]] = drafting[1]  # the key this release reads (refused above where it has none)
        if s.draft_quantization in ONLINE_QUANTIZATION:
            cfg["quantization"] = s.draft_quantization
        if s.heterogeneous_vocab:
            if (refused := heterogeneous_vocab_refusal(self.version, s.method.name, s.drafting)) is not None:
                raise SpecwiseError(refused)
            cfg["use_heterogeneous_vocab"] = True
        return cfg

    def refusal(self, method: Method, draft: str | None = None, drafting: str = "greedy") -> str | None:
        """A separate draft model on 0.10 to 0.14 (:func:`~specwise.engines.vllm_versions.draft_model_engine`), a
        method before the release that named it (:data:`~specwise.engines.vllm_versions.METHOD_SINCE`), a draft
        whose name 0.8.2 to 0.8.4 read as another method
        (:func:`~specwise.engines.vllm_versions.draft_name_refusal`), probabilistic drafting where the release has
        no setting for it (:func:`~specwise.engines.vllm_versions.drafting_refusal`)."""
        said = method_refusal(self.version, method.name, draft)
        return said or drafting_refusal(self.version, drafting, method.samples_from_a_distribution)

    def draft_tp(self, s: Speculation) -> int:
        """The draft's tensor parallelism this version runs (:func:`~specwise.engines.vllm_versions.served_draft_tp`):
        a separate draft model only at the target's on V1 (0.15 on), as asked on V0; an EAGLE / MTP head at the
        target's on V1, on one GPU on V0."""
        return served_draft_tp(self.version, s.method.name, s.draft_tp, s.target_tp)

    def draft_split_refusal(self, s: Speculation, heads: int) -> str | None:
        """A draft run at the target's tensor parallelism (:meth:`draft_tp`; written only when the target is split)
        whose heads do not divide over it: vLLM shards heads evenly over TP ranks (``vllm/model_executor/models``);
        V0 (before 0.10) runs a draft on one GPU, which the remedy offers."""
        if not s.method.has_weights or s.target_tp <= 1:
            return None
        remedy = (
            f", or a vLLM before 0.10 (V0 runs a draft on one GPU; specwise writes its command for --vllm-version "
            f"{V0_ERA_CONFIGS})"
        )
        return heads_split_refusal(
            "vLLM V1 (0.15+, this config's)", self.draft_tp(s), s.draft or "the draft", heads, remedy
        )

    def schedule_notes(
        self, schedule: Sequence[tuple[int, int, int]], k: int, method: str | None = None
    ) -> tuple[str, ...]:
        """What this version's config cannot say of the schedule (empty when it takes it as given)."""
        return schedule_notes(self.version, schedule, k, method)

    def serve_argv(self, d: Deployment, speculative_config: Mapping[str, Any] | None) -> list[str]:
        """``vllm serve`` with every setting the memory plan and the simulation used (:meth:`deployment_args`)."""
        method = speculative_config.get("method") if speculative_config is not None else None
        argv = ["vllm", "serve", d.model, "--host", d.host, *self.deployment_args(d, method)]
        if speculative_config is not None:
            argv += ["--speculative-config", json.dumps(dict(speculative_config), separators=(",", ":"))]
        return argv

    def deployment_args(self, d: Deployment, method: str | None = None) -> list[str]:
        """TP, memory utilisation, max model length and max_num_seqs; the token budget when given (advise always
        gives the scenario's: vLLM's own default depends on the GPU, ``EngineArgs.get_batch_defaults``), at least
        the max model length where ``method`` runs on V0 (:meth:`token_budget`); the online quantisation and the KV
        cache dtype when the plan used one (``--kv-cache-dtype``: vllm/config/cache.py ``CacheDType``; auto, the
        model's dtype, needs no flag)."""
        extra = ["--tensor-parallel-size", str(d.tp), "--gpu-memory-utilization", f"{d.gpu_memory_utilization:g}"]
        if d.max_model_len is not None:
            extra += ["--max-model-len", str(d.max_model_len)]
        extra += ["--max-num-seqs", str(d.max_num_seqs)]
        if (budget := self.token_budget(d, method)) is not None:
            extra += ["--max-num-batched-tokens", str(budget)]
        if d.quantization in ONLINE_QUANTIZATION:
            extra += ["--quantization", d.quantization]
        if d.kv_cache_dtype != "auto":
            extra += ["--kv-cache-dtype", d.kv_cache_dtype]
        return extra

    def token_budget(self, d: Deployment, method: str | None) -> int | None:
        """``--max-num-batched-tokens``: the plan's, except where speculation runs on the V0 engine
        (:func:`~specwise.engines.vllm_versions.speculation_engine`), which prefills a prompt whole: V0 turns chunked
        prefill on by default only above 32K tokens and never with speculation (``_set_default_args_v0``, 0.8.5 and
        0.9.2 ``vllm/engine/arg_utils.py``), and then refuses to start with a budget below the max model length
        (``SchedulerConfig._verify_args``: "max_num_batched_tokens (...) is smaller than max_model_len"). So the
        budget is raised to the max model length, or left to V0's own default (``max(max_model_len, 2048)``) when
        the plan did not fix that length. The V0 engine profile simulates whole-prompt prefills alike."""
        budget = d.max_num_batched_tokens
        v0 = d.on_v0 or (method not in (None, "none") and speculation_engine(self.version, method) == "v0")
        if budget is None or not v0:
            return budget
        return None if d.max_model_len is None else max(budget, d.max_model_len)

    def launch_argv(
        self,
        python: str,
        model: str,
        served_name: str,
        port: int,
        extra_args: Sequence[str],
        speculative_config: dict[str, Any] | None,
        host: str = LOOPBACK,
    ) -> list[str]:
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
        argv += ["--served-model-name", served_name, "--host", host, "--port", str(port), *extra_args]
        if speculative_config:
            argv += ["--speculative-config", json.dumps(speculative_config)]
        return argv
