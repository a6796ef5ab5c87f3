"""specwise's n-gram proposer against vLLM's own (`_find_longest_matched_ngram_and_propose_tokens`, run in
.venv-vllm) on 400 random token sequences (slow tier)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specwise.profiler.ngram import propose
from tests.missing import VLLM, missing_dependency

pytestmark = [pytest.mark.slow, pytest.mark.integration]
PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"

_VLLM = """
import json, sys
import numpy as np
from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as f
for c in json.load(sys.stdin):
    r = f(np.array(c["tokens"], dtype=np.int32), c["min"], c["max"], c["max_model_len"], c["k"])
    print(json.dumps([int(x) for x in r]))
"""


def test_ngram_proposals_equal_vllms() -> None:
    if not PYTHON.exists():
        missing_dependency("no .venv-vllm: run 'make vllm'", VLLM)
    rng = random.Random(7)
    cases: list[dict[str, Any]] = []
    for _ in range(400):
        n = rng.randint(1, 60)
        lo = rng.randint(1, 4)
        cases.append(
            {
                "tokens": [rng.randint(0, rng.choice((2, 4, 8))) for _ in range(n)],
                "min": lo,
                "max": rng.randint(lo, 6),
                "k": rng.randint(1, 8),
                "max_model_len": rng.choice((1 << 20, n + rng.randint(0, 3))),
            }
        )
    proc = subprocess.run(
        [str(PYTHON), "-c", _VLLM], input=json.dumps(cases), capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
    assert len(expected) == len(cases)
    mismatches = [
        (c, e, got)
        for c, e in zip(cases, expected, strict=True)
        if (got := propose(c["tokens"], c["k"], c["min"], c["max"], c["max_model_len"])) != e
    ]
    assert mismatches == []
    assert sum(1 for e in expected if e) > 100  # the cases exercise real matches, not only empty proposals
