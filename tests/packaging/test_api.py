"""The Python API (issue 14): its doctests, the README's Python API example, ``import specwise`` staying
light (the API and its dependencies load on first use), and the command line's checks at its boundary."""

from __future__ import annotations

import doctest
import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import specwise
import specwise.api
from specwise.cli import main
from specwise.errors import SpecwiseError
from tests.readme_examples import README


def test_the_api_doctests_pass() -> None:
    result = doctest.testmod(specwise.api, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 15


def test_the_readme_python_api_example_runs_as_written() -> None:
    blocks = re.findall(r"```pycon\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no ```pycon example"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, text in enumerate(blocks):
        runner.run(parser.get_doctest(text, {}, f"README pycon block {i + 1}", str(README), 0))
    assert runner.summarize(verbose=False).failed == 0


def test_the_api_is_exported_and_import_specwise_stays_light() -> None:
    assert set(specwise.__all__) >= {"advise", "simulate", "plan_memory", "profile", "bench"}
    assert all(callable(getattr(specwise, name)) for name in specwise.api.__all__)
    code = "import sys, specwise; print(sorted(m for m in ('specwise.api', 'numpy', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


# ---- the command line's checks, at the API's boundary: one SpecwiseError naming the argument, before any work ----

EXAMPLE_SIM = "example:llama70b-ngram"
EXAMPLE_ADVISE = "example:advise/summarize-low-qps"
TARGET_70B = "meta-llama/Llama-3.1-70B-Instruct"
NO_SLO_SCENARIO = (
    '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
    '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.6\n[sweep]\nqps = [1.0]\nnum_requests = 20\n'
    '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 100\n'
)


@pytest.fixture
def no_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep that fails if it runs: the checks under test must refuse before simulating."""
    import specwise.study.sweep

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sweep ran before the arguments were checked")

    monkeypatch.setattr(specwise.study.sweep, "run_sweep", refuse)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "method draft_model needs a draft"),  # before: load_pair's AssertionError after loading the target
        ({"draft": "d", "method": "ngram"}, "method ngram: drafts from the prompt, not with a draft"),
        ({"method": "bogus"}, "method: 'bogus' is not one of"),
        ({"method": "ngram", "max_prompts": 0}, "max_prompts: expected a positive integer"),
        ({"method": "ngram", "max_new_tokens": "64"}, "max_new_tokens: expected an integer"),
        ({"method": "ngram", "threads": 0}, "threads: expected a positive integer"),
        ({"method": "ngram", "temperatures": (0.0, float("inf"))}, "temperatures: inf is not allowed"),
        ({"method": "ngram", "k": (0, 2)}, "k '0,2': k must be >= 1"),
        ({"method": "ngram", "k": (2.5,)}, "k: expected an integer, got 2.5"),
        ({"method": "ngram", "seed": -1}, "seed: expected an integer >= 0"),
        ({"method": "ngram", "top_p": "0.5"}, "top_p: expected a number"),
        ({"method": "ngram", "bogus": 1}, "profile: unexpected keyword argument 'bogus'"),
        ({"draft": "d", "quantizations": "draft=int3"}, "quantizations 'draft=int3': scheme 'int3' is not one of"),
        ({"draft": "d", "quantizations": {"draft": "int3"}}, "quantizations 'draft=int3': scheme 'int3' is not one"),
        ({"method": "ngram", "chat_template": "no-such.jinja"}, "chat_template 'no-such.jinja': expected auto, none"),
        ({"method": "ngram", "chat_template": 3}, "chat_template: expected 'auto', 'none' or a template file path"),
        ({"method": "ngram", "verify_temperatures": (0.0, float("inf"))}, "verify_temperatures: inf is not allowed"),
        ({"method": "ngram", "verify_temperatures": 0, "verify_k": 0}, "verify_k: expected a positive integer"),
        ({"method": "ngram", "verify_temperatures": 0, "verify_paths": 1.5}, "verify_paths: expected an integer, got"),
        # before: accepted and ignored (no verification runs without verify_temperatures); the CLI's rule
        ({"draft": "d", "verify_k": 3}, "verify_k needs verify_temperatures"),
        ({"method": "ngram", "verify_k": 2, "verify_paths": 2}, "verify_k, verify_paths need verify_temperatures"),
        # before: accepted and ignored (only n-gram lookup has these)
        ({"draft": "d", "prompt_lookup_min": 2}, "prompt_lookup_min needs method='ngram' (method draft_model has no"),
        ({"method": "suffix", "prompt_lookup_max": 3}, "prompt_lookup_max needs method='ngram' (method suffix has no"),
    ],
)
def test_profile_refuses_what_the_command_line_refuses_before_loading_anything(
    kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(SpecwiseError) as exc:
        specwise.profile("no-such-model-dir", **kwargs)
    assert words in str(exc.value)


@pytest.mark.parametrize(("temperatures", "k"), [(0.5, 4), ("0,0.5", "1-4"), ([0.0, 1], (1, 2))])
def test_profile_takes_one_value_or_the_command_lines_text_for_temperatures_and_k(
    tmp_path: Path, temperatures: Any, k: Any
) -> None:
    # before: iterating a float raised TypeError, and "1-4" was read character by character
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(SpecwiseError, match=r"missing\.jsonl"):  # the settings passed: the prompts are next
        specwise.profile("no-such-model-dir", method="ngram", prompts=missing, temperatures=temperatures, k=k)


@pytest.mark.usefixtures("no_sweep")
@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"metric": "bogus"}, "metric: 'bogus' is not one of e2e, tpot, throughput, goodput"),  # before: KeyError
        ({"num_requests": 10_000_001}, "num_requests: expected an integer in 1..10,000,000"),
        ({"num_requests": 0}, "num_requests: expected an integer in 1..10,000,000"),  # before: silently ignored
        ({"num_requests": "50"}, "num_requests: expected an integer, got '50'"),  # before: TypeError
        ({"processes": 0}, "processes: expected a positive integer"),
        ({"processes": -1}, "processes: expected a positive integer"),
        ({"processes": "2"}, "processes: expected an integer, got '2'"),
        ({"executor": "bogus"}, "executor: expected 'local', 'ray' or 'ray:ADDRESS', got 'bogus'"),  # ValueError
    ],
)
def test_simulate_refuses_what_the_command_line_refuses_before_the_sweep(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        specwise.simulate(EXAMPLE_SIM, **kwargs)
    assert words in str(exc.value)


@pytest.mark.usefixtures("no_sweep")
def test_simulate_refuses_goodput_on_a_scenario_with_no_slo(tmp_path: Path) -> None:
    # before: every cell scored 0 and the answer was "speculation never pays"
    path = tmp_path / "s.toml"
    path.write_text(NO_SLO_SCENARIO)
    with pytest.raises(SpecwiseError, match=r"metric goodput: .* sets no slo_ttft_s or slo_tpot_s"):
        specwise.simulate(path, metric="goodput", num_requests=20, processes=1)


@pytest.mark.parametrize("scenario", [42, None])
def test_advise_refuses_a_scenario_that_is_not_a_path(scenario: object) -> None:
    with pytest.raises(SpecwiseError, match="scenario: expected a file path"):  # before: pathlib's TypeError
        specwise.advise(scenario)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"vllm_version": 0.2}, "vllm_version: expected a version string such as '0.20', got 0.2"),
        ({"vllm_version": "0.7"}, "vllm_version: 0.7.0: vLLM before 0.8.2"),
        ({"host": "x; rm -rf /"}, "host: expected a host name or IP address"),  # before: pasted into the command
        ({"processes": 0}, "processes: expected a positive integer"),
        ({"executor": "bogus"}, "executor: expected 'local', 'ray' or 'ray:ADDRESS'"),
        ({"profiles": [42]}, "profiles: expected file paths"),
    ],
)
def test_advise_refuses_what_the_command_line_refuses(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        specwise.advise(EXAMPLE_ADVISE, **kwargs)
    assert words in str(exc.value)


@pytest.mark.parametrize("argument", ["profiles", "benches"])
@pytest.mark.parametrize("kind", [str, Path])
def test_advise_reads_one_file_given_alone_as_a_list_of_one(
    tmp_path: Path, argument: str, kind: type[str] | type[Path]
) -> None:
    # before: a str was read character by character ("/: is a directory"), a Path raised TypeError
    missing = tmp_path / "x.json"
    given: dict[str, Any] = {argument: kind(missing)}
    with pytest.raises(SpecwiseError, match=re.escape(f"{missing}: no such")):
        specwise.advise(EXAMPLE_ADVISE, processes=1, **given)


@pytest.mark.parametrize(
    ("url", "kwargs", "words"),
    [
        ("notaurl", {}, "url: expected http://HOST:PORT"),
        ("http://127.0.0.1:8000", {"rates": ()}, "rates: rates must be > 0"),
        ("http://127.0.0.1:8000", {"rates": (1.0, -2.0)}, "rates: rates must be > 0"),
        ("http://127.0.0.1:8000", {"requests_per_level": 0}, "requests_per_level: expected a positive integer"),
        ("http://127.0.0.1:8000", {"concurrency": (0,)}, "concurrency: concurrency levels must be >= 1"),
        ("http://127.0.0.1:8000", {"temperature": -1.0}, "temperature: expected a number >= 0"),
        ("http://127.0.0.1:8000", {"metrics_urls": "ftp://x"}, "metrics_urls: expected http://HOST:PORT"),
        ("http://127.0.0.1:8000", {"bogus": 1}, "bench: unexpected keyword argument 'bogus'"),
        ("http://127.0.0.1:8000", {"run_id": 5}, "run_id: expected a string, got 5"),
        (None, {}, "url: expected http://HOST:PORT, got None"),
        ("http://127.0.0.1:8000", {"requests_per_level": None}, "requests_per_level: expected an integer, got None"),
        # review s46d: the API dropped one of two level shapes, or an arrival setting, without a word
        ("http://127.0.0.1:8000", {"rates": (2.0,), "concurrency": 4}, "rates: not with concurrency"),
        ("http://127.0.0.1:8000", {"sweep": 3, "concurrency": 4}, "concurrency: not with sweep"),
        ("http://127.0.0.1:8000", {"rates": 2.0, "sweep": 3}, "rates: not with sweep"),
        ("http://127.0.0.1:8000", {"concurrency": 4, "arrivals": "gamma"}, "arrivals: not with concurrency"),
        ("http://127.0.0.1:8000", {"cv": 2.0}, "cv: only with arrivals='gamma'"),
        # review s59: an unset key variable ran without a key; internal RunConfig fields were taken as keywords
        (
            "http://127.0.0.1:8000",
            {"api_key_env": "SPECWISE_TEST_UNSET_VAR"},
            "api_key_env: $SPECWISE_TEST_UNSET_VAR is not set (or empty); export it, or give '' to send no key",
        ),
        ("http://127.0.0.1:8000", {"api_key_env": 5}, "api_key_env: expected a string, got 5"),
        ("http://127.0.0.1:8000", {"launch": "x.toml"}, "bench: unexpected keyword argument 'launch'"),
        ("http://127.0.0.1:8000", {"sweep_rates": (1.0,)}, "bench: unexpected keyword argument 'sweep_rates'"),
    ],
)
def test_bench_refuses_what_the_command_line_refuses_before_any_request(
    tmp_path: Path, url: str, kwargs: dict[str, Any], words: str
) -> None:
    db = tmp_path / "b.sqlite"
    with pytest.raises(SpecwiseError) as exc:
        specwise.bench(url, "m", db=db, **kwargs)
    assert words in str(exc.value)
    assert not db.exists()  # refused before the results database was opened


def test_bench_raises_when_every_request_failed(tmp_path: Path) -> None:
    # before: it returned the document of a run with nothing measured, as the CLI exits 2 instead
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(SpecwiseError, match=r"all 2 requests failed \(2 connection\); check url, model"):
        specwise.bench(url, "m", rates=(50.0,), requests_per_level=2, db=tmp_path / "b.sqlite", metrics_urls=())
    # with /metrics refusing too, the first refused request stops the run: the rest are not sent
    with pytest.raises(
        SpecwiseError, match=r"the one request failed \(1 connection: .*\); stopped before sending the other 1"
    ):
        specwise.bench(url, "m", rates=(50.0,), requests_per_level=2, db=tmp_path / "c.sqlite")
    # a run_id already in the database is said in the API's words, not the command's flags (review s46d)
    once = {"rates": (50.0,), "requests_per_level": 1, "db": tmp_path / "d.sqlite", "run_id": "r1"}
    with pytest.raises(SpecwiseError, match="the one request failed"):  # recorded under r1, all failed
        specwise.bench(url, "m", **once)
    with pytest.raises(SpecwiseError, match=r"run 'r1' exists; give another run_id") as exc:
        specwise.bench(url, "m", **once)
    assert "--" not in str(exc.value).split("exists;")[1].split("(")[0]


def test_bench_whose_every_request_timed_out_points_at_the_timeout(tmp_path: Path) -> None:
    """As the CLI: a server too slow for every request is not a wrong url or model (the hint was the CLI's only)."""
    from specwise.loadgen.mock_server import MockBehaviour, MockServer

    with MockServer(MockBehaviour(hang_every=1, hang_s=3.0)) as server, pytest.raises(SpecwiseError) as exc:
        specwise.bench(
            server.url, "mock", rates=(20.0,), requests_per_level=2, db=tmp_path / "b.sqlite", request_timeout_s=0.5
        )
    assert "all 2 requests failed (2 timeout); raise request_timeout_s (run " in str(exc.value)


def test_bench_takes_the_old_keywords_with_a_deprecation_warning(tmp_path: Path) -> None:
    """``timeout``, ``slo_ttft`` and ``slo_tpot`` were renamed to say their unit; the old names still work, warn,
    and reach the run as the new ones do; both names of one field at once are refused before any request."""
    from specwise.loadgen.mock_server import MockBehaviour, MockServer
    from specwise.loadgen.plan import RunConfig
    from specwise.loadgen.store import ResultStore

    db = tmp_path / "b.sqlite"
    with MockServer(MockBehaviour(hang_every=1, hang_s=3.0)) as server:
        old_name = pytest.warns(DeprecationWarning, match="'timeout' is now 'request_timeout_s'")
        with old_name, pytest.raises(SpecwiseError, match="raise request_timeout_s"):
            specwise.bench(server.url, "mock", rates=(20.0,), requests_per_level=2, db=db, timeout=0.5, run_id="old")
        with pytest.raises(SpecwiseError, match="'slo_ttft' is the old name of 'slo_ttft_s'; give one of them"):
            specwise.bench(server.url, "mock", db=db, slo_ttft=1.0, slo_ttft_s=1.0)
        with pytest.warns(DeprecationWarning), pytest.raises(SpecwiseError, match=r"^timeout: expected a number > 0"):
            specwise.bench(server.url, "mock", db=db, timeout=-1)  # named as the caller wrote it
    store = ResultStore(db)
    try:
        assert RunConfig.from_json(store.run_config("old")).request_timeout_s == 0.5
    finally:
        store.close()


def test_bench_scrapes_one_metrics_url_given_alone(tmp_path: Path) -> None:
    from specwise.loadgen.mock_server import MockServer

    # before: the string was read as the URLs 'h', 't', 't', ... and no counters were read
    with MockServer() as server:
        doc = specwise.bench(
            server.url, "mock", rates=(20.0,), requests_per_level=2, db=tmp_path / "b.sqlite",
            metrics_urls=server.url + "/metrics",
        )  # fmt: skip
    level = doc.levels[0]
    assert level.spec_decode is not None and not level.scrape_errors


def test_a_bench_documents_json_is_strict_json() -> None:
    from specwise.contracts.bench import BenchDoc, BenchLevel
    from specwise.latency import LevelSummary
    from specwise.stats import Percentiles

    nothing = Percentiles.of_nothing()  # a level whose requests all failed: no latency samples
    summary = LevelSummary(2, nothing, nothing, nothing, nothing, 0.0, 0.0, None, failed=2)
    doc = BenchDoc(run_id="r", db="b.sqlite", model="m", levels=(BenchLevel(summary),))
    data = doc.to_json()
    json.dumps(data, allow_nan=False)  # before: ValueError, "mean": NaN
    assert data["levels"][0]["ttft_s"]["mean"] is None  # null, as the command line prints it


def test_plan_memory_to_json_is_what_the_command_line_prints(capsys: pytest.CaptureFixture[str]) -> None:
    draft = "meta-llama/Llama-3.2-1B-Instruct"
    plan = specwise.plan_memory(TARGET_70B, "H100-SXM-80GB", draft=draft, tp=4)
    assert main(["plan-memory", "--target", TARGET_70B, "--gpu", "H100-SXM-80GB", "--draft", draft, "--tp", "4",
                 "--json"]) == 0  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(json.dumps(plan.to_json())) == printed
    assert printed["compatibility"]["compatible"] is True


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"draft_tp": 1}, "draft_tp: no draft given to place or quantize"),
        ({"draft_quantization": "fp8"}, "draft_quantization: no draft given to place or quantize"),
        ({"draft": "ngram", "draft_tp": 1}, "draft_tp: draft ngram has no weights to place or quantize"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization: expected a number in (0, 1]"),
        ({"quantization": "int3"}, "quantization: 'int3' is not one of"),
        ({"bogus": 1}, "plan_memory: unexpected keyword argument 'bogus'"),
    ],
)
def test_plan_memory_refuses_what_the_command_line_refuses(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        specwise.plan_memory(TARGET_70B, "H100-SXM-80GB", tp=4, **kwargs)
    assert words in str(exc.value)


# ---- every command with a function is exported, listed by dir(), and its document is the command's --json ----

FUNCTIONS = {"advise", "simulate", "plan_memory", "profile", "bench", "check_pair", "inspect", "prompt_summary"}


def test_every_api_function_is_exported_lazily_and_listed_by_dir() -> None:
    # before: check_pair, inspect and prompt_summary did not exist, and dir() listed Any, TYPE_CHECKING,
    # annotations and errors but none of the functions
    assert set(specwise.api.__all__) == FUNCTIONS
    assert set(specwise.__all__) == FUNCTIONS | {"SpecwiseError", "__version__"}
    assert set(specwise.api.__all__) == specwise._API
    listed = dir(specwise)
    assert set(listed) >= FUNCTIONS
    assert not {"Any", "TYPE_CHECKING", "annotations"} & set(listed)


def test_the_readme_names_exactly_the_commands_that_have_functions() -> None:
    # before: "Every command is also a function", while only five of the seventeen were
    import argparse

    from specwise.cli import build_parser

    section = README.read_text().split("## Python API", 1)[1].split("\n## ", 1)[0]
    with_functions, cli_only = section.split("command-line only", 1)[0].split("The others", 1)
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    function_of = {command: command.replace("-", "_") for command in sub.choices} | {"prompts": "prompt_summary"}
    for command, function in function_of.items():
        if function in FUNCTIONS:
            assert f"`{function}`" in with_functions, f"the README does not list specwise.{function}"
        else:
            assert f"`{command}`" in cli_only, f"the README does not say {command} is command-line only"


def _cli_json(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> Any:
    assert main([*argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_check_pair_inspect_and_prompt_summary_return_what_their_commands_print(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pair = specwise.check_pair("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B", max_model_len=16384)
    printed = _cli_json(capsys, ["check-pair", "--target", "Qwen/Qwen3-8B", "--draft", "Qwen/Qwen3-0.6B",
                                 "--max-model-len", "16384"])  # fmt: skip
    assert json.loads(json.dumps(pair.to_json())) == printed and pair.compatible
    view = specwise.inspect("Qwen/Qwen3-8B", kv_cache_dtype="fp8_e4m3")
    printed = _cli_json(capsys, ["inspect", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3"])
    assert json.loads(json.dumps(view.to_json())) == printed and printed["kv_cache_dtype"] == "fp8"
    summary = specwise.prompt_summary("builtin:chat", category=["chat"], turns="all")
    printed = _cli_json(capsys, ["prompts", "builtin:chat", "--category", "chat", "--turns", "all"])
    assert json.loads(json.dumps(summary.to_json())) == printed and printed["categories"][0]["requests"] > 0


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: specwise.check_pair("Qwen/Qwen3-8B", ""), "draft: empty name"),
        (
            lambda: specwise.check_pair("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B", max_model_len=10**6),
            "max_model_len=1000000 exceeds Qwen/Qwen3-8B's max_position_embeddings",
        ),
        (
            lambda: specwise.check_pair("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B", max_model_len=0),
            "max_model_len: expected a positive integer",
        ),
        (lambda: specwise.inspect("Qwen/Qwen3-8B", kv_cache_dtype="bf16"), "kv_cache_dtype: 'bf16' is not one of auto"),
        (lambda: specwise.prompt_summary("builtin:chat", turns="some"), "turns: 'some' is not one of first, all"),
        (lambda: specwise.prompt_summary("builtin:chat", category=","), "category ',': expected one or more names"),
    ],
)
def test_check_pair_inspect_and_prompt_summary_refuse_what_their_commands_refuse(call: Any, words: str) -> None:
    with pytest.raises(SpecwiseError) as exc:
        call()
    assert words in str(exc.value)


# ---- advise and simulate take the step-time model as --predictor / --calibration give it ----

ADVISE_NGRAM = (
    '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100"\nmax_model_len = 4096\n'
    "[sweep]\nqps = [1, 4]\nnum_requests = 40\n"
    '[[workload]]\nname = "w"\nprompt_tokens = 200\noutput_tokens = 60\n'
    '[[candidate]]\nmethod = "ngram"\nk = [0, 4]\n'
)


def test_advise_and_simulate_with_a_calibration_file_are_the_commands_with_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.perfmodel.test_calibration_use import SCENARIO, _calibration

    # before: neither function took a calibration, so a calibration file could not be used from Python
    cal = _calibration(tmp_path / "cal.json")
    sim, adv = tmp_path / "s.toml", tmp_path / "a.toml"
    sim.write_text(SCENARIO)
    adv.write_text(ADVISE_NGRAM)
    sweep = specwise.simulate(sim, calibration=cal, processes=1)
    printed = _cli_json(capsys, ["simulate", "--scenario", str(sim), "--calibration", str(cal), "--processes", "1"])
    assert json.loads(json.dumps(sweep.to_json())) == printed
    assert printed["predictor"]["name"] == f"calibrated: {cal}"
    advice = specwise.advise(str(adv), calibration=str(cal), predictor="calibrated", processes=1)
    printed = _cli_json(capsys, ["advise", "--scenario", str(adv), "--calibration", str(cal), "--processes", "1"], 1)
    assert json.loads(json.dumps(advice.to_json())) == printed
    assert printed["predictor"]["name"] == f"calibrated: {cal}"


def test_simulate_with_the_roofline_predictor_is_the_command_with_it(capsys: pytest.CaptureFixture[str]) -> None:
    sweep = specwise.simulate(EXAMPLE_SIM, predictor="roofline", num_requests=40, processes=1)
    printed = _cli_json(capsys, ["simulate", "--scenario", EXAMPLE_SIM, "--predictor", "roofline", "--num-requests",
                                 "40", "--processes", "1"])  # fmt: skip
    api = json.loads(json.dumps(sweep.to_json()))
    assert api["warnings"] == [w.replace("--num-requests 40", "num_requests=40") for w in printed["warnings"]]
    assert {**api, "warnings": None} == {**printed, "warnings": None}  # each names the count as its caller gave it
    assert printed["predictor"]["name"].startswith("roofline")


@pytest.mark.usefixtures("no_sweep")
@pytest.mark.parametrize("function", ["advise", "simulate"])
@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"predictor": "bogus"}, "predictor: 'bogus' is not one of published-fit, roofline, calibrated"),
        ({"predictor": "calibrated"}, "predictor='calibrated' needs calibration FILE"),
        ({"predictor": "roofline", "calibration": "c.json"}, "calibration needs predictor='calibrated'"),
        ({"calibration": 3}, "calibration: expected a file path (str or Path), got 3"),
        ({"calibration": "no-such-calibration.json"}, "no-such-calibration.json"),
    ],
)
def test_advise_and_simulate_refuse_what_predictor_and_calibration_refuse(
    function: str, kwargs: dict[str, Any], words: str
) -> None:
    scenario = EXAMPLE_ADVISE if function == "advise" else EXAMPLE_SIM
    with pytest.raises(SpecwiseError) as exc:
        getattr(specwise, function)(scenario, processes=1, **kwargs)
    assert words in str(exc.value)
