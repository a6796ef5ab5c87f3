"""A scenario saved with a UTF-8 byte-order mark (Windows editors) reads as the same scenario."""

from __future__ import annotations

from pathlib import Path

from specwise.examples import example_path
from specwise.scenario.toml_loader import read_toml


def test_a_bom_is_not_a_toml_error(tmp_path: Path) -> None:
    text = example_path("example:advise/summarize-low-qps").read_text()
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_toml(bom) == read_toml(example_path("example:advise/summarize-low-qps"))
