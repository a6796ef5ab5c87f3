"""A model directory a user got wrong is refused in one line (exit 2), never profiled or crashed on (review s44c):
a config asking for weights the safetensors lack (transformers filled them with random values and the profile ran,
exit 0, a different answer each run), a config that is not an object or names no model_type, a sharded checkpoint
missing a shard, no tokenizer files, a broken tokenizer.json (each exit 3 before); two tokenizers of one size but
other ids are told apart by a token, not by two equal sizes; the prompt room the model's context leaves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.methods import MAX_K
from specwise.profiler import models
from specwise.profiler.runner import Loaded, Prompt, prepare_prompts, prompt_limit
from specwise.profiler.settings import ProfileSettings

QUICK = ["--method", "ngram", "--prompts", "builtin:qa", "--max-prompts", "1", "--max-new-tokens", "4"]
QUICK += ["--temperatures", "0", "--k", "1", "--threads", "1"]


def _copy(src: Path, tmp_path: Path, name: str = "m") -> Path:
    return Path(shutil.copytree(src, tmp_path / name))


def _edit_config(model_dir: Path, **changes: object) -> None:
    cfg = json.loads((model_dir / "config.json").read_text())
    cfg.update(changes)
    (model_dir / "config.json").write_text(json.dumps(cfg))


def _refused(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["profile", "--target", str(model_dir), *QUICK]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


def test_weights_the_config_asks_for_and_the_checkpoint_lacks(
    other_vocab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = _copy(other_vocab_dir, tmp_path)
    _edit_config(model_dir, num_hidden_layers=3)  # the safetensors hold one layer
    err = _refused(model_dir, capsys)
    assert "18 weights the config asks for are missing from the checkpoint (first: model.layers." in err
    assert "config.json does not describe these safetensors" in err


@pytest.mark.parametrize(
    ("break_it", "said"),
    [
        (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json: the file: expected a JSON object"),
        (lambda d: _edit_config(d, text_config=None), "config.json: text_config: expected a JSON object"),
        (lambda d: _edit_config(d, model_type=None), "config.json: no model_type"),
        (lambda d: _edit_config(d, hidden_size="big"), "config.json: hidden_size: expected a positive integer"),
        (lambda d: (d / "tokenizer.json").unlink() or (d / "tokenizer_config.json").unlink(), "no tokenizer ("),
        (lambda d: (d / "tokenizer.json").write_text("{not json"), "cannot load its tokenizer ("),
        (
            lambda d: (d / "model.safetensors.index.json").write_text(
                json.dumps({"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}})
            ),
            "names model-00002-of-00002.safetensors, not in",
        ),
    ],
)
def test_a_broken_model_directory_is_one_line(
    other_vocab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], break_it: object, said: str
) -> None:
    model_dir = _copy(other_vocab_dir, tmp_path)
    break_it(model_dir)  # type: ignore[operator]
    assert said in _refused(model_dir, capsys)


class _Tok:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    def __len__(self) -> int:
        return len(self.vocab)

    def get_vocab(self) -> dict[str, int]:
        return self.vocab


def test_two_vocabularies_of_one_size_are_told_apart_by_a_token() -> None:
    files = models.ModelFiles(Path("t"), "t", 3, 0, 1, 1), models.ModelFiles(Path("d"), "d", 3, 0, 1, 1)
    with pytest.raises(SpecwiseError, match=r"token 'b' is id 1 in the target t, 2 in the draft d;"):
        models.check_vocab(*files, _Tok({"a": 0, "b": 1, "c": 2}), _Tok({"a": 0, "c": 1, "b": 2}))
    with pytest.raises(SpecwiseError, match=r"target t has 3 tokens \(3 embedding rows\), draft d has 2"):
        models.check_vocab(*files, _Tok({"a": 0, "b": 1, "c": 2}), _Tok({"a": 0, "b": 1}))


class _CharTokenizer:
    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


def _loaded(context: int | None) -> Loaded:
    files = models.ModelFiles(Path("t"), "t", 3, 0, 1, 1, context)
    return Loaded(files, None, None, None, _CharTokenizer())


def test_the_prompt_room_is_what_the_context_leaves() -> None:
    settings = ProfileSettings(max_new_tokens=16, k_values=(1, 4))
    assert prompt_limit(_loaded(None), settings) == settings.max_prompt_tokens == 1024
    assert prompt_limit(_loaded(8192), settings) == 1024
    assert prompt_limit(_loaded(64), settings) == 64 - 16 - MAX_K - 1  # room for --verify-k's drafts too
    with pytest.raises(SpecwiseError, match=r"leave no room for a prompt in the model's context of 30 tokens"):
        prompt_limit(_loaded(30), settings)


def test_prompts_are_cut_to_the_room_and_counted_in_one_tokenization() -> None:
    settings = ProfileSettings(max_new_tokens=16, k_values=(1, 4))
    room = 64 - 16 - MAX_K - 1
    prompts = [Prompt("a" * room), Prompt("b" * (room + 1) + "XYZ"), Prompt("short")]
    prepared = prepare_prompts(_loaded(64), prompts, settings)
    assert (prepared.limit, prepared.truncated) == (room, 1)
    assert [len(x) for x in prepared.ids] == [room, room, 5]
    assert prepared.ids[1][-3:] == [ord("X"), ord("Y"), ord("Z")]  # the last tokens are kept
    assert prepare_prompts(_loaded(None), prompts, settings).truncated == 0  # 1,024 tokens hold them all
