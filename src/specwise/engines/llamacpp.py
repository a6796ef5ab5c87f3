"""llama.cpp's ``llama-server``: a draft model with ``--model-draft`` and ``--draft-max`` / ``--draft-min``;
``--metrics`` exports cumulative drafted and accepted draft-token counters (spelled ``n_drafted_total`` /
``n_drafted_accepted_total`` in current builds, ``n_draft_total`` / ``n_draft_accepted_total`` in others). There
is no drafts counter, so no mean acceptance length."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specwise.engines.base import DRAFTING_REFUSAL, LOOPBACK, Deployment, SpecMetricNames, Speculation, cli_flags
from specwise.errors import SpecwiseError
from specwise.methods import Method


class LlamaCppEngine:
    name = "llama.cpp"
    spec_metrics = SpecMetricNames(
        draft_tokens=("llamacpp:n_drafted_total", "llamacpp:n_draft_total"),
        accepted_tokens=("llamacpp:n_drafted_accepted_total", "llamacpp:n_draft_accepted_total"),
    )

    def refusal(self, method: Method, draft: str | None = None, drafting: str = "greedy") -> str | None:
        """Any method but a draft model; probabilistic drafting: llama-server's drafter keeps the draft's most probable
        token while its probability clears ``--draft-p-min`` (``common_speculative_gen_draft``, common/speculative.cpp)
        and verification samples the target and accepts while the two agree
        (``common_sampler_sample_and_accept_n``, common/sampling.cpp): greedy drafting, as specwise prices it."""
        if method.name != "draft_model":
            return f"llama-server speculates with a draft model only, not {method.name}"
        if drafting == "probabilistic":
            return DRAFTING_REFUSAL.format(engine="llama-server", how="the draft's most probable token")
        return None

    def speculative_config(self, s: Speculation) -> dict[str, Any]:
        if (refused := self.refusal(s.method, s.draft, s.drafting)) is not None:
            raise SpecwiseError(refused)
        if not s.draft:
            raise SpecwiseError("llama-server speculates with a draft model: name its checkpoint (--model-draft)")
        return {"model_draft": s.draft, "draft_max": s.k, "draft_min": s.k}

    def draft_split_refusal(self, s: Speculation, heads: int) -> str | None:
        """llama-server splits a model by layers (``--split-mode layer``), not by attention heads."""
        return None

    def schedule_notes(
        self, schedule: Sequence[tuple[int, int, int]], k: int, method: str | None = None
    ) -> tuple[str, ...]:
        return (f"{self.name} takes one k; the advised k-by-batch-size schedule is not applied",) if schedule else ()

    def serve_argv(self, d: Deployment, speculative_config: Mapping[str, Any] | None) -> list[str]:
        argv = ["llama-server", "-m", d.model, "--host", d.host, "--metrics", "--parallel", str(d.max_num_seqs)]
        if d.max_model_len is not None:
            argv += ["--ctx-size", str(d.max_model_len * d.max_num_seqs)]
        if speculative_config is not None:
            argv += cli_flags(speculative_config)
        return argv

    def deployment_args(self, d: Deployment, method: str | None = None) -> list[str]:
        extra = ["--parallel", str(d.max_num_seqs)]
        if d.max_model_len is not None:
            extra += ["--ctx-size", str(d.max_model_len * d.max_num_seqs)]
        return extra

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
        argv = [python, "-m", model, "--alias", served_name, "--host", host, "--port", str(port), "--metrics"]
        return argv + list(extra_args) + cli_flags(speculative_config or {})
