"""What ``specwise calibrate`` refuses in ``vllm bench serve --save-detailed`` files, each in one line naming the
file (pure: checks values already read).

Numbers no measurement can give are refused where the file is read
(:mod:`specwise.contracts.vllm_detailed_values`).

Runs: one target model; a baseline run (no ``--metadata speculative_config``) that the speculative runs are
measured against, at each of their ``--request-rate`` and ``--max-concurrency`` (a level is compared with the
baseline at its own load), with at least one timed engine step (its steps are the target's law);
at least one speculative run (a calibration without one is refused by every ``--calibration`` user,
:func:`specwise.perfmodel.factory.calibrated_models`, since every scenario names a method); methods specwise knows
(:mod:`specwise.methods`) with their ``num_speculative_tokens`` in 1..``MAX_K``; successful requests in every run;
requests whose prompt and output fit the replay's KV capacity; and in every speculative run the ``spec_decode_*``
counts, consistent with its ``k``.

The counts are what the fit learns the tokens each sequence feeds a step from (1 + draft tokens per request-step,
:func:`specwise.calibration.steps.query_per_seq`) and the replay its acceptance; the file holds no other record
of them (a streamed chunk carries the accepted tokens plus one, but a lookup method drafts only where it matched,
so how many tokens were verified is not in the timings). vLLM counts them per request per step
(``vllm/v1/core/sched/scheduler.py`` ``update_from_output``: ``observe_draft(num_draft_tokens=
len(scheduled_spec_token_ids), ...)`` only for a request that had draft tokens scheduled;
``vllm/v1/spec_decode/metrics.py`` ``SpecDecodingStats``): one draft per such request-step, with between 1 and
``num_speculative_tokens`` draft tokens (fewer when the scheduler trims them to the token budget or the model
length, or a lookup proposes fewer), so ``drafts <= draft_tokens <= drafts * k``; and one per-position rate per
draft position, k of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from specwise.calibration.from_bench import KV_CAPACITY_TOKENS
from specwise.contracts.vllm_detailed import DetailedRun
from specwise.errors import SpecwiseError
from specwise.methods import MAX_K, get_method


def _runs_of(runs: Sequence[DetailedRun], shown: int = 4) -> str:
    more = f" and {len(runs) - shown} more" if len(runs) > shown else ""
    return ", ".join(r.where for r in runs[:shown]) + more


def check_models(runs: Sequence[DetailedRun]) -> str:
    """The one target model of ``runs``; runs of two models are refused, and so are runs none of which names its
    model: vLLM writes ``model_id`` (``--model``, else the server's first model), and a calibration without its
    target would price any model (the reader refuses one: :mod:`specwise.contracts.calibration`)."""
    by_model: dict[str, list[DetailedRun]] = {}
    for r in runs:
        if r.model_id:
            by_model.setdefault(r.model_id, []).append(r)
    if not by_model:
        raise SpecwiseError(
            f"no model_id in {_runs_of(runs)}: vllm bench serve writes the model it benchmarked there, and a "
            "calibration must name the model it measured; give the files as vllm bench serve wrote them"
        )
    if len(by_model) > 1:
        models = "; ".join(f"{m} ({_runs_of(rs)})" for m, rs in by_model.items())
        raise SpecwiseError(f"runs of different models: {models}; calibrate each model's runs separately")
    return next(iter(by_model))


def _succeeded(run: DetailedRun) -> bool:
    return any(not t.error and t.ttft_s is not None and t.output_tokens > 0 for t in run.requests)


def _check_method(r: DetailedRun) -> None:
    if r.method is None:
        return
    try:
        get_method(r.method)
    except SpecwiseError as exc:
        raise SpecwiseError(f"{r.where}: speculative_config: {exc}") from None
    if r.k < 1:
        raise SpecwiseError(
            f"{r.where}: speculative_config has no num_speculative_tokens >= 1: add the value the server ran with "
            "to --metadata speculative_config"
        )
    if r.k > MAX_K:
        raise SpecwiseError(
            f"{r.where}: speculative_config num_speculative_tokens = {r.k}: specwise simulates at most {MAX_K} draft "
            "tokens per step"
        )


def _check_counts(r: DetailedRun) -> None:
    """A speculative run's ``spec_decode_*`` counts are present and possible for its k (module docstring)."""
    reading = r.summary.spec_decode
    counts = reading.counts if reading else None
    if counts is None:
        raise SpecwiseError(
            f"{r.where}: the {r.method} run has no spec_decode counts (vLLM wrote none: a vllm bench serve older "
            "than its spec_decode_* fields, or a server whose /metrics it could not read); calibrate needs them to "
            "know the tokens per step -- re-run the bench against a vLLM that exposes /metrics, or calibrate from "
            "specwise's own runs (specwise bench --launch FILE --calibrate)"
        )
    drafts, draft_tokens = counts.drafts, counts.draft_tokens
    if not drafts <= draft_tokens <= drafts * r.k:
        raise SpecwiseError(
            f"{r.where}: spec_decode_draft_tokens = {draft_tokens:g} with spec_decode_num_drafts = {drafts:g} and "
            f"num_speculative_tokens = {r.k}: vLLM counts 1..{r.k} draft tokens per draft, so between {drafts:g} "
            f"and {drafts * r.k:g}"
        )
    if counts.k > r.k:
        raise SpecwiseError(
            f"{r.where}: spec_decode_per_position_acceptance_rates has {counts.k} positions but the "
            f"speculative_config's num_speculative_tokens is {r.k}: the --metadata does not describe this server"
        )


def _check_no_drafts(r: DetailedRun) -> None:
    """A run without a speculative_config whose server drafted (``spec_decode_num_drafts`` > 0) is a speculating
    server's run with its --metadata missing, not a baseline: taken as one, its steps were fitted as the target's
    (review s60: exit 0, and a warning that blamed --max-num-seqs for the replay's miss)."""
    reading = r.summary.spec_decode
    drafts = reading.counts.drafts if reading is not None and reading.counts is not None else 0
    if drafts > 0:
        raise SpecwiseError(
            f"{r.where}: the server drafted ({drafts:g} spec_decode drafts) but the run has no speculative_config: "
            "add the server's --speculative-config to that run's result (vllm bench serve --metadata "
            "speculative_config='{...}'), or give the run of a server without speculation as the baseline"
        )


def _check_lengths(r: DetailedRun) -> None:
    """Every request's prompt and output fit the replay's KV capacity (a longer one is no real request)."""
    for i, t in enumerate(r.requests):
        total = (t.prompt_tokens or 0) + t.output_tokens
        if total > KV_CAPACITY_TOKENS:
            raise SpecwiseError(
                f"{r.where}: input_lens[{i}] + output_lens[{i}] = {t.prompt_tokens or 0:,} + {t.output_tokens:,} "
                f"tokens: more than the {KV_CAPACITY_TOKENS:,} tokens of context calibrate replays a request in"
            )


def _check_rates(runs: Sequence[DetailedRun], baseline: Sequence[DetailedRun]) -> None:
    """Each speculative run has a baseline run at its ``--request-rate`` and ``--max-concurrency`` (its speedup is
    measured against it)."""
    loads = {r.load_key: r.load_text for r in baseline}
    shown = ", ".join(loads[key] for key in sorted(loads))
    for r in runs:
        if r.load_key not in loads:
            raise SpecwiseError(
                f"{r.where}: {r.method} at {r.load_text} has no baseline run at that load (baseline runs: {shown}): "
                "run the baseline and each speculative config at the same --request-rate and --max-concurrency"
            )


def _check_baseline_steps(raw: Sequence[DetailedRun]) -> None:
    """The law is the baseline's: a baseline none of whose requests streamed a timed second chunk gives no step
    (the fit would otherwise take a lookup run's steps for the target's, without a word)."""
    base = [r for r in raw if r.method is None]
    if not any(any(g > 0 for g in t.itls_s) for r in base for t in r.requests if not t.error):
        raise SpecwiseError(
            f"no engine steps in the baseline runs ({_runs_of(base)}): no successful request streamed two or more "
            "chunks a time apart (every output 1 token long, or max_tokens 1?); re-run the baseline with longer "
            "outputs"
        )


def check_runs(runs: Sequence[DetailedRun]) -> None:
    """Refuse runs that cannot be calibrated from: unknown methods or k, requests longer than the replay holds, a
    speculative run without (or with impossible) spec-decode counts, runs without a successful request, no
    baseline or no speculative run, a speculative run at a load the baseline was not run at, or a baseline with no
    timed engine step."""
    for r in runs:
        _check_method(r)
        _check_lengths(r)
        if r.method is not None:
            _check_counts(r)
        else:
            _check_no_drafts(r)
        if not _succeeded(r):
            raise SpecwiseError(f"no successful requests in {r.where}: every request failed or streamed no token")
    baseline = [r for r in runs if r.method is None]
    if not baseline:
        raise SpecwiseError(
            f"no baseline run in {_runs_of(runs)}: every run has a speculative_config; add a vllm bench serve run "
            "of the server without speculation (no --metadata speculative_config) at the same --request-rate"
        )
    if len(baseline) == len(runs):
        raise SpecwiseError(
            f"only baseline runs in {_runs_of(runs)}: no speculative config to calibrate (simulate, advise and "
            "monitor --calibration need the method's runs); add vllm bench serve runs of the speculating server "
            "with --metadata speculative_config='{...}' at the same --request-rate"
        )
    _check_rates(runs, baseline)
    _check_baseline_steps(runs)
