"""``specwise examples``: the shipped scenarios are the repository's examples/ (one copy), listed, printed and
copied; a scenario flag takes ``example:NAME``."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

import pytest

from specwise.cli import build_parser, main
from specwise.cli.common import UsageError
from specwise.examples import copy_examples, find_example, list_examples
from tests.readme_examples import ROOT

EXAMPLES = ROOT / "examples"


def _repo_files() -> set[str]:
    return {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*") if p.is_file()}


def test_every_file_in_examples_is_listed_and_matched_by_the_wheels_package_data() -> None:
    listed = {f for e in list_examples() for f in e.files}
    assert listed == _repo_files()
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["specwise"]
    shipped = [g.removeprefix("examples_data/") for g in globs if g.startswith("examples_data/")]
    unmatched = [f for f in listed if not any(fnmatch.fnmatch(f, g) and f.count("/") == g.count("/") for g in shipped)]
    assert not unmatched, f"not in the wheel: {unmatched}"
    assert (ROOT / "src" / "specwise" / "examples_data").resolve() == EXAMPLES.resolve()  # one copy, not two


def test_every_example_has_a_description_and_a_unique_short_name() -> None:
    for e in list_examples():
        assert e.description, e.name
        assert find_example(e.name.rsplit("/", 1)[-1]) == e
    assert find_example("examples/advise/summarize-low-qps.toml").name == "advise/summarize-low-qps"


def test_list_print_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "--json"]) == 0
    names = [e["name"] for e in json.loads(capsys.readouterr().out)]
    assert "advise/summarize-low-qps" in names and "launch/smollm2" in names
    assert main(["examples", "advise/summarize-low-qps"]) == 0
    assert capsys.readouterr().out == (EXAMPLES / "advise" / "summarize-low-qps.toml").read_text()
    assert main(["examples", "no-such-example"]) == 2
    assert "is not a shipped example" in capsys.readouterr().err


def test_copy_refuses_to_overwrite_a_changed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "examples"
    assert main(["examples", "--copy", str(dest)]) == 0
    assert {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()} == _repo_files()
    assert main(["examples", "--copy", str(dest)]) == 0  # the same bytes: nothing to do, no refusal
    assert "0 files" in capsys.readouterr().out
    mine = dest / "launch" / "smollm2.toml"
    mine.write_text("# my edits\n")
    assert main(["examples", "--copy", str(dest)]) == 2
    assert "smollm2.toml: already there with other contents (--force overwrites)" in capsys.readouterr().err
    assert mine.read_text() == "# my edits\n"
    result = copy_examples(dest, [find_example("smollm2")], force=True)
    assert result.written == (mine,) and mine.read_bytes() == (EXAMPLES / "launch" / "smollm2.toml").read_bytes()


def test_copy_onto_a_file_says_it_takes_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text("# mine\n")
    assert main(["examples", "--copy", str(mine)]) == 2
    err = capsys.readouterr().err  # it said "cannot create (File exists)"
    assert f"{mine}: is a file; --copy takes the directory to copy the examples into" in err
    assert mine.read_text() == "# mine\n"


def test_a_scenario_flag_takes_example_name() -> None:
    args = build_parser().parse_args(["simulate", "--scenario", "example:llama70b-ngram"])
    assert args.scenario.read_bytes() == (EXAMPLES / "llama70b-ngram.toml").read_bytes()
    with pytest.raises(UsageError, match="is not a shipped scenario") as refused:
        build_parser().parse_args(["advise", "--scenario", "example:nope"])
    assert "advise/summarize-low-qps" in str(refused.value)  # the scenarios it could be, and nothing else
    assert not any(other in str(refused.value) for other in ("launch/", "datasets/", "models/"))


def test_a_typo_in_an_example_name_gets_a_suggestion() -> None:
    from specwise.errors import SpecwiseError
    from specwise.examples import find_example

    with pytest.raises(SpecwiseError, match=r"did you mean advise/summarize-low-qps"):
        find_example("example:advise/sumarize-low-qps")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("example:launch/smollm2", "is a bench --launch file, not a scenario (it goes to specwise bench --launch"),
        ("example:datasets/sharegpt_sample", "is a prompt dataset, not a scenario (it goes to --prompts"),
    ],
)
def test_an_example_that_is_not_a_scenario_says_what_it_is(name: str, said: str) -> None:
    from specwise.errors import SpecwiseError
    from specwise.examples import scenario_example_path

    with pytest.raises(SpecwiseError, match=re.escape(said)):
        scenario_example_path(name)
    assert scenario_example_path("example:advise/int4-target").name == "int4-target.toml"
