"""Local Hugging Face datasets, built-in sets, synthetic prompts sized in words and in a real tokenizer's tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.prompts.sources import Selection, load_prompts
from specwise.prompts.synthetic import corpus_sentences, word_prompts
from specwise.prompts.tokenizer import find_tokenizer_json, load_tokenizer

SHAREGPT = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "sharegpt_sample.json"


def test_hf_dataset_from_local_parquet_and_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    records = json.loads(SHAREGPT.read_text())
    ds = datasets.Dataset.from_list([r for r in records if r["conversations"]])  # arrow needs one row type
    ds.to_parquet(str(tmp_path / "chats.parquet"))
    ds.save_to_disk(str(tmp_path / "saved"))
    want = [p.prompt for p in load_prompts(SHAREGPT, Selection(turns="all"))]
    for where in (tmp_path / "chats.parquet", tmp_path / "saved"):
        items = load_prompts(f"hf:{where}", Selection(turns="all"))
        assert [p.prompt for p in items] == want
    with pytest.raises(SpecwiseError, match=r"^hf:.*nope: no such file or directory \(only local datasets"):
        load_prompts(f"hf:{tmp_path / 'nope'}")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(SpecwiseError, match=r"^hf:.*bad.parquet: cannot load the dataset"):
        load_prompts(f"hf:{tmp_path / 'bad.parquet'}")


def test_builtin_sets_keep_their_classes() -> None:
    mixed = load_prompts("builtin:mixed")
    assert len(mixed) == 4 * 24 + 24
    assert len(load_prompts("builtin:mixed", Selection(("qa", "code")))) == 48


def test_synthetic_word_prompts_are_varied_text_not_a_repeated_phrase() -> None:
    prompts = word_prompts(6, 300, seed=1)
    assert all(len(p.prompt.split()) == 300 for p in prompts) and len({p.prompt for p in prompts}) == 6
    for p in prompts:  # no 6-word phrase occurs twice within a prompt shorter than the corpus
        words = p.prompt.split()
        grams = [" ".join(words[i : i + 6]) for i in range(len(words) - 5)]
        assert len(set(grams)) == len(grams)
    assert word_prompts(2, 50, seed=1) == word_prompts(2, 50, seed=1)
    assert len(corpus_sentences()) >= 100


def test_tokenizer_from_the_local_hub_cache_only(tmp_path: Path) -> None:
    snap = tmp_path / "hub" / "models--org--name" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "tokenizer.json").write_text("{}")
    (tmp_path / "hub" / "models--org--name" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--name" / "refs" / "main").write_text("abc123")
    assert find_tokenizer_json("org/name", tmp_path / "hub") == snap / "tokenizer.json"
    with pytest.raises(SpecwiseError, match=r"org/other: not in the local Hugging Face cache .*nothing is downloaded"):
        find_tokenizer_json("org/other", tmp_path / "hub")
    with pytest.raises(SpecwiseError, match=r"not a readable tokenizer\.json"):
        load_tokenizer("org/name", tmp_path / "hub")


def test_prompts_command_counts_per_category_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    from specwise.cli import main

    assert main(["prompts", str(SHAREGPT), "--turns", "all", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unit"] == "words" and doc["categories"][0]["requests"] == 9
    assert doc["categories"][0]["multi_turn"] == 4  # sw003 (a system prompt and one user turn) is not multi-turn
    assert main(["prompts", "builtin:nope"]) == 2
    assert "unknown built-in prompt set" in capsys.readouterr().err


def test_a_system_prompt_is_not_an_earlier_turn(tmp_path: Path) -> None:
    """The multi-turn column counts requests that carry earlier user/assistant turns (before: any history)."""
    from specwise.prompts.summary import summarize_source

    f = tmp_path / "sys.json"
    chat = [{"from": "system", "value": "be brief"}, {"from": "human", "value": "hi there"}]
    later = [*chat, {"from": "gpt", "value": "hello"}, {"from": "human", "value": "and again"}]
    f.write_text(json.dumps([{"conversations": chat}, {"conversations": later}]))
    (row,) = summarize_source(str(f), Selection(turns="all")).rows
    assert (row.requests, row.multi_turn) == (3, 1)  # only "and again" carries an earlier turn


def test_a_tokenizer_that_loads_but_cannot_encode_is_bad_input(tmp_path: Path) -> None:
    # review 5: a WordLevel model whose unk_token is not in its vocab loads, then raises a bare Exception (exit 3)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"version": "1.0", "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "b"}}))
    tok = load_tokenizer(str(path))
    with pytest.raises(SpecwiseError, match=r"tokenizer\.json: this tokenizer cannot encode text"):
        tok.encode("hello")
