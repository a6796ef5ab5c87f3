"""Engine metric names in one place (vLLM V1 ``vllm/v1/metrics/loggers.py``, SGLang; shared/reference)."""

from __future__ import annotations

# vLLM V1 speculative-decoding counters (labels: model_name, engine; per-position also: position).
VLLM_SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_SPEC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
VLLM_SPEC_DRAFTS_CREATED = "vllm:spec_decode_num_drafts_created"  # a Unix timestamp, not a count

# vLLM V1 serving metrics used by the bench and monitor issues.
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_KV_USAGE = "vllm:kv_cache_usage_perc"
VLLM_PREEMPTIONS = "vllm:num_preemptions_total"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"
VLLM_PROMPT_TOKENS = "vllm:prompt_tokens_total"
VLLM_REQUEST_SUCCESS = "vllm:request_success_total"
VLLM_TTFT = "vllm:time_to_first_token_seconds"
VLLM_ITL = "vllm:inter_token_latency_seconds"
VLLM_TPOT = "vllm:request_time_per_output_token_seconds"
VLLM_E2E = "vllm:e2e_request_latency_seconds"

# llama.cpp server (--metrics): cumulative drafted and accepted draft tokens. The spelling differs across builds
# (``n_drafted_total`` / ``n_drafted_accepted_total`` in current ones, ``n_draft_total`` / ``n_draft_accepted_total``
# seen in others); both exact names are read, never a substring. There is no drafts counter, so no AL.
LLAMACPP_DRAFTED = ("llamacpp:n_drafted_total", "llamacpp:n_draft_total")
LLAMACPP_ACCEPTED = ("llamacpp:n_drafted_accepted_total", "llamacpp:n_draft_accepted_total")

# SGLang exposes acceptance directly as gauges.
SGLANG_ACCEPT_LENGTH = "sglang:spec_accept_length"
SGLANG_ACCEPT_RATE = "sglang:spec_accept_rate"

# Labels that identify one engine's series.
SERIES_LABELS = ("model_name", "engine")
