"""``specwise profile`` refuses, in one line (exit 2) and before any work: an output over what it reads (a model's
files, the prompts, the chat template) or over its other output, a truncated or corrupt safetensors file, more
threads than the cores can use, and ``--verify-*`` flags without ``--verify``."""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

from specwise import api
from specwise.cli import main
from specwise.cli.profile import CHECKS
from specwise.errors import SpecwiseError
from specwise.profiler import models
from specwise.profiler.threads import THREADS_PER_CORE, available_cores, check_threads, max_threads
from tests.conftest import LLAMA_TINY, write_model_dir

QUICK = ["--prompts", "builtin:summarization", "--max-prompts", "1", "--max-new-tokens", "4"]
QUICK += ["--temperatures", "0", "--k", "1"]


def _profile(*argv: str) -> int:
    return main(["profile", *argv, *QUICK])


def _tiny_dir(tmp_path: Path) -> Path:
    """A model directory as profile sees it before loading: config.json and a well-formed safetensors file."""
    import torch
    from safetensors.torch import save_file

    model_dir = write_model_dir(tmp_path, "tiny", LLAMA_TINY)
    save_file({"a": torch.zeros(4, 8), "b": torch.ones(16)}, str(model_dir / "model.safetensors"))
    return model_dir


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "new.json"])
def test_json_inside_the_target_directory_is_refused_and_the_model_kept(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = _tiny_dir(tmp_path)
    before = {p.name: p.read_bytes() for p in model_dir.iterdir()}
    capsys.readouterr()
    assert _profile("--target", str(model_dir), "--method", "ngram", "--json", str(model_dir / name)) == 2
    err = capsys.readouterr().err
    assert f"--json {model_dir / name}: is in the --target directory {model_dir}, which this command reads" in err
    assert {p.name: p.read_bytes() for p in model_dir.iterdir()} == before


def test_plot_inside_the_draft_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target, draft = _tiny_dir(tmp_path / "t"), _tiny_dir(tmp_path / "d")
    (tmp_path / "link").symlink_to(draft)  # named through a link: still the draft's directory
    assert _profile("--target", str(target), "--draft", str(draft), "--plot", str(tmp_path / "link" / "a.png")) == 2
    assert "is in the --draft directory" in capsys.readouterr().err
    assert not (draft / "a.png").exists()


def test_outputs_over_a_gguf_the_prompts_or_the_template_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gguf, template, prompts = tmp_path / "m.gguf", tmp_path / "t.jinja", tmp_path / "p.jsonl"
    for path, text in ((gguf, "GGUF"), (template, "{{ messages }}"), (prompts, '{"prompt": "hi"}\n')):
        path.write_text(text)
    base = ["profile", "--target", str(gguf), "--method", "ngram", "--max-new-tokens", "4", "--k", "1"]
    cases = [
        (["--prompts", "builtin:qa", "--json", str(gguf)], "is the --target file"),
        (["--prompts", str(prompts), "--json", str(prompts)], "is the --prompts file"),
        (["--prompts", f"hf:{tmp_path}", "--json", str(tmp_path / "out.json")], "is in the --prompts directory"),
        (["--prompts", "builtin:qa", "--chat-template", str(template), "--json", str(template)], "--chat-template"),
    ]
    for extra, said in cases:
        capsys.readouterr()
        assert main([*base, *extra]) == 2, extra
        assert said in capsys.readouterr().err, extra
    assert gguf.read_text() == "GGUF" and prompts.read_text() == '{"prompt": "hi"}\n'
    assert template.read_text() == "{{ messages }}"


def test_json_and_plot_naming_one_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.png"
    assert _profile("--target", str(tmp_path / "m"), "--method", "ngram", "--json", str(out), "--plot", str(out)) == 2
    assert f"--json and --plot both name {out}" in capsys.readouterr().err


def _cut(model_dir: Path, keep_bytes: int) -> Path:
    f = model_dir / "model.safetensors"
    f.write_bytes(f.read_bytes()[:keep_bytes])
    return f


@pytest.mark.parametrize("where", ["in-the-header", "after-the-header", "in-the-data"])
def test_a_truncated_safetensors_file_is_exit_2(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tiny_dir(tmp_path)
    raw = (model_dir / "model.safetensors").read_bytes()
    header = int.from_bytes(raw[:8], "little")
    keep = {"in-the-header": 8 + header // 2, "after-the-header": 8 + header, "in-the-data": len(raw) - 8}[where]
    f = _cut(model_dir, keep)
    with pytest.raises(SpecwiseError, match=rf"^{f}: truncated or corrupt \(.*\); download it again$"):
        models.resolve(str(model_dir))
    capsys.readouterr()
    assert _profile("--target", str(model_dir), "--method", "ngram") == 2
    assert f"{f}: truncated or corrupt" in capsys.readouterr().err


def test_trailing_bytes_and_a_bad_header_are_corrupt(tmp_path: Path) -> None:
    model_dir = _tiny_dir(tmp_path)
    f = model_dir / "model.safetensors"
    good = f.read_bytes()
    f.write_bytes(good + b"\0")  # the loader refuses it too ("file not fully covered")
    with pytest.raises(SpecwiseError, match=r"header says 192 bytes of tensor data, the file holds 193"):
        models.resolve(str(model_dir))
    header = json.dumps([1, 2]).encode()
    f.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(SpecwiseError, match=r"truncated or corrupt \(unreadable header"):
        models.resolve(str(model_dir))


def test_the_loader_s_own_safetensors_error_is_one_line(other_vocab_dir: Path, tmp_path: Path) -> None:
    model_dir = Path(shutil.copytree(other_vocab_dir, tmp_path / "m"))
    _cut(model_dir, (model_dir / "model.safetensors").stat().st_size - 4)
    values = {f.name: 0 for f in fields(models.ModelFiles)}
    files = models.ModelFiles(**{**values, "path": model_dir, "source": str(model_dir)})  # type: ignore[arg-type]
    with pytest.raises(SpecwiseError, match=r"a safetensors file is truncated or corrupt \(.*\); download it again"):
        models.load(files)  # past resolve()'s check: what the loader itself finds wrong


def test_threads_are_bounded_by_the_cores(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_threads(8, cores=2) == 8 == max_threads(2) == 2 * THREADS_PER_CORE
    with pytest.raises(SpecwiseError, match=r"expected 1 to 8 threads \(4 x the 2 cores .*\), got 9"):
        check_threads(9, cores=2)
    over = str(max_threads() + 1)
    with pytest.raises(argparse.ArgumentTypeError, match=f"got {over}"):
        CHECKS["threads"](over)
    with pytest.raises(SpecwiseError, match=rf"^threads: expected 1 to {max_threads()} threads"):
        api.profile("x", method="ngram", threads=100_000)
    assert _profile("--target", "x", "--method", "ngram", "--threads", over) == 2
    err = capsys.readouterr().err
    assert f"the {available_cores()} cores this process may run on" in err and f"got {over}" in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--verify-k", "9"], "--verify-k needs --verify"),
        (["--verify", "--verify-k", "99"], "argument --verify-k: expected an integer in 1..16, got '99'"),  # as --k
        (["--verify-paths", "3", "--verify-temperatures", "0"], "--verify-temperatures, --verify-paths need --verify"),
        (["--verify-temperatures", "abc"], "argument --verify-temperatures: 'abc': expected numbers"),
        (["--verify", "--verify-temperatures", "-1"], "argument --verify-temperatures: -1.0 is not allowed"),
    ],
)
def test_verify_flags_without_verify_or_bad_are_refused(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _profile("--target", "x", "--method", "ngram", *flags) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--draft", "d", "--prompt-lookup-min", "2"], "--prompt-lookup-min needs --method ngram (method draft_model"),
        (
            ["--draft", "d", "--prompt-lookup-min", "2", "--prompt-lookup-max", "3"],
            "--prompt-lookup-min, --prompt-lookup-max need --method ngram",
        ),
        (["--method", "suffix", "--prompt-lookup-max", "3"], "--prompt-lookup-max needs --method ngram (method suffix"),
    ],
)
def test_prompt_lookup_flags_without_ngram_are_refused(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: accepted and silently ignored (a draft model and suffix decoding have no n-gram lookup)."""
    assert _profile("--target", "x", *flags) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--max-new-tokens", "1"], "--max-new-tokens: must be >= 2 (a token to draft after, one to verify), got 1"),
        (
            ["--prompt-lookup-min", "6", "--prompt-lookup-max", "3"],
            "--prompt-lookup-min 6 is above --prompt-lookup-max 3",
        ),
    ],
)
def test_settings_errors_name_the_flag(flags: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """They named the setting (max_new_tokens, prompt_lookup_min=6 ...), where every other error names the flag."""
    assert main(["profile", "--target", "x", "--method", "ngram", "--prompts", "builtin:qa", *flags]) == 2
    assert said in capsys.readouterr().err


def test_an_unwritable_output_names_its_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """With --json and --plot both given, "/sys: not writable" did not say which of the two it was."""
    assert _profile("--target", "x", "--method", "ngram", "--json", "/sys/out.json") == 2
    assert "--json /sys/out.json: /sys: not writable" in capsys.readouterr().err
