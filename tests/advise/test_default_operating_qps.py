"""A scenario without ``[advise].operating_qps`` is decided at the sweep's lowest rate, and says so (a first-hour
review: a sweep of [8, 16] silently became "cannot keep up with 8 QPS" with nothing saying 8 was a default)."""

from __future__ import annotations

import tomllib

from specwise.advisor.inputs import parse_inputs
from specwise.examples import scenario_example_path


def _data() -> dict[str, object]:
    return tomllib.loads(scenario_example_path("example:advise/summarize-low-qps").read_text())


def test_a_missing_operating_qps_is_the_lowest_rate_and_said() -> None:
    data = _data()
    del data["advise"]["operating_qps"]  # type: ignore[attr-defined]
    data["sweep"]["qps"] = [16, 8]  # type: ignore[index]
    inputs = parse_inputs(data, "s.toml", scenario_example_path("example:advise/summarize-low-qps").parent)
    assert inputs.operating_qps == 8
    (note,) = [n for n in inputs.notes if "operating_qps" in n]
    assert note.startswith("[advise].operating_qps not given: the decision is for 8 QPS, the lowest rate")


def test_a_given_operating_qps_says_nothing() -> None:
    data = _data()
    inputs = parse_inputs(data, "s.toml", scenario_example_path("example:advise/summarize-low-qps").parent)
    assert not [n for n in inputs.notes if "operating_qps" in n]
