"""Terminal view of a :class:`MemoryPlan`."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.compat.pair import PairReport
from specwise.memory import MemoryPlan, ModelMemory
from specwise.report.console import console
from specwise.report.models import render_pair_findings
from specwise.report.tables import print_table, sayer
from specwise.units import fmt_bytes, fmt_count


def _budget(kv_budget_bytes: int) -> str:
    """A KV budget; none left reads as such, with how much is missing (not a negative size)."""
    return fmt_bytes(kv_budget_bytes) if kv_budget_bytes >= 0 else f"none ({fmt_bytes(-kv_budget_bytes)} short)"


def render_memory_plan(
    plan: MemoryPlan, pair: PairReport | None = None, out: Console | None = None, wide: bool = False
) -> None:
    out = console(out)
    title = f"{plan.target.name} on {plan.num_gpus} x {plan.gpu.name} (TP {plan.tp}"
    title += f", {plan.replicas} replicas)" if plan.replicas > 1 else ")"
    models = Table(title=escape(title), title_justify="left")
    models.add_column("", overflow="fold")
    models.add_column("target", overflow="fold")
    if plan.draft_method:
        models.add_column("draft", overflow="fold")
    cols: list[ModelMemory] = [plan.target] + ([plan.draft] if plan.draft else [])
    fields: list[tuple[str, Callable[[ModelMemory], str]]] = [
        ("model", lambda m: escape(m.name)),
        ("parameters", lambda m: fmt_count(m.params)),
        ("dtype / quantization", lambda m: f"{m.dtype} / {m.quantization}"),
        ("tensor parallel", lambda m: str(m.tp)),
        ("weights", lambda m: fmt_bytes(m.weight_bytes)),
        ("weights per GPU", lambda m: fmt_bytes(m.weight_bytes_per_gpu)),
        (f"KV bytes/token ({plan.kv_cache_dtype})", lambda m: f"{m.kv_bytes_per_token:,}"),
        ("KV bytes/token per GPU", lambda m: f"{m.kv_bytes_per_token_per_gpu:,}"),
    ]
    for label, get in fields:
        cells = [get(m) for m in cols]
        if plan.draft_method and plan.draft is None:
            cells.append(plan.draft_method if label == "model" else "-")
        models.add_row(label, *cells)
    print_table(out, models, wide=wide)

    budget = Table(title="Per GPU (most loaded rank)", title_justify="left")
    budget.add_column("", overflow="fold")
    budget.add_column("with draft" if plan.draft_method else "plan", justify="right")
    if plan.draft_method:
        budget.add_column("without draft", justify="right")
    r, r0 = plan.reserve, plan.reserve_without_draft
    draft_w = plan.draft.weight_bytes_per_gpu if plan.draft else 0
    if plan.draft and plan.draft.tp == 1 and plan.tp > 1:
        draft_w = plan.draft.weight_bytes

    def row(label: str, with_draft: str, without: str) -> None:
        budget.add_row(label, with_draft, *([without] if plan.draft_method else []))

    row(
        f"usable ({plan.gpu_memory_utilization:.0%} of {fmt_bytes(plan.gpu.memory_bytes)})",
        fmt_bytes(plan.budget_bytes_per_gpu),
        fmt_bytes(plan.budget_bytes_per_gpu),
    )
    row("target weights", fmt_bytes(plan.target.weight_bytes_per_gpu), fmt_bytes(plan.target.weight_bytes_per_gpu))
    if plan.draft_method:
        row("draft weights", fmt_bytes(draft_w), "-")
    reserve_note = " (given)" if r.overridden else " (estimate)"
    row("reserve" + reserve_note, fmt_bytes(r.total_bytes), fmt_bytes(r0.total_bytes))
    row(
        "KV cache budget",
        _budget(plan.kv_budget_bytes_per_gpu),
        _budget(plan.kv_budget_bytes_per_gpu_without_draft),
    )
    row("KV cache tokens", f"{plan.kv_cache_tokens:,}", f"{plan.kv_cache_tokens_without_draft:,}")
    row(
        f"max concurrent seqs @ {plan.max_model_len:,} tokens",
        f"{plan.max_concurrent_seqs:,}",
        f"{plan.max_concurrent_seqs_without_draft:,}",
    )
    print_table(out, budget, wide=wide)
    _verdict(sayer(out, wide), plan)
    if pair is not None:
        render_pair_findings(pair, out, wide)


def _verdict(say: Callable[..., None], plan: MemoryPlan) -> None:
    """Fits or not, with the figures; then the plan's warnings."""
    if plan.fits:
        verdict = (
            f"[green]fits[/green]: {plan.kv_cache_tokens:,} KV tokens, {plan.max_concurrent_seqs} "
            f"concurrent {plan.max_model_len:,}-token sequences"
            + (f" per replica ({plan.replicas} replicas)" if plan.replicas > 1 else "")
        )
        cost = plan.draft_concurrency_cost
        if cost is not None and cost < 0.25:  # larger costs are printed as a warning below
            verdict += f"; the draft costs {cost:.0%} of concurrency"
        say(verdict)
    else:
        say("[bold red]does not fit[/bold red]: " + "; ".join(plan.problems))
    for w in plan.warnings:
        say(f"[yellow]warning[/yellow]: {escape(w)}")
