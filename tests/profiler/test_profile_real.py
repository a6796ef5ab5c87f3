"""The profiler on real weights (SmolLM2-135M): exact self-pair results, agreement with the real speculative
sampling loop, and the errors a new user runs into."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from specwise.cli import main
from specwise.contracts.profile import ProfileResult
from specwise.profiler import models
from specwise.profiler.forward import continuation_logits
from specwise.profiler.runner import Prompt, Timings, load_pair, run_profile
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.verify import verify

PROMPTS = [
    Prompt("def fibonacci(n):\n    ", "code"),
    Prompt("The capital of France is", "qa"),
    Prompt("Once upon a time, in a small village,", "chat"),
    Prompt("import numpy as np\n\ndef mean(xs):\n", "code"),
    Prompt("Translate to French: good morning ->", "translation"),
    Prompt("List three colours: red,", "qa"),
]


def _json(results: Sequence[ProfileResult]) -> list[dict]:
    """The results as the profile JSON has them (what these assertions were written against)."""
    return [r.to_json() for r in results]


def _overall(results: Sequence[ProfileResult], temperature: float, drafting: str) -> dict:
    return next(
        r
        for r in _json(results)
        if r["temperature"] == temperature
        and r["drafting"] == drafting
        and r["class"] is None
        and not r["quantization"]
    )


def test_self_pair_accepts_everything(smollm2_dir: Path) -> None:
    s = ProfileSettings(temperatures=(0.0, 0.7, 1.0), k_values=(1, 4), max_new_tokens=16, batch_size=3)
    loaded = load_pair(str(smollm2_dir), str(smollm2_dir), s, 3, Timings())
    results, conts, ids = run_profile(loaded, PROMPTS[:3], s)
    for t in (0.0, 0.7, 1.0):
        r = _overall(results, t, "probabilistic")
        assert r["alpha_mean"] == pytest.approx(1.0, abs=1e-5)
        assert [b["acceptance_rate"] for b in r["by_k"]] == pytest.approx([1.0, 1.0], abs=1e-5)
        assert r["by_k"][1]["mean_acceptance_length"] == pytest.approx(5.0, abs=1e-4)
        assert r["by_k"][1]["num_drafts"] == pytest.approx(r["by_k"][1]["num_steps"])  # a draft model: every step
    assert _overall(results, 0.0, "greedy")["alpha_mean"] == pytest.approx(1.0)
    # greedy drafting at T > 0 accepts with p(argmax p): alpha = E[max_x p(x)] along the sampled continuation,
    # over the positions a step verifies (1 to 15: output token 0 is the prefill's)
    expected = []
    for i, p_ids in enumerate(ids):
        logits = continuation_logits(loaded.target, p_ids, conts[1.0][i])[1:16]
        expected.append(torch.softmax(logits, -1).max(-1).values.double().numpy())
    alpha = _overall(results, 1.0, "greedy")["alpha_mean"]
    assert alpha == pytest.approx(float(np.concatenate(expected).mean()), abs=1e-5)
    assert alpha < 0.95


@pytest.mark.slow  # batch-1 decoding loops: ~1-2 min on 2 cores; runs in make test's slow tier
def test_profile_agrees_with_real_speculative_sampling(smollm2_dir: Path, smollm2_draft24: Path) -> None:
    s = ProfileSettings(temperatures=(0.0, 1.0), k_values=(1, 2, 3), max_new_tokens=24, batch_size=6, seed=1)
    loaded = load_pair(str(smollm2_dir), str(smollm2_draft24), s, len(PROMPTS), Timings())
    results, _, ids = run_profile(loaded, PROMPTS, s)
    rate = _overall(results, 0.0, "greedy")["by_k"][2]["acceptance_rate"]
    assert 0.05 < rate < 0.95  # a draft that is neither useless nor perfect: the check means something
    checks = [c.to_json() for c in verify(loaded.target, loaded.draft, ids, results, s, (0.0, 1.0), 3)]
    assert len(checks) == 4
    for c in checks:
        assert c["agrees"], c
        # paired: the estimator on the loop's own paths; only the coins' noise remains (none at T = 0, up to the
        # last step's proposal being cut at the path's end)
        lo, hi = c["measured_ci95"]
        assert abs(c["paired_difference"]) <= 0.03 or lo <= c["paired_predicted_acceptance_rate"] <= hi
        if c["temperature"] == 0.0:  # deterministic: the loop walks the same greedy path
            assert c["difference"] == pytest.approx(0.0, abs=0.03)
            assert c["paired_difference"] == pytest.approx(0.0, abs=0.02)
        assert c["measured_speedup"] > 0


def test_quantisation_what_if_changes_acceptance(smollm2_dir: Path) -> None:
    s = ProfileSettings(
        temperatures=(1.0,), k_values=(2,), max_new_tokens=12, batch_size=2, quantizations=({"draft": "int4"},)
    )
    loaded = load_pair(str(smollm2_dir), str(smollm2_dir), s, 2, Timings())
    typed, _, _ = run_profile(loaded, PROMPTS[:2], s)
    results = _json(typed)
    base = next(r for r in results if r["class"] is None and not r["quantization"] and r["drafting"] == "probabilistic")
    q = next(r for r in results if r["class"] is None and r["quantization"] and r["drafting"] == "probabilistic")
    assert q["quantization"] == {"draft": "int4"}
    assert base["alpha_mean"] == pytest.approx(1.0, abs=1e-5)
    assert 0.5 < q["alpha_mean"] < 0.999  # an INT4 copy of itself is no longer a perfect draft


@pytest.mark.slow  # an n-gram profile at two temperatures on real weights: ~1 min in CI; make test's slow tier
def test_cli_writes_contract_json_and_plot(
    smollm2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": p.text, "class": p.workload_class}) for p in PROMPTS[:2]))
    out, plot = tmp_path / "profile.json", tmp_path / "acc.png"
    code = main(
        [
            "profile",
            "--target",
            str(smollm2_dir),
            "--method",
            "ngram",
            "--prompts",
            str(prompts),
            "--temperatures",
            "0,1",
            "--k",
            "1-3",
            "--max-new-tokens",
            "12",
            "--prompt-lookup-min",
            "1",
            "--prompt-lookup-max",
            "3",
            "--json",
            str(out),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["method"] == "ngram" and doc["target"] == str(smollm2_dir) and doc["draft"] is None
    r = doc["results"][0]
    assert set(r) >= {
        "temperature",
        "drafting",
        "quantization",
        "class",
        "alpha_mean",
        "per_position_acceptance",
        "by_k",
    }
    assert {b["k"] for b in r["by_k"]} == {1, 2, 3}
    assert set(r["by_k"][0]) >= {"k", "acceptance_rate", "mean_acceptance_length", "ci95", "num_steps"}
    assert all(0 <= b["num_drafts"] <= b["num_steps"] and b["num_steps"] > 0 for b in r["by_k"])  # n-gram: on a match
    assert {x["class"] for x in doc["results"]} == {None, "code", "qa"}
    assert plot.stat().st_size > 1000
    shown = capsys.readouterr().out
    assert "acceptance rate" in shown and f"wrote {out}\nwrote {plot}\n" in shown


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a bad input gets. A stage still running after the quiet period is announced on stderr
    (cli/common.stage_progress: "[   2.1 s] loading weights (...)"), as on a machine busy enough to take that long
    (CI, 2026-12-07): such lines are progress, not part of the error, and are left out of the count."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    err = "\n".join(line for line in lines if not re.match(r"\[\s*\d+\.\d s\] ", line))
    assert len(err.splitlines()) == 1 and "Traceback" not in err, lines
    return err


def test_bad_inputs_give_one_clear_line(
    smollm2_dir: Path,
    other_vocab_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    base = ["profile", "--target", str(smollm2_dir), "--prompts", "builtin:qa", "--max-prompts", "1"]
    err = _error([*base, "--draft", str(other_vocab_dir)], capsys)
    assert "vocabularies differ" in err and "49,152" in err and "1,000" in err
    assert "no such model" in _error([*base, "--draft", str(tmp_path / "missing")], capsys)
    assert "no prompts" in _error(
        ["profile", "--target", str(smollm2_dir), "--method", "ngram", "--prompts", str(empty)], capsys
    )
    assert ">= 0" in _error([*base, "--method", "ngram", "--temperatures", "0,-1"], capsys)
    assert "k = 0" in _error([*base, "--method", "ngram", "--k", "0"], capsys)
    assert "expected a .png or .svg" in _error([*base, "--method", "ngram", "--plot", str(tmp_path / "a.pdf")], capsys)
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text(json.dumps({"vocab_size": 10, "num_hidden_layers": 1, "hidden_size": 8}))
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04")
    assert "never loaded" in _error([*base, "--draft", str(pickled)], capsys)
    monkeypatch.setattr(models, "available_memory_bytes", lambda: 512 * 2**20)
    err = _error([*base, "--draft", str(smollm2_dir)], capsys)
    assert "GiB" in err and "exceeds" in err


@pytest.mark.slow  # a draft-model profile on real weights: ~1.5 min in CI; make test's slow tier
def test_ctrl_c_keeps_the_temperatures_profiled_in_full(
    smollm2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specwise.profiler import runner

    real = runner._VariantRun._observe

    def observe(self: runner._VariantRun, *args: object) -> object:  # Ctrl-C at T=1's first prompt
        if args[3] == 1.0:
            raise KeyboardInterrupt
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(runner._VariantRun, "_observe", observe)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": p.text}) for p in PROMPTS[:2]))
    out = tmp_path / "profile.json"
    argv = ["profile", "--target", str(smollm2_dir), "--draft", str(smollm2_dir), "--prompts", str(prompts)]
    argv += ["--temperatures", "0,0.5,1", "--k", "2", "--max-new-tokens", "6", "--json", str(out)]
    assert main(argv) == 130
    doc = json.loads(out.read_text())
    assert doc["settings"]["interrupted"] is True and doc["settings"]["temperatures_completed"] == [0.0, 0.5]
    assert {r["temperature"] for r in doc["results"]} == {0.0, 0.5}
    assert f"results for the temperatures profiled in full (T=0, 0.5); wrote them to {out}" in capsys.readouterr().err
