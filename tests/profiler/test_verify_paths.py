"""verify(paths_per_prompt=N): N loop runs per prompt at T > 0 with distinct seeds, counters summed per prompt;
T = 0 stays one run (deterministic). Tiny random Qwen2 models, so it runs in the fast tier."""

from __future__ import annotations

import pytest

from specwise.contracts.profile import ProfileDoc
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.verify import verify
from specwise.report.profile import render_profile
from tests.profiler.tiny_qwen2 import tiny_qwen2


def test_several_loop_paths_per_prompt_are_summed_per_prompt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target, draft = tiny_qwen2(0, 2, 64), tiny_qwen2(1, 1, 64)
    s = ProfileSettings(temperatures=(0.0, 1.0), k_values=(3,), max_new_tokens=10)
    prompts = [[1, 2, 3], [4, 5, 6, 7]]
    one_rows = verify(target, draft, prompts, [], s, (0.0, 1.0), 3, measure_speedup=False)
    three_rows = verify(target, draft, prompts, [], s, (0.0, 1.0), 3, measure_speedup=False, paths_per_prompt=3)
    one, three = [r.to_json() for r in one_rows], [r.to_json() for r in three_rows]
    assert len(one) == len(three) == 4  # 2 temperatures x 2 drafting modes
    one = [r for r in one if r["drafting"] == "probabilistic"]
    three = [r for r in three if r["drafting"] == "probabilistic"]
    by = {(r["temperature"], r["paths_per_prompt"]): r for r in one + three}
    assert set(by) == {(0.0, 1), (1.0, 1), (1.0, 3)}
    # T = 0: deterministic, one path whatever was asked, identical rows (bar the wall clock)
    t0 = next(r for r in three if r["temperature"] == 0.0)
    drop = ("speculative_wall_s", "autoregressive_wall_s")
    assert {k: v for k, v in t0.items() if k not in drop} == {k: v for k, v in by[(0.0, 1)].items() if k not in drop}
    # T = 1: the first path keeps its seed (same as a one-path run); two more paths add their tokens
    assert by[(1.0, 3)]["tokens"] > 2 * by[(1.0, 1)]["tokens"] - 10
    assert by[(1.0, 3)]["measured_acceptance_rate"] != by[(1.0, 1)]["measured_acceptance_rate"]
    assert by[(1.0, 3)]["predicted_acceptance_rate"] is None  # no profile given
    # the table says how many loop paths stand behind each row
    monkeypatch.setenv("COLUMNS", "250")
    probabilistic = tuple(r for r in three_rows if r.drafting == "probabilistic")
    render_profile(ProfileDoc("t", "d", "draft_model", (), verification=probabilistic))
    out = capsys.readouterr().out
    assert "paths" in out and "--verify-paths" in out
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if "probabilistic" in line]
    assert {(r[0], r[3]) for r in rows} == {("0", "1"), ("1", "3")}, rows  # (T, loop paths per prompt)
