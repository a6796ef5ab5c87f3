"""``specwise export prometheus-rules``: the generated file passes the real ``promtool check rules``, and
``promtool test rules`` shows each alert firing for an unhealthy replica and not for a healthy one."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from specwise.engines.vllm import METRICS
from specwise.export.rules import AlertRule, RecordingRule, build_rule_groups, render_rules, slowdown_bands
from specwise.monitor.predicted import SlowdownModel, slowdown_model
from specwise.scenario import load_scenario
from tests.missing import missing_dependency

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "llama70b-4xh100.toml"


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        missing_dependency("promtool not found (Debian/Ubuntu: apt-get install prometheus); the rules are not checked")
    return path


@pytest.fixture(scope="module")
def model() -> SlowdownModel:
    return slowdown_model(load_scenario(SCENARIO))


def _check(path: Path) -> str:
    done = subprocess.run([_promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_promtool_checks_the_rules_and_counts_them(tmp_path: Path, model: SlowdownModel) -> None:
    plain = build_rule_groups(0.5)
    (tmp_path / "plain.yml").write_text(render_rules(plain))
    n_plain = sum(len(g.rules) for g in plain)
    assert f"SUCCESS: {n_plain} rules found" in _check(tmp_path / "plain.yml")
    assert n_plain == 12  # 5 records x 2 groupings + 2 alerts

    full = build_rule_groups(0.4, model)
    (tmp_path / "full.yml").write_text(render_rules(full))
    n_full = sum(len(g.rules) for g in full)
    assert n_full == n_plain + len(slowdown_bands(model)) > n_plain
    assert f"SUCCESS: {n_full} rules found" in _check(tmp_path / "full.yml")


def test_expressions_use_only_vllm_metric_names_and_recorded_series() -> None:
    groups = build_rule_groups(0.5)
    records = {r.record for g in groups for r in g.rules if isinstance(r, RecordingRule)}
    known = {v for v in vars(METRICS).values() if isinstance(v, str)} | records
    for rule in (r for g in groups for r in g.rules):
        for name in re.findall(r"(?:vllm:|[a-z_]+:vllm_)[a-z_:0-9]+", rule.expr):
            assert name in known, (rule, name)
        assert "by (" not in rule.expr or "model_name" in rule.expr


def test_slowdown_bands_reuse_the_perf_model(model: SlowdownModel) -> None:
    bands = slowdown_bands(model)
    assert bands and bands[0].al_low == 1.0
    for band in bands:
        assert model.break_even_batch(band.al_low) == band.batch
    for a, b in itertools.pairwise(bands):
        assert a.al_high == b.al_low and a.batch < b.batch  # break-even grows with AL


def _series(name: str, instance: str, per_minute: float, extra: str = "", model: str = "llama") -> dict[str, str]:
    labels = f'instance="{instance}", model_name="{model}", engine="0", job="vllm"{extra}'
    return {"series": f"{name}{{{labels}}}", "values": f"0+{per_minute:g}x40"}


def _replica(
    instance: str, accepted_per_min: float, running: int, model: str = "llama", drafts: float = 10
) -> list[dict[str, str]]:
    return [
        _series(METRICS.spec_drafts, instance, drafts, model=model),
        _series(METRICS.spec_draft_tokens, instance, 3 * drafts, model=model),
        _series(METRICS.spec_accepted, instance, accepted_per_min, model=model),
        _series(METRICS.spec_accepted_per_pos, instance, accepted_per_min, ', position="0"', model=model),
        {
            "series": f'{METRICS.running}{{instance="{instance}", model_name="{model}", engine="0"}}',
            "values": f"{running}x40",
        },
    ]


def _v0_replica(
    instance: str, accepted_per_min: float, running: int, draft_tokens: float = 30, v0: bool = False
) -> list[dict[str, str]]:
    """A replica with draft and accepted token counters but no drafts counter, no per-position counts and no
    ``engine`` label: vLLM V1 before 0.8.5 (real counts), or with ``v0`` a vLLM V0 one (``vllm/engine/metrics.py``),
    which also exports its emitted-tokens counter and adds lifetime totals to the token counters (no counts)."""
    labels = f'instance="{instance}", model_name="llama", job="vllm"'
    out = [
        {"series": f"{METRICS.spec_draft_tokens}{{{labels}}}", "values": f"0+{draft_tokens:g}x40"},
        {"series": f"{METRICS.spec_accepted}{{{labels}}}", "values": f"0+{accepted_per_min:g}x40"},
        {"series": f'{METRICS.running}{{instance="{instance}", model_name="llama"}}', "values": f"{running}x40"},
    ]
    if v0:
        out.append({"series": f"{METRICS.spec_emitted_v0}{{{labels}}}", "values": f"0+{accepted_per_min:g}x40"})
    return out


def _expected(rule: AlertRule, instance: str, model: str = "llama") -> dict[str, object]:
    where = f"{instance} ({model})"
    return {
        "exp_labels": {
            "severity": rule.severity,
            "instance": instance,
            "model_name": model,
            **dict(rule.extra_labels),
        },
        "exp_annotations": {
            "summary": rule.summary.replace("{{ $labels.instance }} ({{ $labels.model_name }})", where),
            "description": rule.description,
        },
    }


def test_promtool_unit_tests_fire_for_unhealthy_replicas_only(tmp_path: Path, model: SlowdownModel) -> None:
    """low: acceptance 6/30 = 0.2 (AL 1.6); healthy: 24/30 = 0.8 (AL 3.4); collapsed: 1/30 (AL 1.1). All run 20
    requests: with the example scenario's perf model an AL of 1.6 is predicted to lose at that batch, 3.4 to gain.
    A replica of another model at AL 1.6 trips the acceptance alert, not the slowdown alert made for 'llama'."""
    groups = build_rule_groups(0.5, model, model_name="llama")
    (tmp_path / "rules.yml").write_text(render_rules(groups))
    alerts = {r.alert: r for g in groups for r in g.rules if isinstance(r, AlertRule)}
    slow = [
        r for g in groups for r in g.rules if isinstance(r, AlertRule) and r.alert == "SpecDecodePredictedNetSlowdown"
    ]
    first = slow[0]
    band = dict(first.extra_labels)["acceptance_length_band"]  # "[1, X)": the ALs predicted to lose at this batch
    assert band.startswith("[1, ") and 1.6 < float(band[4:-1]) <= 3.4 and "> 0 and" in first.expr
    low, collapsed = alerts["SpecDecodeLowAcceptance"], alerts["SpecDecodeAcceptanceLengthCollapse"]
    series = _replica("low:8000", 6, 20) + _replica("healthy:8000", 24, 20) + _replica("collapsed:8000", 1, 20)
    series += _replica("other:8000", 6, 20, model="other")
    series += _replica("quiet:8000", 0.6, 20, drafts=1)  # acceptance 0.2 on 5 drafts per 5 min: judges nothing
    # no drafts counter (vLLM V1 before 0.8.5): acceptance 6/30 = 0.2 on 150 draft tokens per 5 min trips the rate
    # alert; its AL is unknown, so neither AL alert fires; 0.6/3 on 15 draft tokens per 5 min judges nothing.
    series += _v0_replica("early-low:8000", 6, 20) + _v0_replica("early-quiet:8000", 0.6, 20, draft_tokens=3)
    # vLLM V0: the same "6/30" reads no acceptance (its counters add lifetime totals): no alert (review s47a F1)
    series += _v0_replica("v0-low:8000", 6, 20, v0=True)
    checks = [
        {
            "eval_time": "30m",
            "alertname": low.alert,
            "exp_alerts": [
                _expected(low, "collapsed:8000"),
                _expected(low, "low:8000"),
                _expected(low, "other:8000", "other"),
                _expected(low, "early-low:8000"),
            ],
        },
        {"eval_time": "30m", "alertname": collapsed.alert, "exp_alerts": [_expected(collapsed, "collapsed:8000")]},
        {
            "eval_time": "30m",
            "alertname": first.alert,
            "exp_alerts": [_expected(first, "collapsed:8000"), _expected(first, "low:8000")],
        },
        {"eval_time": "8m", "alertname": low.alert, "exp_alerts": []},  # not yet for 10m
    ]
    doc = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "test.yml").write_text(json.dumps(doc, indent=1))
    done = subprocess.run(
        [_promtool(), "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("min_drafts", [0, -5, float("nan"), float("inf")])
def test_a_guard_of_no_drafts_is_refused_from_the_api_too(min_drafts: float) -> None:
    # The CLI refuses --min-drafts 0 (as monitor does); a Python caller got '> 0' rules instead.
    from specwise.errors import SpecError

    with pytest.raises(SpecError, match="min_drafts"):
        build_rule_groups(0.5, min_drafts=min_drafts)


def test_the_drafts_guard_is_the_per_second_rate_of_min_drafts_per_5_minutes() -> None:
    alerts = {a.alert: a for a in build_rule_groups(0.5, min_drafts=600)[1].rules if isinstance(a, AlertRule)}
    guard = alerts["SpecDecodeLowAcceptance"].expr.split(" and ", 1)[1]
    assert re.findall(r">= (\S+?)\)? ", guard + " ") == ["2", "2"]  # drafts (V1) and draft tokens (V0) alike


def test_the_readmes_rule_count_is_the_commands(tmp_path: Path) -> None:
    """The README quotes promtool's count for ``export prometheus-rules --scenario examples/llama70b-4xh100.toml
    --k 8`` (review s59 F3: it said 21 where the command writes 22 rules); the rules counted as promtool counts them
    (every rule of every group: a ``record:`` or an ``alert:`` item), without promtool."""
    from specwise.cli import main

    readme = (ROOT / "README.md").read_text()
    command = "specwise export prometheus-rules --scenario examples/llama70b-4xh100.toml --k 8"
    assert command in readme
    quoted = re.search(r"SUCCESS: (\d+) rules found\s+# (\d+) without --scenario", readme)
    assert quoted is not None
    for argv, want in ((["--scenario", str(SCENARIO), "--k", "8"], quoted[1]), ([], quoted[2])):
        out = tmp_path / f"rules{len(argv)}.yml"
        assert main(["export", "prometheus-rules", *argv, "--out", str(out)]) == 0
        rules = re.findall(r"(?m)^\s*- (?:record|alert): ", out.read_text())
        assert len(rules) == int(want), argv


@pytest.mark.parametrize("what", ["prometheus-rules", "grafana"])
def test_export_never_overwrites_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    """Review s59: a mistyped ``export grafana --out README.md`` replaced the README without a word. A file an earlier
    export wrote is regenerated; another existing file is refused (exit 2) and left as it was; an empty one is
    written."""
    from specwise.cli import main

    out = tmp_path / "out.txt"
    assert main(["export", what, "--out", str(out)]) == 0
    first = out.read_text()
    assert main(["export", what, "--out", str(out)]) == 0 and out.read_text() == first  # regenerated
    notes = tmp_path / "README.md"
    notes.write_text("# my notes\n")
    capsys.readouterr()
    assert main(["export", what, "--out", str(notes)]) == 2
    err = capsys.readouterr().err
    assert f"--out {notes}: exists and is not a file this command wrote" in err and "\n" not in err.strip()
    assert notes.read_text() == "# my notes\n"
    other = "grafana" if what == "prometheus-rules" else "prometheus-rules"
    assert main(["export", other, "--out", str(out)]) == 2  # the other export's file is not this one's
    empty = tmp_path / "empty.yml"
    empty.write_text("")
    assert main(["export", what, "--out", str(empty)]) == 0 and empty.read_text() == first
    # a document that quotes an export (code review s59: the mark was matched anywhere) is not one
    quoting = tmp_path / "quoting.md"
    quoting.write_text("# How we alert\n\n```\n" + first + "```\n")
    assert main(["export", what, "--out", str(quoting)]) == 2
    assert quoting.read_text().startswith("# How we alert")
