"""Prompt and output lengths of the datasets the evidence was measured on, for records that do not give their own.

Measured ones come from SpecDecode-Bench's released traces (``SpecDecode-Bench/simulator`` @ 2fdccbd,
``data/llama3.1-8B/combined_*.jsonl``, Llama-3 tokenizer, requests that ended with EOS; read into
``evidence/data/specdecode_bench.json`` ``datasets``). The rest are ASSUMED and said so wherever they are used.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.errors import SpecError
from specwise.evidence.records import EvidenceRecord

SDB_TRACES = "SpecDecode-Bench traces (Llama-3 tokenizer, EOS-finished requests)"


@dataclass(frozen=True)
class Lengths:
    prompt_tokens: float
    output_tokens: float
    how: str

    @property
    def assumed(self) -> bool:
        return self.how.startswith("ASSUMED")

    @property
    def unknown(self) -> bool:
        """No defensible lengths: a replay with these would price the wrong contexts (:func:`lengths_for`)."""
        return self.how.startswith("UNKNOWN")


DATASETS: dict[str, Lengths] = {
    "sharegpt": Lengths(358.6, 630.0, SDB_TRACES),
    "gsm8k": Lengths(94.5, 166.2, SDB_TRACES),
    "cnn_dailymail": Lengths(837.5, 322.9, SDB_TRACES),
    "instructcoder": Lengths(171.1, 181.9, SDB_TRACES),
    "mt_bench": Lengths(100.0, 256.0, "ASSUMED: MT-Bench first turns ~100 tokens, 256 generated"),
    "humaneval": Lengths(150.0, 256.0, "ASSUMED: HumanEval prompts ~150 tokens, 256 generated"),
    "speed_bench_code": Lengths(400.0, 512.0, "ASSUMED: SPEED-Bench code prompts ~400 tokens, 512 generated"),
    "aime": Lengths(150.0, 12000.0, "ASSUMED: AIME with thinking, ~12k generated tokens"),
    "gpqa_main": Lengths(250.0, 7000.0, "ASSUMED: GPQA with thinking, ~7k generated tokens"),
}
DEFAULT = Lengths(256.0, 256.0, "ASSUMED: dataset lengths unknown, 256 in / 256 out")

# A dataset sampled by a benchmark tool, where the tool sets the lengths (a record's ``lengths_protocol``).
# vLLM's serving benchmark (``benchmarks/benchmark_serving.py``; ``vllm bench serve`` since 0.9) takes ShareGPT V3's
# first two turns and asks for at most the reply's length in tokens ("Output length: the corresponding output length
# of these 200 prompts", vLLM ``.buildkite/nightly-benchmarks`` descriptions); its nightly suite ran Llama-3-70B at
# TP 4 with turboderp/Qwama-0.5B-Instruct, k = 4, on it (vLLM PR #6964). The lengths are those of its run in vLLM
# PR #18566 with the Llama-3 tokenizer: 1,000 requests, 229,711 prompt and 203,068 generated tokens. ShareGPT
# replies are short beside what Llama-3 writes when left to finish (SpecDecode-Bench's traces above: 630).
# SGLang's ``sglang.bench_serving`` is adapted from that benchmark (its header says so) and asks each ShareGPT request
# for its reply's length with ``ignore_eos`` on, but since sglang PR #2922 (2025-01) it keeps every conversation of
# two turns and more (no 1,024 / 2,048-token filter; ``--sharegpt-context-len`` unset) and shuffles with seed 1: its
# default 300-prompt sample counted with DeepSeek-V3's tokenizer is 95,293 prompt and 60,411 generated tokens (sglang
# PR #4918's run), 317.6 and 201.4 a request.
PROTOCOLS: dict[tuple[str, str], Lengths] = {
    ("vllm-benchmark-serving", "sharegpt"): Lengths(
        229.7,
        203.1,
        "ASSUMED: vLLM's serving benchmark on ShareGPT (replies' lengths; 229.7 in / 203.1 out, Llama-3 tokenizer, "
        "vLLM PR #18566)",
    ),
    ("sglang-bench-serving", "sharegpt"): Lengths(
        317.6,
        201.4,
        "ASSUMED: SGLang's bench_serving on ShareGPT (replies' lengths, no length filter; 317.6 in / 201.4 out with "
        "DeepSeek-V3's tokenizer over its default 300-prompt sample, sglang PR #4918)",
    ),
}


def lengths_for(record: EvidenceRecord) -> Lengths:
    """The record's own lengths when it gives them, else its dataset's as its ``lengths_protocol`` sampled it, else
    an ASSUMED default; UNKNOWN (:attr:`Lengths.unknown`) for a thinking-mode record whose dataset's lengths are of
    non-thinking replies."""
    if record.lengths_protocol == "dataset":
        known = DATASETS.get(record.dataset, DEFAULT)
    else:
        try:
            known = PROTOCOLS[(record.lengths_protocol, record.dataset)]
        except KeyError:
            raise SpecError(
                f"evidence record {record.id}: no lengths for dataset {record.dataset!r} under "
                f"lengths_protocol {record.lengths_protocol!r} (known: "
                + ", ".join(f"{d} under {p}" for p, d in PROTOCOLS)
                + ")"
            ) from None
    prompt = record.prompt_tokens if record.prompt_tokens is not None else known.prompt_tokens
    output = record.output_tokens if record.output_tokens is not None else known.output_tokens
    if record.prompt_tokens is not None and record.output_tokens is not None:
        return Lengths(prompt, output, record.lengths_how or "published with the record")
    if record.reasoning and record.output_tokens is None and "thinking" not in known.how:
        # A thinking-mode run writes its reasoning before the answer: many times the non-thinking replies the
        # dataset's lengths were measured on (SpecDecode-Bench's Figure 3 ran with max_tokens 32768), so those would
        # price contexts several times too short -- the more so the larger the batch.
        return Lengths(
            prompt, output, f"UNKNOWN: thinking-mode outputs unpublished; the dataset's are non-thinking ({known.how})"
        )
    return Lengths(prompt, output, known.how)
