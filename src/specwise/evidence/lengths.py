"""Prompt and output lengths of the datasets the evidence was measured on, for records that do not give their own.

Measured ones come from SpecDecode-Bench's released traces (``SpecDecode-Bench/simulator`` @ 2fdccbd,
``data/llama3.1-8B/combined_*.jsonl``, Llama-3 tokenizer, requests that ended with EOS; read into
``evidence/data/specdecode_bench.json`` ``datasets``). The rest are ASSUMED and said so wherever they are used.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def lengths_for(record: EvidenceRecord) -> Lengths:
    """The record's own lengths when it gives them, else its dataset's, else an ASSUMED default."""
    known = DATASETS.get(record.dataset, DEFAULT)
    prompt = record.prompt_tokens if record.prompt_tokens is not None else known.prompt_tokens
    output = record.output_tokens if record.output_tokens is not None else known.output_tokens
    if record.prompt_tokens is not None and record.output_tokens is not None:
        return Lengths(prompt, output, "published with the record")
    if record.reasoning and record.output_tokens is None and "thinking" not in known.how:
        return Lengths(prompt, output, f"ASSUMED: thinking-mode outputs unpublished; the dataset's ({known.how})")
    return Lengths(prompt, output, known.how)
