"""Terminal views of model specs, the catalogs and a draft/target pair report."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from specwise.compat.pair import PairReport
from specwise.memory.weights import weight_bytes
from specwise.report.console import STATUS_STYLE, console
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.units import DTYPE_BYTES, fmt_bytes, fmt_count


def spec_to_dict(spec: ModelSpec, kv_dtype: str) -> dict[str, Any]:
    kvb = DTYPE_BYTES[kv_dtype]
    a = spec.attention
    return {
        "id": spec.name,
        "source": spec.source,
        "architecture": spec.architecture,
        "model_type": spec.model_type,
        "params": spec.total_params,
        "active_params": spec.active_params,
        "param_breakdown": spec.params.counts(),
        "layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": a.num_heads,
        "num_kv_heads": a.num_kv_heads,
        "head_dim": a.head_dim,
        "attention": a.kind,
        "kv_lora_rank": a.kv_lora_rank or None,
        "sliding_window_layers": a.sliding_layers,
        "sliding_windows": sorted({w for w in a.layer_windows if w is not None}),
        "vocab_size": spec.vocab_size,
        "tie_word_embeddings": spec.tie_word_embeddings,
        "max_position_embeddings": spec.max_position_embeddings,
        "dtype": spec.dtype,
        "native_quantization": spec.native_quantization.label(),
        "weight_bytes": weight_bytes(spec, DTYPE_BYTES[spec.dtype], None),
        "kv_cache_dtype": kv_dtype,
        "kv_bytes_per_token": spec.kv_bytes_per_token(kvb),
        "kv_bytes_per_sequence_at_max_len": spec.kv_bytes_for_sequence(spec.max_position_embeddings, kvb),
        "moe": None
        if spec.moe is None
        else {
            "num_experts": spec.moe.num_experts,
            "experts_per_token": spec.moe.experts_per_token,
            "expert_intermediate_size": spec.moe.expert_intermediate_size,
            "moe_layers": spec.moe.moe_layers,
            "num_shared_experts": spec.moe.num_shared_experts,
        },
        "mtp_layers": spec.mtp_layers,
        "draft_head": spec.draft_head,
        "draft_vocab_size": spec.draft_vocab_size,
        "bos_token_id": spec.special_tokens.bos_token_id,
        "eos_token_ids": list(spec.special_tokens.eos_token_ids),
        "tokenizer_family": spec.tokenizer.family,
        "notes": list(spec.notes),
    }


def render_model_spec(spec: ModelSpec, kv_dtype: str) -> None:
    d = spec_to_dict(spec, kv_dtype)
    table = Table(title=f"{spec.name}  [dim]({spec.source})[/dim]", title_justify="left", show_header=False)
    table.add_column("field")
    table.add_column("value")
    params = fmt_count(d["params"])
    if spec.is_moe:
        params += f" total, {fmt_count(d['active_params'])} active"
    table.add_row("architecture", f"{spec.architecture} ({spec.model_type})")
    table.add_row("parameters", params)
    table.add_row("weights (as stored)", f"{fmt_bytes(d['weight_bytes'])} ({spec.dtype}, {d['native_quantization']})")
    table.add_row(
        "layers / hidden / intermediate", f"{spec.num_layers} / {spec.hidden_size} / {spec.intermediate_size}"
    )
    attn = f"{d['attention']}: {d['num_attention_heads']} heads, {d['num_kv_heads']} KV heads, head dim {d['head_dim']}"
    if d["kv_lora_rank"]:
        attn += f", latent {d['kv_lora_rank']}+{spec.attention.qk_rope_head_dim}"
    table.add_row("attention", attn)
    if d["sliding_window_layers"]:
        table.add_row(
            "sliding window",
            f"{d['sliding_window_layers']} of {spec.num_layers} layers, "
            f"window {', '.join(map(str, d['sliding_windows']))}",
        )
    if spec.moe:
        m = spec.moe
        table.add_row(
            "experts",
            f"{m.num_experts} x {m.expert_intermediate_size} ({m.experts_per_token} per token, "
            f"{m.num_shared_experts} shared) in {m.moe_layers} layers",
        )
    table.add_row("vocab", f"{spec.vocab_size:,}" + (" (tied embeddings)" if spec.tie_word_embeddings else ""))
    table.add_row("max positions", f"{spec.max_position_embeddings:,}")
    table.add_row(f"KV bytes/token ({kv_dtype})", f"{d['kv_bytes_per_token']:,} B")
    table.add_row("KV bytes, one max-length sequence", fmt_bytes(d["kv_bytes_per_sequence_at_max_len"]))
    if spec.mtp_layers:
        table.add_row("MTP layers", str(spec.mtp_layers))
    if spec.draft_head:
        table.add_row("draft head", f"{spec.draft_head} (draft vocab {spec.draft_vocab_size:,})")
    for note in spec.notes:
        table.add_row("note", note)
    console().print(table)


def render_catalog(rows: list[dict[str, Any]], filter_text: str) -> None:
    table = Table(
        title=f"Model catalog ({len(rows)} models{', matching ' + repr(filter_text) if filter_text else ''})",
        title_justify="left",
    )
    for col in ("id", "kind", "params", "active", "layers", "vocab", "KV B/token (bf16)", "roles"):
        table.add_column(col, justify="left" if col in ("id", "kind", "roles") else "right")
    for r in rows:
        table.add_row(
            r["id"],
            r["kind"],
            fmt_count(r["params"]),
            fmt_count(r["active_params"]) if r["active_params"] != r["params"] else "",
            str(r["layers"]),
            f"{r['vocab_size']:,}",
            f"{r['kv_bytes_per_token']:,}",
            ", ".join(r["roles"]),
        )
    console().print(table)


def render_gpus(gpus: list[GpuSpec]) -> None:
    table = Table(title="GPU catalog (dense tensor-core rates)", title_justify="left")
    for col in ("name", "memory", "bandwidth", "BF16", "FP8", "INT8", "interconnect/dir"):
        table.add_column(col, justify="left" if col == "name" else "right")

    def tf(x: float | None) -> str:
        return "-" if x is None else f"{x / 1e12:,.0f} T"

    for g in gpus:
        table.add_row(
            g.name,
            fmt_bytes(g.memory_bytes),
            f"{g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s",
            tf(g.dense_bf16_flops_per_s),
            tf(g.dense_fp8_flops_per_s),
            tf(g.dense_int8_ops_per_s),
            f"{g.interconnect_bytes_per_s / 1e9:,.0f} GB/s",
        )
    console().print(table)


def render_pair_findings(report: PairReport, out: Console) -> None:
    table = Table(title=f"Draft {report.draft} for target {report.target}", title_justify="left")
    table.add_column("check")
    table.add_column("status")
    table.add_column("finding")
    for f in report.findings:
        style = STATUS_STYLE[f.status]
        table.add_row(f.check, f"[{style}]{f.status}[/{style}]", f.message)
    out.print(table)


def render_pair(report: PairReport) -> None:
    out = console()
    render_pair_findings(report, out)
    verdict = "[green]compatible[/green]" if report.compatible else "[bold red]not compatible[/bold red]"
    out.print(f"{verdict}; size ratio 1:{report.param_ratio:.1f} (params), 1:{report.byte_ratio:.1f} (bytes)")
