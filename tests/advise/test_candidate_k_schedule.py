"""A ``k_schedule`` in a ``[[candidate]]`` is refused, exit 2, naming the file and the field (review 12 #4: it was
accepted and simulated, then missing from the verdict and the config, with no word). advise builds the
k-by-batch-size schedule itself from the best k it simulates at each load (``schedule.k_schedule``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.advisor.inputs import load_inputs
from specwise.cli import main
from specwise.errors import SpecwiseError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"
NGRAM = '[[candidate]]\nmethod = "ngram"\nk = [0, 3]\n'


def _with_candidate(tmp_path: Path, candidate: str) -> Path:
    path = tmp_path / "sched.toml"
    path.write_text((EXAMPLES / "summarize-low-qps.toml").read_text() + "\n" + candidate)
    return path


def test_a_candidate_schedule_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    path = _with_candidate(tmp_path, NGRAM + "k_schedule = [[1, 16, 3], [17, 256, 0]]\n")
    with pytest.raises(SpecwiseError) as err:
        load_inputs(path)
    message = str(err.value)
    assert message.startswith(f"{path}: [[candidate]] #3.k_schedule: advise builds the k-by-batch-size schedule")
    assert "specwise simulate" in message and "\n" not in message


def test_the_cli_exits_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_candidate(tmp_path, NGRAM + "k_schedule = [[1, 256, 3]]\n")
    assert main(["advise", "--scenario", str(path), "--processes", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "[[candidate]] #3.k_schedule" in lines[0] and "Traceback" not in captured.err


def test_the_allowed_keys_no_longer_offer_it(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError) as err:
        load_inputs(_with_candidate(tmp_path, NGRAM + "speed = 3\n"))
    message = str(err.value)
    assert "unknown key(s): speed" in message and "prompt_lookup_min" in message and "match_rate" in message
    assert "k_schedule" not in message


def test_a_candidate_without_one_still_loads(tmp_path: Path) -> None:
    inputs = load_inputs(_with_candidate(tmp_path, NGRAM + 'name = "ngram-k3"\n'))
    assert [c.label for c in inputs.candidates][-1] == "ngram-k3"
    assert all(c.speculation.k_schedule == () for c in inputs.candidates)
