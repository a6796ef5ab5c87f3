"""Rewrite the published-fit example outputs and the ``specwise validate --json`` outputs from the current code:
``python tests/golden/regen_published_fit.py``."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from specwise.cli import main
from tests.golden.test_examples_unchanged import CASES
from tests.golden.test_published_fit_unchanged import GOLDEN, PREDICTORS, ROOT, VALIDATE, command, validate_command


def _write(cmd: list[str], path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(cmd) in (0, 1)  # 1: advise answered "do not enable"
    path.write_text(out.getvalue().replace(str(ROOT), "<repo>"))  # as the test reads it back
    print(f"wrote {path}")


if __name__ == "__main__":
    for case in CASES:
        _write(command(case), GOLDEN / f"{case}.json")
    for predictor in PREDICTORS:
        _write(validate_command(predictor), VALIDATE / f"{predictor}.json")
