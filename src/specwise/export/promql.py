"""PromQL over vLLM's spec-decode counters, with vLLM's definitions (:mod:`specwise.metrics.spec_decode`), grouped
by a label set so one expression serves a whole fleet. Metric names come from :data:`specwise.engines.vllm.METRICS`.
"""

from __future__ import annotations

from specwise.engines.vllm import METRICS

WINDOW = "5m"
BY_MODEL = ("model_name",)
BY_INSTANCE = ("instance", "model_name")


def by(labels: tuple[str, ...]) -> str:
    return ", ".join(labels)


def selector(metric: str, matchers: str = "") -> str:
    return f"{metric}{{{matchers}}}" if matchers else metric


def summed_rate(metric: str, labels: tuple[str, ...], matchers: str = "", window: str = WINDOW) -> str:
    return f"sum by ({by(labels)}) (rate({selector(metric, matchers)}[{window}]))"


def acceptance_rate(labels: tuple[str, ...], matchers: str = "") -> str:
    """accepted tokens / draft tokens, but not on a vLLM V0 server (:func:`not_v0`)."""
    return (
        f"({summed_rate(METRICS.spec_accepted, labels, matchers)} / "
        f"{summed_rate(METRICS.spec_draft_tokens, labels, matchers)}){not_v0(labels, matchers)}"
    )


def not_v0(labels: tuple[str, ...], matchers: str = "") -> str:
    """``unless`` the series come from a vLLM V0 server, told by the emitted-tokens counter only V0 exports: V0 adds
    lifetime totals to its token counters at every log interval (vLLM's ``vllm/engine/metrics.py``), so their rates
    are no acceptance (:mod:`specwise.metrics.spec_decode`)."""
    return f" unless on ({by(labels)}) {summed_rate(METRICS.spec_emitted_v0, labels, matchers)}"


def mean_acceptance_length(labels: tuple[str, ...], matchers: str = "") -> str:
    """1 + accepted tokens / drafts (the bonus token included; vLLM PR #17908)."""
    return (
        f"1 + {summed_rate(METRICS.spec_accepted, labels, matchers)} / "
        f"{summed_rate(METRICS.spec_drafts, labels, matchers)}"
    )


def per_position_acceptance(labels: tuple[str, ...], matchers: str = "") -> str:
    """accepted at position i / drafts, one series per ``position`` label."""
    return (
        f"{summed_rate(METRICS.spec_accepted_per_pos, (*labels, 'position'), matchers)} / on ({by(labels)}) "
        f"group_left {summed_rate(METRICS.spec_drafts, labels, matchers)}"
    )


def draft_tokens_rate(labels: tuple[str, ...], matchers: str = "") -> str:
    return summed_rate(METRICS.spec_draft_tokens, labels, matchers)


def drafts_rate(labels: tuple[str, ...], matchers: str = "") -> str:
    return summed_rate(METRICS.spec_drafts, labels, matchers)


def running(labels: tuple[str, ...], matchers: str = "") -> str:
    return f"sum by ({by(labels)}) ({selector(METRICS.running, matchers)})"


def histogram_quantile(q: float, histogram: str, labels: tuple[str, ...], matchers: str = "") -> str:
    """The ``q`` quantile of a vLLM histogram (``<name>_bucket``) over the window."""
    return f"histogram_quantile({q}, {summed_rate(histogram + '_bucket', (*labels, 'le'), matchers)})"


def record_name(labels: tuple[str, ...], what: str) -> str:
    """A recording rule name in Prometheus' ``level:metric:operations`` convention."""
    return f"{'_'.join(labels)}:vllm_spec_decode_{what}:rate{WINDOW}"
