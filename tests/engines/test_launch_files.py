"""advise's measure-first launch file is written for the scenario's engine (review 2: an SGLang scenario got a vLLM
launch file, with vLLM's config keys) and loads with ``specwise bench --launch``'s own reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.engines import get_engine
from specwise.engines.base import Deployment, Speculation, launch_toml
from specwise.loadgen.launcher import load_launch_file
from specwise.methods import get_method

D = Deployment("meta-llama/Llama-3.1-8B-Instruct", tp=2, max_model_len=4096, max_num_seqs=64)
EAGLE3 = Speculation(get_method("eagle3"), 3, draft="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", target_tp=2)


@pytest.mark.parametrize(
    ("engine", "flag", "spec_key"),
    [("vllm", "--tensor-parallel-size", "method"), ("sglang", "--tp-size", "speculative_algorithm")],
)
def test_the_launch_file_is_the_engines_and_loads(engine: str, flag: str, spec_key: str, tmp_path: Path) -> None:
    path = tmp_path / "measure.toml"
    path.write_text(launch_toml(get_engine(engine), D, "eagle3-k3", EAGLE3))
    launch = load_launch_file(path)
    assert launch.engine == engine
    assert flag in launch.extra_args and "2" in launch.extra_args
    baseline, spec = launch.configs
    assert baseline.speculative_config is None and spec.speculative_config is not None
    assert spec_key in spec.speculative_config


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_python_it_names_is_the_one_on_path(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """advise writes ``python = "python"``: bench --launch runs the one on $PATH, as the comment beside it says
    (before, it looked for ./python in the working directory and refused with "run 'make vllm' first")."""
    from specwise.loadgen.launcher import missing_program

    exe = tmp_path / "bin" / "python"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(exe.parent))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "measure.toml"
    path.write_text(launch_toml(get_engine(engine), D, "eagle3-k3", EAGLE3))
    assert 'python = "python"  # ' in path.read_text() and "a name on PATH, or a path" in path.read_text()
    launch = load_launch_file(path)
    assert launch.python == str(exe) and missing_program(launch.python, engine) is None
