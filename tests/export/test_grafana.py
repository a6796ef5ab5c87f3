"""``specwise export grafana``: a dashboard JSON whose every query is valid PromQL (parse-checked by promtool as a
rules file), over vLLM metric names only, filtered by the ``$model_name`` and ``$instance`` variables."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from specwise.engines.vllm import METRICS
from specwise.export.grafana import build_dashboard, render_dashboard
from specwise.export.rules import RecordingRule, RuleGroup, render_rules
from tests.export.test_rules import _promtool


def _doc() -> dict[str, object]:
    doc = json.loads(render_dashboard(build_dashboard()))
    assert isinstance(doc, dict)
    return doc


def _exprs(doc: dict[str, object]) -> list[str]:
    panels = doc["panels"]
    assert isinstance(panels, list) and len(panels) == 6
    return [t["expr"] for p in panels for t in p["targets"]]


def test_dashboard_structure_and_variables() -> None:
    doc = _doc()
    # the foundation SDK writes its dashboard model's schema version; Grafana migrates older ones on import
    assert isinstance(doc["schemaVersion"], int) and doc["schemaVersion"] >= 36 and doc["uid"]
    assert doc["tags"] == ["vllm", "speculative-decoding", "specwise"] and doc["refresh"] == "30s"
    variables = {v["name"]: v for v in doc["templating"]["list"]}  # type: ignore[index]
    # the draft-token counter, which V0 exports too (it has no drafts counter): every replica is in the pickers
    assert variables["model_name"]["query"]["query"] == f"label_values({METRICS.spec_draft_tokens}, model_name)"
    assert variables["instance"]["query"]["query"].startswith(f"label_values({METRICS.spec_draft_tokens}")
    titles = [p["title"] for p in doc["panels"]]  # type: ignore[attr-defined]
    assert "Per-position acceptance" in titles and "TPOT / ITL p50 and p99" in titles
    assert len({p["id"] for p in doc["panels"]}) == 6  # type: ignore[attr-defined]
    grid = [(p["gridPos"]["x"], p["gridPos"]["y"]) for p in doc["panels"]]  # type: ignore[attr-defined]
    assert len(set(grid)) == 6 and all(p["datasource"]["uid"] == "${datasource}" for p in doc["panels"])  # type: ignore[attr-defined]
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"


def test_every_query_filters_by_the_variables_and_uses_vllm_names() -> None:
    known = {v for v in vars(METRICS).values() if isinstance(v, str)}
    for expr in _exprs(_doc()):
        selectors = re.findall(r"(vllm:[a-z_:]+)(\{[^}]*\})?", expr)
        assert selectors, expr
        for name, matchers in selectors:
            assert name.removesuffix("_bucket") in known, name
            assert 'model_name=~"$model_name"' in matchers and 'instance=~"$instance"' in matchers, expr


def test_promtool_parses_every_query(tmp_path: Path) -> None:
    exprs = _exprs(_doc())
    group = RuleGroup("grafana", tuple(RecordingRule(f"panel:query_{i}", e) for i, e in enumerate(exprs)))
    (tmp_path / "q.yml").write_text(render_rules([group]))
    done = subprocess.run([_promtool(), "check", "rules", str(tmp_path / "q.yml")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in done.stdout
