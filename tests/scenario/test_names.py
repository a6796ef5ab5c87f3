"""Names a scenario gives are printed as they are: one holding a control or bidirectional formatting character is
refused when read, naming the file and field (first-hour audit 2026-12-07: ``name = "\\u001b[2J"`` cleared the
terminal of whoever ran ``advise`` on a shared file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.scenario.names import checked_name, unprintable

ADVISE = """
name = {name}
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
max_model_len = 4096
[sweep]
qps = [1]
num_requests = 10
[[workload]]
name = {workload}
prompt_tokens = 200
output_tokens = 50
[[candidate]]
name = {candidate}
method = "ngram"
k = [2]
acceptance = 0.5
"""


@pytest.mark.parametrize(
    "field,where",
    [("name", "name"), ("workload", "[[workload]] #1.name"), ("candidate", "[[candidate]] #1.name")],
)
@pytest.mark.parametrize(
    "bad", ["\\u001b[31mred", "a\\u0000b", "x\\u202ey", "\\u009b2J"], ids=["ansi", "nul", "rlo", "c1"]
)
def test_a_name_with_a_control_character_is_refused(
    field: str, where: str, bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = {"name": '"ok"', "workload": '"w"', "candidate": '"c"'} | {field: f'"{bad}"'}
    scenario = tmp_path / "s.toml"
    scenario.write_text(ADVISE.format(**names))
    assert main(["advise", str(scenario)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"s.toml: {where}: a name may not hold control characters" in err
    assert "\x1b" not in err and "\x00" not in err and "\u202e" not in err and "\x9b" not in err  # said escaped


def test_the_simulate_workload_name_is_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ADVISE.format(name='"ok"', workload='"\\u001b[2J"', candidate='"c"').split("[[candidate]]")[0]
    scenario = tmp_path / "s.toml"
    scenario.write_text(text + '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.5\n')
    assert main(["simulate", str(scenario)]) == 2
    assert "[[workload]] #1.name: a name may not hold control characters" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["llama 70b: summarise", "résumé — 要約", "tab\tis not a name char"])
def test_printable_names_pass_and_tab_is_a_control(name: str) -> None:
    if "\t" in name:
        assert unprintable(name) == repr("\t")
    else:
        assert unprintable(name) is None
        assert checked_name(name, "f: name") == name
