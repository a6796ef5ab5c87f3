"""A field error names the file, then the path inside it: ``run.json: results[2].k``, never ``run.json.results``."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.contracts.document import DocumentError, Fields


def test_errors_separate_the_file_from_the_field() -> None:
    f = Fields({"n": "x", "rows": [{"k": 1}, {"k": "two"}], "law": {"a": None}}, "run.json")
    with pytest.raises(DocumentError, match=r"^run\.json: n: expected a finite number, got 'x'$"):
        f.number("n")
    with pytest.raises(DocumentError, match=r"^run\.json: rows\[1\]\.k: expected a finite number"):
        [row.number("k") for row in f.objects("rows")]
    law = f.object("law")
    assert law is not None
    with pytest.raises(DocumentError, match=r"^run\.json: law\.a: missing$"):
        law.number("a", required=True)
    nested = Fields({"k": []}, "evidence.json: records[3]")  # a record already placed in its file
    with pytest.raises(DocumentError, match=r"^evidence\.json: records\[3\]\.k: expected a finite number"):
        nested.number("k")


def test_an_empty_document_is_said_the_same_way_for_every_kind(tmp_path: Path) -> None:
    from specwise.contracts.bench_formats import read_bench
    from specwise.contracts.calibration import CalibrationDoc
    from specwise.contracts.profile import ProfileDoc

    empty = tmp_path / "e.json"
    empty.write_text("\n")
    for read, what in ((read_bench, "bench"), (ProfileDoc.read, "profile"), (CalibrationDoc.read, "calibration")):
        with pytest.raises(DocumentError, match=rf"e\.json: empty file; expected a {what} JSON$"):
            read(empty)
