"""``specwise advise``: candidates x (memory plan, simulated speedup curve, practitioner rules) -> one decision
and the vLLM command that implements it. Pure core; the CLI and the HTML report sit at the edges."""
