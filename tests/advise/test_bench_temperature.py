"""A bench run's acceptance applied to a workload at another temperature says so, as a profile's does (review: a
greedy run's acceptance was applied to a T=0.7 workload without a word)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specwise.advisor.evidence import resolve_evidence
from specwise.advisor.inputs import load_inputs
from specwise.contracts.bench import BenchDoc
from specwise.contracts.document import DocumentError
from tests.advise.test_measure_plan import _bench_json, _ngram_only


@pytest.mark.parametrize(
    ("measured", "workload", "said"),
    [
        ((0.0,), 0.7, " -- measured at T=0, the workload runs at T=0.7"),
        ((0.7,), 0.7, ""),
        ((0.6,), 0.8, ""),  # within 0.25, as for a profile
        ((0.0, 0.7), 0.7, " -- measured at T=0 and 0.7 (pooled), the workload runs at T=0.7"),
        ((), 0.7, " -- the run does not record its temperature (both benches send T=0 unless told otherwise)"),
        ((), 0.0, ""),
    ],
)
def test_a_bench_at_another_temperature_is_said(
    tmp_path: Path, measured: tuple[float, ...], workload: float, said: str
) -> None:
    inputs = load_inputs(_ngram_only(tmp_path))
    inputs = replace(inputs, workloads=(replace(inputs.workloads[0], temperature=workload),))
    data = _bench_json("ngram-k6")
    if measured:
        data["temperatures"] = list(measured)
    else:
        del data["temperatures"]  # a vllm bench serve result, or a specwise bench file from before
    (evidence,) = resolve_evidence(inputs, inputs.candidates[0], [], [BenchDoc.from_json(data)])
    assert evidence.kind == "measured"
    base = evidence.source.split(" -- ")[0]
    assert evidence.source.startswith(base + said) and (said or " -- " not in evidence.source)


def test_the_temperatures_round_trip_and_bad_ones_are_refused() -> None:
    doc = BenchDoc.from_json(_bench_json("ngram-k6", temperature=0.7))
    assert doc.temperatures == (0.7,) and BenchDoc.from_json(doc.to_json()).temperatures == (0.7,)
    with pytest.raises(DocumentError, match="temperatures"):
        BenchDoc.from_json({**doc.to_json(), "temperatures": [-1]})
