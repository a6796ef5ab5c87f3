"""Rewrite the recorded simulator traces from the current code: ``python tests/sim/regen_traces.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.sim.test_trace_unchanged import GOLDEN
from tests.sim.trace_cases import CASES, fingerprint

if __name__ == "__main__":
    doc = {name: fingerprint(make().run()) for name, make in sorted(CASES.items())}
    lines = [f"{json.dumps(name)}: {json.dumps(trace, separators=(',', ':'))}" for name, trace in doc.items()]
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # one case per line
    print(f"wrote {GOLDEN} ({len(doc)} cases)")
