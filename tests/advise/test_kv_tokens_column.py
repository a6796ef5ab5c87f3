"""Review E: advise's "KV tokens" column showed the memory plan of the largest k (417,840 at k=6) beside the advised
k=4, whose plan-memory gives 420,752, without a word. The cell now names the k the plan was sized for when it is not
the advised one (text table and HTML report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.report.advise_html import write_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


def test_the_kv_tokens_cell_names_the_planned_k(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specwise.api import advise

    doc = advise(EXAMPLE, processes=1)
    top = doc.ranked[0]  # the 1B draft, enabled at k=4
    assert top.sim is not None and top.planned_k == max(top.sim.k_values)
    assert top.k != top.planned_k  # the example's advised k is below the largest simulated
    assert top.kv_tokens_text() == f"{top.memory.kv_cache_tokens:,} (k={top.planned_k})"
    assert main(["advise", "--scenario", str(EXAMPLE), "--processes", "1", "--wide"]) == 0
    assert top.kv_tokens_text() in capsys.readouterr().out
    write_report(doc, tmp_path / "r.html")
    assert top.kv_tokens_text() in (tmp_path / "r.html").read_text()
