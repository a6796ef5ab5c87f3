"""Watching speculative decoding in production: windowed stats from /metrics and alert rules (pure core)."""
