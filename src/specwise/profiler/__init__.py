"""Acceptance profiler: alpha and AL(k) of a draft/target pair (or n-gram / suffix lookup) on real prompts.

Pure core (numpy): :mod:`.counting` (vLLM's counters from per-position acceptance probabilities),
:mod:`.distributions` (sum-min and greedy acceptance), :mod:`.ngram`, :mod:`.suffix`, :mod:`.bootstrap`,
:mod:`.result`. Torch at the edge: :mod:`.models`, :mod:`.quantize`, :mod:`.runner`, :mod:`.specloop`.
"""
