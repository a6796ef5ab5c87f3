"""The command line as a user meets it: contracts, tables, and one clear line for every mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specwise.cli import main
from tests.conftest import LLAMA_TINY, write_model_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_memory_json_contract_70b_tp4(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "plan-memory",
        "--target",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--gpu",
        "H100-SXM-80GB",
        "--tp",
        "4",
        "--json",
    )
    assert code == 0
    d = json.loads(out)
    assert d["fits"] is True
    assert abs(d["target"]["weight_bytes"] / 141.1e9 - 1) < 0.01
    assert d["target"]["kv_bytes_per_token"] == 327_680
    assert d["draft"] is None
    assert {
        "target",
        "draft",
        "gpu",
        "fits",
        "kv_cache_tokens",
        "kv_cache_tokens_without_draft",
        "max_concurrent_seqs",
    } <= set(d)


def test_plan_memory_tp1_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "plan-memory",
        "--target",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--gpu",
        "H100-SXM-80GB",
        "--tp",
        "1",
        "--json",
    )
    assert code == 1
    d = json.loads(out)
    assert d["fits"] is False
    assert "misses by" in d["problems"][0] and "GiB" in d["problems"][0]
    code, out, _ = run(
        capsys, "plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100-SXM-80GB", "--tp", "1"
    )
    assert code == 1 and "does not fit" in out and "misses by" in out


def test_plan_memory_qwen3_pair_kv_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "plan-memory", "--target", "Qwen/Qwen3-8B", "--draft", "Qwen/Qwen3-0.6B", "--gpu", "H100", "--json"
    )
    d = json.loads(out)
    both = d["target"]["kv_bytes_per_token"] + d["draft"]["kv_bytes_per_token"]
    assert abs(both / d["target"]["kv_bytes_per_token"] - 1.78) <= 0.02
    assert d["kv_cache_tokens"] < d["kv_cache_tokens_without_draft"]
    assert d["compatibility"]["compatible"] is True
    assert code == 0


def test_plan_memory_table_with_draft(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "plan-memory",
        "--target",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--draft",
        "meta-llama/Llama-3.2-1B-Instruct",
        "--gpu",
        "H100",
        "--tp",
        "4",
        "--max-model-len",
        "8192",
    )
    assert code == 0
    assert "with draft" in out and "without draft" in out and "fits" in out and "size_ratio" in out


def test_plan_memory_ngram_and_quantized(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "plan-memory",
        "--target",
        "Qwen/Qwen2.5-72B-Instruct",
        "--draft",
        "ngram",
        "--gpu",
        "A100-80GB",
        "--tp",
        "2",
        "--quantization",
        "int4",
        "--kv-cache-dtype",
        "fp8",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and d["draft"] is None and d["draft_method"] == "ngram" and d["kv_cache_dtype"] == "fp8"
    assert d["target"]["quantization"] == "int4"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instrct", "--gpu", "H100"],
            "did you mean meta-llama/Llama-3.1-70B-Instruct",
        ),
        (["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H1000"], "unknown GPU 'H1000'"),
        (
            ["plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp", "3"],
            "64 attention heads",
        ),
        (["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "-1"], "expected a positive integer"),
        (
            ["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpu-memory-utilization", "-0.5"],
            "expected a number in (0, 1]",
        ),
        (
            ["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "0"],
            "expected a positive integer",
        ),
        (
            ["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--reserve-gib", "-2"],
            "expected a number >= 0",
        ),
        (["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--quantization", "int3"], "invalid choice"),
        (["plan-memory", "--gpu", "H100"], "the following arguments are required: --target"),
        (["plan-memory", "--target", "./missing-model-dir", "--gpu", "H100"], "no such file or directory"),
        (["plan-memory", "--target", "", "--gpu", "H100"], "argument --target: expected a non-empty value"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_gives_one_clear_line(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0]
    assert "Traceback" not in err


LLAMA_1B = "meta-llama/Llama-3.2-1B-Instruct"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["plan-memory", "--target", "Qwen/Qwen2.5-7B-Instruct", "--draft", LLAMA_1B, "--gpu", "H100"],
            "different vocabularies",
        ),
        (["plan-memory", "--target", "Qwen/Qwen3-8B", "--draft", "mtp", "--gpu", "H100"], "no MTP layers"),
    ],
)
def test_an_incompatible_pair_is_a_no(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    """The same answer as check-pair's for the pair (exit 1, "the answer is no"), in one line: a first-hour review
    found check-pair exiting 1 and plan-memory 2 for the same pair."""
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("specwise plan-memory: no: draft ") and fragment in line
    assert main(["check-pair", "--target", argv[2], "--draft", argv[4]]) == 1
    capsys.readouterr()
    assert main([*argv, "--json"]) == 1  # --json: the answer as a document as well
    doc = json.loads(capsys.readouterr().out)
    assert doc["compatible"] is False and doc["fits"] is False and fragment in doc["why"]


def test_bad_files_give_one_clear_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad_json = write_model_dir(tmp_path, "bad", '{"hidden_size": 4096,')
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("hello, I am not a GGUF file")
    other_vocab = write_model_dir(tmp_path, "other", {**LLAMA_TINY, "vocab_size": 32000})
    cases = [
        (["inspect", str(bad_json)], "malformed JSON"),
        (["inspect", str(not_gguf)], "not a GGUF file"),
        (
            ["check-pair", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--draft", str(other_vocab)],
            None,
        ),  # exit 1, a report, not an error
        (
            [
                "plan-memory",
                "--target",
                "meta-llama/Llama-3.1-8B-Instruct",
                "--draft",
                str(other_vocab),
                "--gpu",
                "H100",
            ],
            "different vocabularies: target meta-llama/Llama-3.1-8B-Instruct has 128256 token ids",
        ),
    ]
    for argv, fragment in cases:
        code, out, err = run(capsys, *argv)
        if fragment is None:
            assert code == 1 and "not compatible" in out
            continue
        assert code == (1 if argv[0] == "plan-memory" else 2), argv  # an incompatible pair is a "no", as check-pair's
        assert len(err.strip().splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_inspect_catalog_and_local(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "inspect", "deepseek-ai/DeepSeek-V3", "--json")
    d = json.loads(out)
    assert code == 0 and d["attention"] == "mla" and d["kv_bytes_per_token"] == 70272 and d["mtp_layers"] == 1
    code, out, _ = run(capsys, "inspect", "openai/gpt-oss-120b")
    assert code == 0 and "sliding window" in out and "experts" in out
    code, out, _ = run(capsys, "inspect", str(write_model_dir(tmp_path, "tiny", LLAMA_TINY)), "--json")
    assert code == 0 and json.loads(out)["layers"] == 2


def test_catalog_listings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 30
    code, out, _ = run(capsys, "models", "qwen3", "--role", "draft", "--json")
    assert {r["id"] for r in json.loads(out)} >= {"Qwen/Qwen3-0.6B"}
    code, out, _ = run(capsys, "gpus", "--json")
    names = {g["name"] for g in json.loads(out)}
    assert {
        "H100-SXM-80GB",
        "H100-PCIe-80GB",
        "H200-SXM-141GB",
        "B200-SXM-180GB",
        "A100-SXM-80GB",
        "A100-SXM-40GB",
        "L4",
        "L40S",
        "A10G",
        "RTX-4090",
        "MI300X",
    } <= names
    assert all(g["source"] for g in json.loads(out))
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "MI300X" in out
    assert all(unit in out for unit in ("GiB", "TB/s", "TFLOP/s", "TOP/s", "GB/s"))  # every figure's unit (review D)


def test_check_pair_refuses_a_context_the_target_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "check-pair", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--draft",
        "meta-llama/Llama-3.2-1B-Instruct", "--max-model-len", "99999999",
    )  # fmt: skip
    assert code == 2 and "exceeds meta-llama/Llama-3.1-8B-Instruct's max_position_embeddings (131072)" in err


def test_check_pair_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "check-pair", "--target", "Qwen/Qwen2.5-7B-Instruct", "--draft", "Qwen/Qwen2.5-0.5B-Instruct"
    )
    assert code == 1 and "not compatible" in out and "padding" in out


def test_console_script_entry_point(tmp_path: Path) -> None:
    """The installed ``specwise`` script, as a user runs it: errors are one line, never a traceback."""
    exe = Path(sys.executable).with_name("specwise")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    env = {**os.environ, "COLUMNS": "100"}
    ok = subprocess.run(
        [str(exe), "plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["fits"] is True
    bad = subprocess.run(
        [str(exe), "plan-memory", "--target", "nope/nope", "--gpu", "H100"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_python_dash_m_specwise_is_the_cli() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "specwise", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("specwise ")


def test_options_with_nothing_to_act_on_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # review 5: accepted and ignored before ("refused, not ignored")
    code, _, err = run(
        capsys, "plan-memory", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--draft", "ngram",
        "--draft-tp", "1",
    )  # fmt: skip
    assert code == 2 and "--draft-tp: --draft ngram has no weights to place or quantize" in err
    code, _, err = run(capsys, "plan-memory", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100",
                       "--draft-quantization", "int4")  # fmt: skip
    assert code == 2 and "no --draft given" in err
    code, _, err = run(capsys, "examples", "--force")
    assert code == 2 and "give --copy DIR" in err


def test_speedup_refuses_a_k_past_what_specwise_models(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "speedup", "--alpha", "0.7", "--k", "100000000", "--cost-ratio", "0.1")
    assert code == 2 and "up to 16 draft tokens" in err  # before: "speedup 0.000x"


def test_models_json_names_each_entrys_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and all("source" in r for r in rows) and sum(bool(r["source"]) for r in rows) >= 40


def test_an_input_error_is_said_before_an_incompatible_pairs_no(capsys: pytest.CaptureFixture[str]) -> None:
    """A draft of another vocabulary at a draft TP vLLM refuses: the input error (exit 2), then, fixed, the no."""
    argv = ["plan-memory", "--target", "Qwen/Qwen3-8B", "--draft", LLAMA_1B, "--gpu", "H100"]
    assert main([*argv, "--draft-tp", "2"]) == 2
    assert "--draft-tp 2, but vLLM V1 runs a draft model only at the target's tensor parallelism" in (
        capsys.readouterr().err
    )
    assert main(argv) == 1
