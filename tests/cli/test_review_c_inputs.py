"""Review C: an empty path flag is refused (3), --dtype lists what it takes (7), a reserve above the GPU is bad input
(8), the API names its arguments in warnings (9a), an example is named as given (9b), calibrate checks its inputs
before --out (9c), a load given twice is said (9d)."""

from __future__ import annotations

from pathlib import Path

import pytest

import specwise
from specwise.api import _scenario
from specwise.cli import build_parser, main
from specwise.cli.common import path_arg, path_text, scenario_file
from specwise.errors import SpecwiseError
from specwise.examples import root
from specwise.memory.planner import DTYPE_CHOICES
from specwise.scenario.toml_loader import load_scenario
from tests.cli.parsers import walk

LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"
VLLM_RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve"
PATH_TYPES = (path_arg, path_text, scenario_file)


def _path_flags() -> list[tuple[tuple[str, ...], str]]:
    """Every (command, flag) whose argparse type is a path type; a positional as its metavar."""
    found = []
    for argv, parser in walk(build_parser()):
        for action in parser._actions:
            if action.type in PATH_TYPES:
                found.append((argv, action.option_strings[0] if action.option_strings else str(action.metavar)))
    return found


def test_no_flag_takes_a_bare_path() -> None:
    """One shared type for every file or directory flag: ``type=Path`` read "" as ".", the current directory."""
    bare = [
        (" ".join(argv), action.dest)
        for argv, parser in walk(build_parser())
        for action in parser._actions
        if action.type is Path
    ]
    assert bare == []
    flags = {(" ".join(argv), flag) for argv, flag in _path_flags()}
    assert {
        ("simulate", "--plot"),
        ("simulate", "--scenario"),
        ("simulate", "--calibration"),
        ("calibrate", "--out"),
        ("calibrate", "RESULT.json"),
        ("bench", "--db"),
        ("bench", "--export-jsonl"),
        ("bench", "--output"),
        ("bench", "--launch"),
        ("bench", "--calibration-out"),
        ("bench", "--prompts"),
        ("advise", "--report"),
        ("advise", "--write-launch"),
        ("advise", "--profile"),
        ("advise", "--bench"),
        ("monitor", "--db"),
        ("examples", "--copy"),
        ("export prometheus-rules", "--scenario"),
        ("export prometheus-rules", "--out"),
        ("export grafana", "--out"),
        ("profile", "--json"),
        ("profile", "--plot"),
        ("profile", "--target"),
        ("prompts", "FILE|hf:PATH|builtin:NAME"),
        ("prompts", "--tokenizer"),
    } <= flags


@pytest.mark.parametrize(("argv", "flag"), _path_flags(), ids=lambda x: " ".join(x) if isinstance(x, tuple) else x)
def test_an_empty_path_is_refused(
    argv: tuple[str, ...],
    flag: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    given = [""] if flag.isupper() or not flag.startswith("-") else [flag, ""]
    assert main([*argv, *given]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: empty path" in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_simulate_plot_empty_writes_nothing_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's case: ``--plot "$UNSET"`` wrote four plots into the current directory, exit 0."""
    monkeypatch.chdir(tmp_path)
    code = main(["simulate", "--scenario", "example:llama70b-ngram", "--num-requests", "30", "--plot", ""])
    assert code == 2 and "argument --plot: empty path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _plan(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = main(["plan-memory", "--target", LLAMA70, "--gpu", "H100", "--tp", "4", *flags])
    return code, capsys.readouterr().err


def test_dtype_error_lists_exactly_what_dtype_takes(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _plan(capsys, "--dtype", "foo")
    assert code == 2 and "argument --dtype: 'foo' is not a model dtype; expected one of " in err
    listed = err.split("expected one of ")[1].split(" (see")[0].split(", ")
    assert listed == list(DTYPE_CHOICES) and "fp8" not in listed
    for name in ("auto", "bfloat16", "float16", "float32", "half", "bf16"):
        assert name in listed
    for name in listed:  # each one listed is taken
        assert _plan(capsys, "--dtype", name, "--json")[0] in (0, 1), name
    code, err = _plan(capsys, "--dtype", "fp8")
    assert code == 2 and "argument --dtype: 'fp8' is not a model dtype" in err and "--quantization fp8" in err


def test_dtype_error_of_the_api_names_its_arguments() -> None:
    with pytest.raises(SpecwiseError, match=r"^dtype: 'fp8' is not a model dtype; .*quantization='fp8'") as exc:
        specwise.plan_memory(LLAMA70, "H100", tp=4, dtype="fp8")
    assert "--" not in str(exc.value)


def test_a_reserve_above_the_gpu_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _plan(capsys, "--reserve-gib", "1e30")
    assert code == 2 and "--reserve-gib 1e+30 exceeds the GPU's 79.65 GiB" in err, err
    code, err = _plan(capsys, "--reserve-gib", "1e300")  # GiB to bytes overflows a float: still bad input
    assert code == 2 and "exceeds the GPU's 79.65 GiB" in err, err
    assert _plan(capsys, "--reserve-gib", "75")[0] == 1  # within the GPU but past what is usable: "does not fit"
    with pytest.raises(SpecwiseError, match=r"reserve_bytes=100000000000000000000 exceeds the GPU's 79.65 GiB"):
        specwise.plan_memory(LLAMA70, "H100", tp=4, reserve_bytes=10**20)


def test_api_warnings_and_calibration_advice_name_arguments() -> None:
    warnings = _scenario("example:llama70b-ngram", 60, None, None).warnings
    assert [w.split(":")[0] for w in warnings if "so few requests" in w] == ["num_requests=60"]
    path = VLLM_RESULTS / "baseline-and-ngram-on-mock-detailed.json"
    with pytest.raises(SpecwiseError, match=r"then pass calibration='cal\.json'$") as exc:
        specwise.simulate("example:llama70b-ngram", num_requests=100, calibration=path)
    assert "--calibration" not in str(exc.value)
    with pytest.raises(SpecwiseError, match=r"then pass calibration='cal\.json'$"):
        specwise.simulate("example:llama70b-ngram", num_requests=100, calibration=VLLM_RESULTS / "eagle3-on-mock.json")


def test_the_cli_still_names_its_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = VLLM_RESULTS / "baseline-and-ngram-on-mock-detailed.json"
    argv = ["simulate", "--scenario", "example:llama70b-ngram", "--num-requests", "100", "--calibration", str(path)]
    assert main(argv) == 2
    assert capsys.readouterr().err.rstrip().endswith("then pass --calibration cal.json")


def test_an_example_is_named_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecwiseError, match=r"^example:advise/summarize-low-qps: unknown top-level key") as exc:
        specwise.simulate("example:advise/summarize-low-qps", num_requests=100)
    assert "examples_data" not in str(exc.value)
    with pytest.raises(SpecwiseError, match=r"^example:llama70b-4xh100: unknown top-level key"):
        specwise.advise("example:llama70b-4xh100")
    assert main(["advise", "--scenario", "example:llama70b-4xh100"]) == 2
    err = capsys.readouterr().err
    assert "error: example:llama70b-4xh100: unknown top-level key" in err and "examples_data" not in err


def test_a_scenario_path_is_still_named_as_given(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text((Path(str(root())) / "advise" / "summarize-low-qps.toml").read_text())
    with pytest.raises(SpecwiseError, match=f"^{path}: unknown top-level key"):
        load_scenario(path)


def test_calibrate_checks_its_inputs_before_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "run.json").write_text("{}")
    for out in (results / "c2.json", tmp_path / "c2.json"):  # --out inside the directory given, or elsewhere
        assert main(["calibrate", str(results), "--out", str(out)]) == 2
        assert f"error: {results}: is a directory, expected a bench file" in capsys.readouterr().err
        assert not out.exists()
    assert main(["calibrate", str(tmp_path / "nope.json"), "--out", str(tmp_path / "c.json")]) == 2
    assert f"{tmp_path / 'nope.json'}: no such bench file" in capsys.readouterr().err


def test_a_load_given_twice_is_said_and_simulated_once(tmp_path: Path) -> None:
    text = (Path(str(root())) / "llama70b-ngram.toml").read_text()
    lines = [("qps = [2, 1, 1, 1.0, 2]" if line.startswith("qps =") else line) for line in text.splitlines()]
    path = tmp_path / "dup.toml"
    path.write_text("\n".join(lines))
    scenario = load_scenario(path)
    assert scenario.sweep.qps == (1.0, 2.0)
    said = [w for w in scenario.warnings if w.startswith("[sweep].qps")]
    assert said == ["[sweep].qps: 1 given 3 times, 2 given 2 times; each load is simulated once (one row)"]
    assert not [w for w in load_scenario(Path(str(root())) / "llama70b-ngram.toml").warnings if "[sweep].qps" in w]


def test_advise_says_a_load_given_twice(tmp_path: Path) -> None:
    """The same note in every candidate's warnings: advise reads [sweep] with the same parser."""
    from specwise.advisor.decision import scenario_for
    from specwise.advisor.evidence import resolve_evidence
    from specwise.advisor.inputs import load_inputs

    source = Path(str(root())) / "advise" / "summarize-low-qps.toml"
    text = source.read_text()
    assert "\nqps = " in text
    lines = [("qps = [4, 1, 4, 1]" if line.startswith("qps =") else line) for line in text.splitlines()]
    path = tmp_path / "dup.toml"
    path.write_text("\n".join(lines))
    inputs = load_inputs(path)
    assert inputs.notes == ("[sweep].qps: 1 given 2 times, 4 given 2 times; each load is simulated once (one row)",)
    assert load_inputs(source).notes == ()
    c = inputs.candidates[0]
    sc = scenario_for(inputs, c, resolve_evidence(inputs, c, [], [], []))
    assert inputs.notes[0] in sc.warnings
