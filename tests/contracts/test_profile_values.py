"""advise --profile / [speculation].profile: a profile document is labelled measured, so every value it holds is
checked where it is read, refused in one line naming the file, the record and the field -- an acceptance rate of
1.7, a negative k or temperature, a result without per-k counters or a document without its schema were read
(advise exit 0) until then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.contracts.document import DocumentError
from specwise.contracts.profile import ProfileDoc

GOLDEN = Path(__file__).resolve().parents[1] / "profiler" / "profile_document_golden.json"


def _golden() -> dict[str, Any]:
    """A document the profiler wrote (tests/profiler/test_profile_document.py): draft_model, k = 1, 2, 4."""
    data: dict[str, Any] = json.loads(GOLDEN.read_text())
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return path


def _by_k(data: dict[str, Any], key: str, value: object, k: int = 0) -> None:
    data["results"][0]["by_k"][k][key] = value


REFUSED = [
    (lambda d: _by_k(d, "acceptance_rate", 1.7), "results[0].by_k[0].acceptance_rate: 1.7: a rate must be in [0, 1]"),
    (lambda d: _by_k(d, "acceptance_rate", -0.5), "results[0].by_k[0].acceptance_rate: -0.5: a rate must be in"),
    (lambda d: _by_k(d, "acceptance_rate", None), "results[0].by_k[0].acceptance_rate: missing beside num_draft_"),
    (lambda d: _by_k(d, "k", -1), "results[0].by_k[0].k: -1: must be at least 1"),
    (lambda d: _by_k(d, "k", 2), "results[0].by_k[0].per_position_acceptance: 1 rates at k = 2"),
    (lambda d: _by_k(d, "mean_acceptance_length", 9.0), "results[0].by_k[0].mean_acceptance_length: 9.0: AL must be"),
    (
        lambda d: _by_k(d, "mean_acceptance_length", None),
        "results[0].by_k[0].mean_acceptance_length: missing beside num_drafts",
    ),
    (lambda d: _by_k(d, "ci95", [0.6, 0.5]), "results[0].by_k[0].ci95: [0.6, 0.5]: the lower end is above the upper"),
    (
        lambda d: _by_k(d, "mean_acceptance_length_ci95", [0.5, 1.5]),
        "results[0].by_k[0].mean_acceptance_length_ci95: 0.5: AL must be",
    ),
    (lambda d: _by_k(d, "num_drafts", -1), "results[0].by_k[0].num_drafts: -1: must be at least 0 (a count)"),
    (lambda d: _by_k(d, "num_steps", -1), "results[0].by_k[0].num_steps: -1: must be at least 0 (a count)"),
    (
        lambda d: _by_k(d, "per_position_acceptance", [0.3, 0.4], 1),
        "results[0].by_k[1].per_position_acceptance[1]: 0.4 is above",
    ),
    (lambda d: d["results"][0].update(by_k=[]), "results[0].by_k: missing or empty"),
    (lambda d: d["results"][0].update(by_k=d["results"][0]["by_k"][:1] * 2), "results[0].by_k: k = 1, 1: each k once"),
    (
        lambda d: d["results"][0].update(temperature=-1),
        "results[0].temperature: -1: must be at least 0 (a sampling temperature)",
    ),
    (lambda d: d["results"][0].update(drafting="weird"), "results[0].drafting: expected one of greedy, probabilistic"),
    (lambda d: d["results"][0].update(estimator="guess"), "results[0].estimator: 'guess': expected realized or"),
    (lambda d: d["results"][0].update(alpha_mean=1.5), "results[0].alpha_mean: 1.5: an acceptance probability must"),
    (lambda d: d["results"][0].update(prompts=-2), "results[0].prompts: -2: must be at least 0 (a count)"),
    (
        lambda d: d["results"][0].update(per_position_acceptance=[0.5, None, 0.1, 0.0]),
        "results[0].per_position_acceptance: [0.5, None, 0.1, 0.0]: null only when nothing was drafted",
    ),
    (lambda d: d.pop("schema"), 'schema: missing: every profile specwise writes says "schema": "specwise.profile/1"'),
    (lambda d: d.update(method="magic"), "method: expected one of draft_model, ngram, suffix"),
    (lambda d: d["settings"].update(prompt_lookup_min=0), "settings.prompt_lookup_min: 0: must be at least 1"),
    (
        lambda d: d["settings"].update(prompt_lookup_min=5, prompt_lookup_max=2),
        "settings.prompt_lookup_min: 5: above prompt_lookup_max = 2",
    ),
    (lambda d: d["prompts"].update(count=-3), "prompts.count: -3: must be at least 0 (a count)"),
    (lambda d: d["timing_s"].update(load_s=-1), "timing_s.load_s: -1: must be at least 0 (a duration)"),
    (lambda d: d["verification"][0].update(k=0), "verification[0].k: 0: must be at least 1"),
    (lambda d: d["verification"][0].update(measured_acceptance_rate=2), "verification[0].measured_acceptance_rate: 2"),
    (lambda d: d["verification"][0].update(difference=-1.5), "verification[0].difference: -1.5: a difference of"),
    (lambda d: d["verification"][0].update(measured_speedup=0), "verification[0].measured_speedup: 0.0: a speedup"),
    (lambda d: d["verification"][0].update(drafting="weird"), "verification[0].drafting: expected one of greedy"),
    (lambda d: d["verification"][0].update(tokens=-1), "verification[0].tokens: -1: must be at least 0 (a count)"),
]


@pytest.mark.parametrize(("change", "says"), REFUSED, ids=[says.split(":")[0] for _, says in REFUSED])
def test_an_impossible_value_is_refused_naming_the_record_and_field(tmp_path: Path, change: Any, says: str) -> None:
    data = _golden()
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(DocumentError) as exc:
        ProfileDoc.read(path)
    assert str(exc.value).startswith(f"{path}: {says}"), str(exc.value)
    assert "\n" not in str(exc.value)


def test_what_the_profiler_writes_is_read(tmp_path: Path) -> None:
    """The golden document, and a lookup's nothing-drafted result (null rates, no counts), read without a word."""
    assert len(ProfileDoc.read(_write(tmp_path, _golden())).results) == 24
    data = _golden()
    data["results"][0]["by_k"][0].update(
        acceptance_rate=None,
        mean_acceptance_length=None,
        ci95=[None, None],
        mean_acceptance_length_ci95=[None, None],
        per_position_acceptance=[None],
        num_drafts=0.0,
        num_draft_tokens=0.0,
        num_accepted_tokens=0.0,
    )
    ProfileDoc.read(_write(tmp_path, data))


ADVISE = """
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100"
max_model_len = 4096
[advise]
operating_qps = 1
[sweep]
qps = [1]
num_requests = 40
[[workload]]
name = "chat"
prompt_tokens = 200
output_tokens = 60
[[candidate]]
name = "d1b"
method = "draft_model"
draft = "meta-llama/Llama-3.2-1B-Instruct"
k = [0, 2]
"""


def test_advise_refuses_an_acceptance_rate_above_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The audit's reproducer: advise --profile with acceptance_rate 1.7 printed advice (exit 0)."""
    data = _golden()
    data["target"], data["draft"] = "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"
    for result in data["results"]:
        for b in result["by_k"]:
            b["acceptance_rate"] = 1.7
    path = _write(tmp_path, data)
    scenario = tmp_path / "s.toml"
    scenario.write_text(ADVISE)
    assert main(["advise", str(scenario), "--profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{path}: results[0].by_k[0].acceptance_rate: 1.7: a rate must be in [0, 1]"), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
