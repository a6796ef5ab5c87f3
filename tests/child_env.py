"""The environment of a child process that runs this checkout's specwise (``python -m specwise ...``, ``python -c``
importing it, a Ray worker): this process's environment with the checkout's ``src`` first on ``PYTHONPATH``, ahead
of any ``PYTHONPATH`` already set, so the child imports the code under test, not an installed copy."""

from __future__ import annotations

import os
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def child_env(**extra: str) -> dict[str, str]:
    """``os.environ``, ``PYTHONPATH`` = this checkout's ``src`` then the inherited one (if any), and ``extra``."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
