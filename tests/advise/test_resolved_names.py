"""Review 16 #1 and #6: advise wrote the model and GPU names as typed -- a target without its organisation
(``Llama-3.1-70B-Instruct``) or in another case went into ``vllm serve``, the ``--speculative-config`` "model", the
JSON and the measure-first launch file, which vLLM cannot load (no such Hugging Face repository); ``gpu = "h100"``
was shown as ``h100``, not the card planned. simulate and plan-memory already showed the catalog's names; advise now
writes them too (a local checkpoint keeps its path)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.config_target import resolved_names
from specwise.advisor.inputs import parse_inputs
from specwise.cli import main
from tests.conftest import LLAMA_TINY, write_model_dir

TARGET = "meta-llama/Llama-3.1-70B-Instruct"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"

# /tmp/review16/repro/noorg.toml: summarize-low-qps with the organisation left out of both model names (sweep cut
# to two loads to keep the test short; the decision is the same enable)
NOORG = """
name = "summarize-low-qps"

[deployment]
target = "Llama-3.1-70B-Instruct"
gpu = "H100-SXM-80GB"
tp = 4
max_model_len = 16384
max_num_seqs = 128

[advise]
operating_qps = 0.5
min_speedup = 1.05

[sweep]
qps = [0.5, 1]
num_requests = 100

[[workload]]
name = "summarize"
task = "summarization"
temperature = 0.0
prompt_tokens = { dist = "lognormal", mean = 2000, cv = 0.4, min = 200, max = 8000 }
output_tokens = { dist = "lognormal", mean = 200, cv = 0.4, min = 16, max = 800 }

[[candidate]]
method = "ngram"
k = [0, 2, 4, 6]
prompt_lookup_min = 2
prompt_lookup_max = 4
"""
DRAFT_CANDIDATE = """
[[candidate]]
method = "draft_model"
draft = "Llama-3.2-1B-Instruct"
k = [0, 2, 4, 6]
"""


def _scenario(tmp_path: Path, text: str, *edits: tuple[str, str]) -> Path:
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def _advise_json(scenario: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    rc = main(["advise", "--scenario", str(scenario), "--processes", "1", "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_the_serve_command_and_json_carry_the_catalog_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/tmp/review16/repro/noorg.toml: ``vllm serve Llama-3.1-70B-Instruct`` and ``"model":"Llama-3.2-1B-Instruct"``
    before."""
    rc, doc = _advise_json(_scenario(tmp_path, NOORG + DRAFT_CANDIDATE), capsys)
    assert rc == 0 and doc["decision"] == "enable"
    assert doc["target"] == TARGET
    assert doc["vllm"]["serve_argv"][:3] == ["vllm", "serve", TARGET]
    assert doc["vllm"]["speculative_config"]["model"] == DRAFT
    drafted = next(c for c in doc["candidates"] if c["method"] == "draft_model")
    assert drafted["draft"] == DRAFT and drafted["candidate"] == f"draft_model:{DRAFT}"
    assert doc["recommended"] == f"draft_model:{DRAFT}"


def test_case_and_gpu_alias_are_resolved_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's case variant, with the GPU as an alias (#6: shown as ``4 x h100`` and ``"gpu": "h100"``)."""
    monkeypatch.setenv("COLUMNS", "200")  # the header on one line
    scenario = _scenario(
        tmp_path,
        NOORG + DRAFT_CANDIDATE,
        ('target = "Llama-3.1-70B-Instruct"', 'target = "META-LLAMA/llama-3.1-70b-instruct"'),
        ('draft = "Llama-3.2-1B-Instruct"', 'draft = "meta-llama/LLAMA-3.2-1B-INSTRUCT"'),
        ('gpu = "H100-SXM-80GB"', 'gpu = "h100"'),
    )
    rc, doc = _advise_json(scenario, capsys)
    assert rc == 0
    assert (doc["target"], doc["gpu"]) == (TARGET, "H100-SXM-80GB")
    assert doc["vllm"]["serve_argv"][2] == TARGET and doc["vllm"]["speculative_config"]["model"] == DRAFT
    assert main(["advise", "--scenario", str(scenario), "--processes", "1"]) == 0
    out = capsys.readouterr().out
    assert f"({TARGET} on 4 x H100-SXM-80GB)" in out
    assert f"vllm serve {TARGET} " in out and f'"model":"{DRAFT}"' in out
    assert "llama-3.1-70b-instruct" not in out and "LLAMA-3.2" not in out and " h100" not in out


def test_the_measure_first_launch_file_names_the_catalog_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/tmp/review16/repro/mf_noorg.toml (n-gram only: measure first): the launch file said
    ``model = "Llama-3.1-70B-Instruct"``, which ``bench --launch`` passes to ``vllm serve``."""
    launch = tmp_path / "launch.toml"
    rc, doc = _advise_json(_scenario(tmp_path, NOORG), capsys, "--write-launch", str(launch))
    assert rc == 0 and doc["decision"] == "measure_first"
    assert tomllib.loads(launch.read_text())["model"] == TARGET
    assert tomllib.loads(doc["measure"]["launch_toml"])["model"] == TARGET


def _inputs(tmp_path: Path, target: str, drafts: list[tuple[str, str | None]]) -> Any:
    data = tomllib.loads(NOORG)
    data["deployment"]["target"] = target
    data["candidate"] = [
        {"method": "draft_model", "draft": d, "k": [0, 2]} | ({"name": name} if name else {}) for d, name in drafts
    ]
    return parse_inputs(data, str(tmp_path / "s.toml"), tmp_path)


def test_a_local_checkpoint_and_an_unknown_name_are_kept(tmp_path: Path) -> None:
    """A local directory is served by its path; a name in no catalog is left for the build to refuse, naming
    its field (as before)."""
    local = str(write_model_dir(tmp_path, "Llama-3.1-70B-Instruct", LLAMA_TINY))
    got = resolved_names(_inputs(tmp_path, local, [("no-such-draft", None), ("llama-3.2-1b-instruct", "mine")]))
    assert got.deployment.target == local
    assert [(c.label, c.speculation.draft) for c in got.candidates] == [
        ("draft_model:no-such-draft", "no-such-draft"),
        ("mine", DRAFT),  # a name given is the user's label
    ]


def test_two_spellings_of_one_draft_keep_their_labels_apart(tmp_path: Path) -> None:
    got = resolved_names(_inputs(tmp_path, TARGET, [("Llama-3.2-1B-Instruct", None), (DRAFT, None)]))
    assert [c.speculation.draft for c in got.candidates] == [DRAFT, DRAFT]
    assert [c.label for c in got.candidates] == ["draft_model:Llama-3.2-1B-Instruct", f"draft_model:{DRAFT}"]


def test_an_unknown_target_is_still_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = _scenario(tmp_path, NOORG, ('target = "Llama-3.1-70B-Instruct"', 'target = "Llama-9"'))
    assert main(["advise", "--scenario", str(scenario), "--processes", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{scenario}: [deployment].target: unknown model 'Llama-9'" in err and len(err.strip().splitlines()) == 1
