"""``specwise bench`` dropped flags without a word: ``--rates`` beside ``--concurrency`` or ``--sweep``,
``--synthetic-words`` beside ``--prompts``, ``--burstiness-cv`` without gamma arrivals; it stored a
``--speculative-config`` of a method no scenario has; and a ``--resume`` of a missing database created that database.
Each is refused in one line naming the flags (exit 2), before any request is sent or any file is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import specwise.cli.bench as bench_cli
from specwise.cli import main
from specwise.contracts.bench import SpeculativeSetting
from specwise.errors import SpecwiseError
from specwise.loadgen.plan import CHECKS, RunConfig
from specwise.methods import METHOD_NAMES, row_name
from specwise.values import ValueRefusal

SERVER = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--requests-per-level", "2"]


@pytest.fixture
def no_requests(monkeypatch: pytest.MonkeyPatch) -> list[RunConfig]:
    """The run's levels, never sent: the config that reached them is kept, then the run stops (exit 2)."""
    reached: list[RunConfig] = []

    def execute(store: Any, run_id: str, config: RunConfig, *rest: Any) -> list[Any]:
        reached.append(config)
        raise SpecwiseError("reached the requests")

    monkeypatch.setattr(bench_cli, "execute", execute)
    return reached


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]) -> str:
    assert main([*argv, "--db", str(tmp_path / "sub" / "r.sqlite")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "sub").exists()  # no database, not even its folder
    return err.removeprefix("specwise bench: error: ")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--rates", "1", "--concurrency", "2"], "--rates: not with --concurrency"),
        (["--sweep", "2", "--rates", "1"], "--rates: not with --sweep"),
        (["--concurrency", "2", "--sweep", "2"], "--concurrency: not with --sweep"),
        (["--prompts", "builtin:qa", "--synthetic-words", "10"], "--synthetic-words: not with --prompts"),
        (["--prompts", "builtin:qa", "--synthetic-tokens", "10"], "--synthetic-tokens: not with --prompts"),
        (["--synthetic-words", "10", "--synthetic-tokens", "10"], "--synthetic-words: not with --synthetic-tokens"),
        (["--tokenizer", "org/name"], "--tokenizer: only with --synthetic-tokens"),
        (["--burstiness-cv", "1", "--arrivals", "poisson"], "--burstiness-cv: not with --arrivals poisson"),
        (["--burstiness-cv", "2", "--arrivals", "constant"], "--burstiness-cv: not with --arrivals constant"),
        (["--burstiness-cv", "2"], "--burstiness-cv: only with --arrivals gamma"),
        (["--concurrency", "2", "--arrivals", "gamma"], "--arrivals: not with --concurrency"),
    ],
)
def test_a_flag_that_would_be_dropped_is_refused_before_anything(
    extra: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_requests: list[RunConfig]
) -> None:
    assert _refused(capsys, tmp_path, [*SERVER, *extra]).startswith(said)
    assert no_requests == []


def test_with_launch_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    launch = tmp_path / "launch.toml"
    launch.write_text('model = "m"\n[[config]]\nname = "baseline"\n')
    argv = ["bench", "--launch", str(launch), "--rates", "1", "--concurrency", "2"]
    assert _refused(capsys, tmp_path, argv).startswith("--rates: not with --concurrency")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], {"rates": (1.0, 4.0), "concurrency": None, "sweep": None, "arrivals": "poisson", "cv": 1.0}),
        (["--concurrency", "2"], {"rates": (1.0, 4.0), "concurrency": (2,), "arrivals": "poisson"}),
        (["--sweep", "2"], {"sweep": 2, "concurrency": None}),
        (["--rates", "3"], {"rates": (3.0,)}),
        (["--arrivals", "gamma", "--burstiness-cv", "2"], {"arrivals": "gamma", "cv": 2.0}),
        (["--arrivals", "constant"], {"arrivals": "constant", "cv": 1.0}),
        (["--sweep", "2", "--arrivals", "gamma"], {"sweep": 2, "arrivals": "gamma"}),
        (  # the settings' flags default to None (so --resume can refuse one given); not given, the defaults apply
            [],
            {"endpoint": "completions", "max_tokens": 64, "temperature": 0.0, "ignore_eos": False, "seed": 0},
        ),
        ([], {"max_concurrency": 256, "request_timeout_s": 120.0, "slo_ttft_s": None, "requests_per_level": 2}),
        (
            ["--endpoint", "chat", "--max-tokens", "8", "--temperature", "0.5", "--ignore-eos", "--seed", "4"],
            {"endpoint": "chat", "max_tokens": 8, "temperature": 0.5, "ignore_eos": True, "seed": 4},
        ),
        (["--max-concurrency", "3", "--request-timeout", "9"], {"max_concurrency": 3, "request_timeout_s": 9.0}),
    ],
)
def test_defaults_conflict_with_nothing_and_are_kept(
    extra: list[str],
    expected: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_requests: list[RunConfig],
) -> None:
    assert main([*SERVER, *extra, "--db", str(tmp_path / "r.sqlite")]) == 2
    assert "reached the requests" in capsys.readouterr().err
    (config,) = no_requests
    assert {key: getattr(config, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("extra", "words"),
    [([], 60), (["--synthetic-words", "10"], 10)],
)
def test_synthetic_words_default_and_given(
    extra: list[str], words: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_requests: list[RunConfig]
) -> None:
    assert main([*SERVER, *extra, "--db", str(tmp_path / "r.sqlite")]) == 2
    (config,) = no_requests
    assert {len(p.prompt.split()) for p in config.prompts} == {words}


def test_prompts_without_synthetic_flags_are_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_requests: list[RunConfig]
) -> None:
    assert main([*SERVER, "--prompts", "builtin:qa", "--db", str(tmp_path / "r.sqlite")]) == 2
    (config,) = no_requests
    assert config.prompts and "reached the requests" in capsys.readouterr().err


def test_an_unknown_speculative_method_is_refused_with_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(capsys, tmp_path, [*SERVER, "--speculative-config", '{"method": "nope"}'])
    assert err.startswith("argument --speculative-config: unknown speculative method 'nope'")
    assert f"(known: {', '.join(METHOD_NAMES)})" in err
    with pytest.raises(ValueRefusal, match="unknown speculative method 'nope'"):  # the API's check too
        CHECKS["speculative_config"]({"method": "nope"})


def test_vllms_model_specific_mtp_names_are_mtp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM runs deepseek_mtp, qwen3_next_mtp, ... as mtp (SpeculativeConfig.__post_init__ replaces them; before
    0.11 deepseek_mtp was MTP's only name): the flag takes them as the server wrote them, and the run matches the
    mtp candidate; a name vLLM does not map to a specwise row (ngram_gpu) is still refused."""
    for name in ("deepseek_mtp", "qwen3_next_mtp", "mtp"):
        given = {"method": name, "num_speculative_tokens": 1}
        assert CHECKS["speculative_config"](json.dumps(given)) == given  # kept as the server was configured
        assert SpeculativeSetting.of(given).method == "mtp"
    assert row_name("ngram") == "ngram" and row_name("eagle3") == "eagle3" and row_name("ngram_gpu") == "ngram_gpu"
    assert row_name("foo_mtp") == "foo_mtp"  # not a name vLLM maps: refused as unknown, not read as mtp
    err = _refused(capsys, tmp_path, [*SERVER, "--speculative-config", '{"method": "ngram_gpu"}'])
    assert err.startswith("argument --speculative-config: unknown speculative method 'ngram_gpu'")


def test_a_config_without_a_method_asks_for_it_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM guesses a missing method from the draft's name (differently by release): the refusal says so and shows
    the config with the method to add, not only "expected an object with a 'method'"."""
    given = '{"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}'
    err = _refused(capsys, tmp_path, [*SERVER, "--speculative-config", given])
    assert err.startswith("argument --speculative-config: no 'method': vLLM guesses it from the draft's name")
    assert """'{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", ...}'""" in err


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_every_known_method_is_taken(method: str) -> None:
    assert CHECKS["speculative_config"](f'{{"method": "{method}"}}') == {"method": method}


@pytest.mark.parametrize(
    ("launch", "said"), [(False, "no run 'abc' to resume"), (True, "no --launch run 'abc' to resume")]
)
def test_resuming_from_a_missing_database_creates_none(
    launch: bool, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--resume", "abc"]
    if launch:
        (tmp_path / "launch.toml").write_text('model = "m"\n[[config]]\nname = "baseline"\n')
        argv += ["--launch", str(tmp_path / "launch.toml")]
    assert said in _refused(capsys, tmp_path, argv)


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--rates", "1,2"], "--rates"),
        (["--concurrency", "4"], "--concurrency"),
        (["--arrivals", "gamma"], "--arrivals"),
        (["--prompts", "builtin:qa"], "--prompts"),
        (["--synthetic-words", "10"], "--synthetic-words"),
        (["--requests-per-level", "5"], "--requests-per-level"),
        (["--category", "qa"], "--category"),
        (["--turns", "all"], "--turns"),
        (["--turns", "first"], "--turns"),  # the default's value, given: the stored prompts may be all turns
        (["--seed", "3"], "--seed"),
        (["--endpoint", "chat"], "--endpoint"),
        (["--max-tokens", "8"], "--max-tokens"),
        (["--temperature", "0.7"], "--temperature"),
        (["--ignore-eos"], "--ignore-eos"),
        (["--max-concurrency", "8"], "--max-concurrency"),
        (["--request-timeout", "5"], "--request-timeout"),
        (["--slo-ttft", "0.5"], "--slo-ttft"),
        (["--slo-tpot", "0.05"], "--slo-tpot"),
        (["--seed", "0"], "--seed"),  # the default's value given is still given: the stored run may have another
    ],
)
def test_resume_refuses_what_would_shape_other_levels(
    extra: list[str], flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resumed run finishes the levels it was started with, on its stored requests: a load or prompt flag given
    with --resume would be dropped, so it is refused (before the database is opened)."""
    said = _refused(capsys, tmp_path, ["bench", "--resume", "abc", *extra])
    assert said.startswith(f"{flag}: not with --resume, which finishes run abc's levels"), said


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--prompts", "{d}/nope.json"], "{d}/nope.json: no such prompt file"),
        (["--prompts", "{d}/bad.json"], "{d}/bad.json: "),
        (["--launch", "{d}/nope.toml"], "{d}/nope.toml: no such launch file"),
        (["--launch", "{d}/bad.toml"], "{d}/bad.toml: "),
        (["--prompts", "builtin:qa"], "--url and --model are required"),
    ],
)
def test_a_refused_input_leaves_no_database(
    extra: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompts, the launch file and the run's flags are read and checked before the results database is opened:
    a refusal used to leave an empty (28 KB, 0 runs) specwise-bench.sqlite behind -- the default one in the current
    directory too."""
    (tmp_path / "bad.json").write_text('[{"prompt": "a"')
    (tmp_path / "bad.toml").write_text("model = \n")
    extra = [word.format(d=tmp_path) for word in extra]
    server = SERVER if extra[0] == "--prompts" and "builtin" not in extra[1] else ["bench"]
    assert _refused(capsys, tmp_path, [*server, *extra]).startswith(said.format(d=tmp_path))
    monkeypatch.chdir(tmp_path)  # the default --db
    assert main([*server, *extra]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "specwise-bench.sqlite").exists()
