"""A bench level whose spec-decode counters no server can produce (more tokens accepted than drafted) reports the
fault and no acceptance, instead of averaging an acceptance rate above 1 into the result."""

from __future__ import annotations

from pathlib import Path

from specwise.loadgen.runner import level_spec_decode
from specwise.loadgen.store import ResultStore

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
ACCEPTED = 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smollm2"}'


def _reading(tmp_path: Path, after: str) -> tuple[object, list[str]]:
    store = ResultStore(tmp_path / "r.sqlite")
    store.create_run("r", 0.0, {})
    store.save_scrape("r", 0, "before", (PAGES / "ngram_before.txt").read_text())
    store.save_scrape("r", 0, "after", after)
    errors: list[str] = []
    reading, _reset = level_spec_decode(store, "r", 0, errors)
    store.close()
    return reading, errors


def test_a_plausible_level_is_read(tmp_path: Path) -> None:
    reading, errors = _reading(tmp_path, (PAGES / "ngram_after.txt").read_text())
    assert reading is not None and not errors


def test_more_accepted_than_drafted_is_a_fault_not_a_rate(tmp_path: Path) -> None:
    lines = (PAGES / "ngram_after.txt").read_text().splitlines()
    assert any(line.startswith(ACCEPTED + " ") for line in lines)
    edited = "\n".join(f"{ACCEPTED} 500.0" if line.startswith(ACCEPTED + " ") else line for line in lines) + "\n"
    reading, errors = _reading(tmp_path, edited)
    assert reading is None
    assert len(errors) == 1 and "spec-decode counters unusable" in errors[0]
    assert errors[0].startswith("spec-decode")  # the renderer names the level ("level 0: level 0: ..." before)
