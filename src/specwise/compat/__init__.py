"""Draft/target compatibility: vocabulary, special tokens, tokenizer agreement, size ratio."""

from specwise.compat.pair import Finding, PairReport, check_pair

__all__ = ["Finding", "PairReport", "check_pair"]
