"""Terminal views of model specs, the catalogs and a draft/target pair report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.compat.pair import PairReport, ratio_text
from specwise.memory.weights import weight_bytes
from specwise.report.console import STATUS_STYLE, console
from specwise.report.tables import print_table
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec, MoeSpec
from specwise.units import DTYPE_BYTES, fmt_bytes, fmt_count


@dataclass(frozen=True)
class ModelSpecView:
    """A model as ``specwise inspect`` shows it: its spec and what specwise derives from it, KV figures at one
    KV-cache dtype. ``to_json()`` is ``specwise inspect --json``."""

    spec: ModelSpec
    kv_dtype: str
    catalog_source: str | None = None  # a catalog model's: where its figures come from (catalog.catalog_source)

    @property
    def weight_bytes(self) -> int:
        return weight_bytes(self.spec, DTYPE_BYTES[self.spec.dtype], None)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.spec.kv_bytes_per_token(DTYPE_BYTES[self.kv_dtype])

    @property
    def kv_bytes_per_sequence_at_max_len(self) -> int:
        spec = self.spec
        return spec.kv_bytes_for_sequence(spec.max_position_embeddings, DTYPE_BYTES[self.kv_dtype])

    @property
    def stored_as(self) -> str:
        """How the weights are served: the GGUF format of a GGUF file, else the dtype vLLM serves them in (a float32
        checkpoint's is bf16: dtype="auto") and the native quantization. (The JSON key keeps its name.)"""
        spec = self.spec
        return spec.stored_format or f"{spec.dtype}, {spec.native_quantization.label()}"

    @property
    def sliding_windows(self) -> list[int]:
        return sorted({w for w in self.spec.attention.layer_windows if w is not None})

    def to_json(self) -> dict[str, Any]:
        spec, a = self.spec, self.spec.attention
        return {
            "id": spec.name,
            "source": spec.source,
            "catalog_source": self.catalog_source,
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
            "sliding_windows": self.sliding_windows,
            "vocab_size": spec.vocab_size,
            "tie_word_embeddings": spec.tie_word_embeddings,
            "max_position_embeddings": spec.max_position_embeddings,
            "dtype": spec.dtype,
            "native_quantization": spec.stored_format or spec.native_quantization.label(),
            "stored_as": self.stored_as,
            "weight_bytes": self.weight_bytes,
            "kv_cache_dtype": self.kv_dtype,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_sequence_at_max_len": self.kv_bytes_per_sequence_at_max_len,
            "moe": _moe_json(spec.moe),
            "mtp_layers": spec.mtp_layers,
            "draft_head": spec.draft_head,
            "draft_vocab_size": spec.draft_vocab_size,
            "bos_token_id": spec.special_tokens.bos_token_id,
            "eos_token_ids": list(spec.special_tokens.eos_token_ids),
            "tokenizer_family": spec.tokenizer.family,
            "notes": list(spec.notes),
        }


def _moe_json(moe: MoeSpec | None) -> dict[str, int] | None:
    if moe is None:
        return None
    return {
        "num_experts": moe.num_experts,
        "experts_per_token": moe.experts_per_token,
        "expert_intermediate_size": moe.expert_intermediate_size,
        "moe_layers": moe.moe_layers,
        "num_shared_experts": moe.num_shared_experts,
    }


def _attention_line(view: ModelSpecView) -> str:
    a = view.spec.attention
    line = f"{a.kind}: {a.num_heads} heads, {a.num_kv_heads} KV heads, head dim {a.head_dim}"
    if a.kv_lora_rank:
        line += f", latent {a.kv_lora_rank}+{a.qk_rope_head_dim}"
    return line


def render_model_spec(view: ModelSpecView, out: Console | None = None, wide: bool = False) -> None:
    spec, kv_dtype = view.spec, view.kv_dtype
    table = Table(
        title=f"{escape(spec.name)}  [dim]({escape(spec.source)})[/dim]", title_justify="left", show_header=False
    )
    table.add_column("field", overflow="fold")
    table.add_column("value", overflow="fold")
    params = fmt_count(spec.total_params)
    if spec.is_moe:
        params += f" total, {fmt_count(spec.active_params)} active"
    if view.catalog_source:
        table.add_row("source", escape(view.catalog_source))
    table.add_row("architecture", f"{spec.architecture} ({spec.model_type})")
    table.add_row("parameters", params)
    table.add_row("weights (as served)", f"{fmt_bytes(view.weight_bytes)} ({view.stored_as})")
    table.add_row(
        "layers / hidden / intermediate", f"{spec.num_layers} / {spec.hidden_size} / {spec.intermediate_size}"
    )
    table.add_row("attention", _attention_line(view))
    if spec.attention.sliding_layers:
        table.add_row(
            "sliding window",
            f"{spec.attention.sliding_layers} of {spec.num_layers} layers, "
            f"window {', '.join(map(str, view.sliding_windows))}",
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
    table.add_row(f"KV bytes/token ({kv_dtype})", f"{view.kv_bytes_per_token:,} B")
    table.add_row("KV bytes, one max-length sequence", fmt_bytes(view.kv_bytes_per_sequence_at_max_len))
    if spec.mtp_layers:
        table.add_row("MTP layers", str(spec.mtp_layers))
    if spec.draft_head:
        table.add_row("draft head", f"{spec.draft_head} (draft vocab {spec.draft_vocab_size:,})")
    for note in spec.notes:
        table.add_row("note", note)
    print_table(console(out), table, wide=wide)


@dataclass(frozen=True)
class CatalogRow:
    """One model of ``specwise models``; ``to_json()`` is its entry in ``specwise models --json``."""

    id: str
    family: str
    roles: tuple[str, ...]
    params: int
    active_params: int
    layers: int
    vocab_size: int
    kv_bytes_per_token: int  # at 2 bytes (bf16)
    max_position_embeddings: int
    kind: str  # dense, moe, or the draft head's kind
    source: str = ""  # where its figures come from: the published parameter counts' source, else its config's

    @classmethod
    def of(cls, model_id: str, family: str, roles: Sequence[str], spec: ModelSpec, source: str = "") -> CatalogRow:
        return cls(
            id=model_id,
            family=family,
            roles=tuple(roles),
            params=spec.total_params,
            active_params=spec.active_params,
            layers=spec.num_layers,
            vocab_size=spec.vocab_size,
            kv_bytes_per_token=spec.kv_bytes_per_token(2.0),
            max_position_embeddings=spec.max_position_embeddings,
            kind=spec.draft_head or ("moe" if spec.is_moe else "dense"),
            source=source,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "roles": list(self.roles),
            "params": self.params,
            "active_params": self.active_params,
            "layers": self.layers,
            "vocab_size": self.vocab_size,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "max_position_embeddings": self.max_position_embeddings,
            "kind": self.kind,
            "source": self.source,
        }


def render_catalog(
    rows: Sequence[CatalogRow], filter_text: str, out: Console | None = None, wide: bool = False
) -> None:
    table = Table(
        title=f"Model catalog ({len(rows)} models{', matching ' + repr(filter_text) if filter_text else ''})",
        title_justify="left",
    )
    for col in ("id", "kind", "params", "active", "layers", "vocab", "KV B/token (bf16)", "roles"):
        table.add_column(col, justify="left" if col in ("id", "kind", "roles") else "right")
    table.columns[-1].overflow = "fold"  # roles wrap at the comma
    for r in rows:
        table.add_row(
            r.id,
            r.kind,
            fmt_count(r.params),
            fmt_count(r.active_params) if r.active_params != r.params else "",
            str(r.layers),
            f"{r.vocab_size:,}",
            f"{r.kv_bytes_per_token:,}",
            ", ".join(r.roles),
        )
    print_table(console(out), table, wide=wide)


def render_gpus(gpus: list[GpuSpec], out: Console | None = None, wide: bool = False) -> None:
    table = Table(title="GPU catalog (dense tensor-core rates; interconnect per direction)", title_justify="left")
    for col in ("name", "memory", "bandwidth", "BF16 TFLOP/s", "FP8 TFLOP/s", "INT8 TOP/s", "interconnect", "segment"):
        table.add_column(col, justify="left" if col in ("name", "segment") else "right")

    def tf(x: float | None) -> str:  # FLOP/s (INT8: integer ops/s) in units of 1e12, as the header says
        return "-" if x is None else f"{x / 1e12:,.0f}"

    for g in gpus:
        table.add_row(
            g.name,
            fmt_bytes(g.memory_bytes),
            f"{g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s",
            tf(g.dense_bf16_flops_per_s),
            tf(g.dense_fp8_flops_per_s),
            tf(g.dense_int8_ops_per_s),
            f"{g.interconnect_bytes_per_s / 1e9:,.0f} GB/s",
            g.segment or "-",
        )
    con = console(out)
    print_table(con, table, wide=wide)
    names = Table(title="also taken by --gpu: aliases, and the name nvidia-smi prints", title_justify="left")
    names.add_column("name")
    names.add_column("aliases", overflow="fold")
    names.add_column("driver name", overflow="fold")
    for g in gpus:
        names.add_row(g.name, ", ".join(g.aliases) or "-", ", ".join(g.device_names) or "-")
    print_table(con, names, wide=wide)
    con.print(
        "another card: --gpu my-gpu.json, a file of its specs with the fields one entry of 'specwise gpus --json' has"
    )
    con.print(
        "segment: whose held-back measurements a prediction's error band comes from (datacenter: data-centre and "
        "workstation cards; consumer: GeForce and laptop cards)"
    )


def render_pair_findings(report: PairReport, out: Console, wide: bool = False) -> None:
    table = Table(title=escape(f"Draft {report.draft} for target {report.target}"), title_justify="left")
    table.add_column("check", overflow="fold")
    table.add_column("status")
    table.add_column("finding", overflow="fold")
    for f in report.findings:
        style = STATUS_STYLE[f.status]
        table.add_row(f.check, f"[{style}]{f.status}[/{style}]", escape(f.message))
    print_table(out, table, wide=wide)


def render_pair(report: PairReport, out: Console | None = None, wide: bool = False) -> None:
    out = console(out)
    render_pair_findings(report, out, wide)
    verdict = "[green]compatible[/green]" if report.compatible else "[bold red]not compatible[/bold red]"
    if report.model_free:
        out.print(f"{verdict} (model-free: no weights, no KV, works with any target)")
    elif report.param_ratio is None or report.byte_ratio is None:  # no draft model to size (mtp without MTP layers)
        out.print(f"{verdict}; no draft model to size")
    else:
        params, size = ratio_text(report.param_ratio), ratio_text(report.byte_ratio)
        out.print(f"{verdict}; size ratio {params} (params), {size} (bytes)")
