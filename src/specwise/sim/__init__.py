"""Discrete-event simulation of vLLM-style continuous batching, with and without speculation."""
