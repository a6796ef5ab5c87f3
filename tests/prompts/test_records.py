"""Dataset records in every format specwise reads, the errors a malformed one gives, and no traceback on any JSON.

The ShareGPT fixture (examples/datasets/sharegpt_sample.json) was written for this test in the ShareGPT schema of
anon8231489123/ShareGPT_Vicuna_unfiltered; the Spec-Bench one in the format of Spec-Bench's question.jsonl (Xia et
al. 2024). Nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specwise.errors import SpecwiseError
from specwise.prompts.items import ChatMessage, Conversation, PromptItem, replay
from specwise.prompts.records import parse_record
from specwise.prompts.sources import Selection, load_prompts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "datasets"
SHAREGPT = EXAMPLES / "sharegpt_sample.json"
SPEC_BENCH = EXAMPLES / "spec_bench_sample.jsonl"


def test_sharegpt_file_first_turns_and_multi_turn_replay() -> None:
    first = load_prompts(SHAREGPT)
    assert [p.prompt[:24] for p in first] == [
        "I want to start running ",
        "Write a Python function ",
        "What is the difference b",
        "Suggest three names for ",
        "Translate 'Where is the ",
    ]  # the empty conversation is skipped; sw004's opening assistant turn is dropped
    assert first[2].history == (ChatMessage("system", "You are a concise assistant."),)
    every = load_prompts(SHAREGPT, Selection(turns="all"))
    assert len(every) == 9
    third = every[2]  # sw001's third user turn carries both earlier exchanges, with the dataset's answers
    assert third.prompt == "Should I run every day to get there faster?"
    assert [m.role for m in third.history] == ["user", "assistant", "user", "assistant"]
    assert third.history[1].content.startswith("Start with run-walk intervals")
    assert third.raw_text().startswith("I want to start running") and third.raw_text().endswith("faster?")


def test_spec_bench_categories_filter_and_second_turns_without_answers() -> None:
    items = load_prompts(SPEC_BENCH)
    assert len(items) == 30
    assert sorted({i.workload_class for i in items}) == [
        "math_reasoning",
        "mt_bench",
        "qa",
        "rag",
        "summarization",
        "translation",
    ]
    qa = load_prompts(SPEC_BENCH, Selection(("qa", "rag")))
    assert len(qa) == 10 and {i.workload_class for i in qa} == {"qa", "rag"}
    # MT-bench's second turns need the model's own first answer, which the file does not hold: first turns only
    assert len(load_prompts(SPEC_BENCH, Selection(("mt_bench",), "all"))) == 5
    with pytest.raises(SpecwiseError, match=r"no prompts of category coding; its categories: math_reasoning, mt_bench"):
        load_prompts(SPEC_BENCH, Selection(("coding",)))


def test_jsonl_prompt_and_messages_records(tmp_path: Path) -> None:
    f = tmp_path / "mixed.jsonl"
    lines = [
        {"prompt": "hi", "class": "chat", "max_tokens": 5},
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]},
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                      {"role": "user", "content": "c"}], "category": "multi", "temperature": 0.5},
    ]  # fmt: skip
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    items = load_prompts(f, Selection(turns="all"))
    assert [(i.prompt, i.workload_class, i.max_tokens, i.temperature, len(i.history)) for i in items] == [
        ("hi", "chat", 5, None, 0),
        ("Why?", None, None, None, 1),
        ("a", "multi", None, 0.5, 0),
        ("c", "multi", None, 0.5, 2),
    ]
    assert PromptItem.from_json(items[3].to_json()) == items[3]


def test_a_json_list_of_prompt_records_and_a_single_object(tmp_path: Path) -> None:
    f = tmp_path / "list.json"
    f.write_text(json.dumps([{"prompt": "one"}, {"prompt": "two", "category": "x"}], indent=2))
    assert [i.prompt for i in load_prompts(f)] == ["one", "two"]
    f.write_text(json.dumps({"prompt": "only"}, indent=2))  # a pretty-printed single record
    assert [i.prompt for i in load_prompts(f)] == ["only"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id": "a", "conversations": [{"from": "bot", "value": "x"}]}]',
         "f.json: record 1: conversations[0].from: expected one of human, gpt, system, got 'bot'"),
        ('[{"conversations": []}, {"conversations": [{"from": "human", "value": 3}]}]',
         "f.json: record 2: conversations[0].value: expected a string, got a number"),
        ('[{"conversations": "hi"}]', "f.json: record 1: conversations: expected a list, got a string"),
        ('[{"conversations": [1]}]', "f.json: record 1: conversations[0]: expected an object with 'from' and 'value'"),
        ('[{"id": 1}]', "f.json: record 1: no 'prompt', 'messages', 'conversations' or 'turns' field (keys: 'id')"),
        ("[1, 2]", "f.json: record 1: expected an object with one of prompt, messages, conversations, turns, got a"),
        ('[{"conversations": [}]', "f.json: not JSON (Expecting value at line 1 column 21)"),
        ('{"prompt": "a"}\n{"prompt": ""}\n', "f.json: line 2: prompt: expected a non-empty string, got an empty"),
        ('{"prompt": "a"}\n{bad\n', "f.json: line 2: not JSON (Expecting property name enclosed"),
        ('{"messages": [{"role": "tool", "content": "x"}]}', "f.json: line 1: messages[0].role: expected one of sy"),
        ('{"turns": ["a", null], "category": "qa"}', "f.json: line 1: turns[1]: expected a non-empty string, got null"),
        ('{"prompt": "x", "max_tokens": 0}', "f.json: line 1: max_tokens: expected a positive integer, got 0"),
        ('{"prompt": "x", "temperature": -1}', "f.json: line 1: temperature: expected a number >= 0, got -1"),
        # as JSON writes them, not Python's True / None / {...}
        ('{"prompt": "x", "max_tokens": true}', "f.json: line 1: max_tokens: expected a positive integer, got true"),
        ('{"prompt": "x", "temperature": false}', "f.json: line 1: temperature: expected a number >= 0, got false"),
        ('{"prompt": "x", "temperature": {"t": 1}}', "f.json: line 1: temperature: expected a number >= 0, got an obj"),
        ('{"prompt": "x", "temperature": NaN}', "f.json: line 1: temperature: expected a number >= 0, got NaN"),
        ('{"messages": [{"role": null, "content": "x"}]}', "f.json: line 1: messages[0].role: expected one of system, "
         "user, assistant, got null"),
        ('{"prompt": "x", "category": []}', "f.json: line 1: category: expected a non-empty string, got a list"),
        # before: a number was taken as the category "5" (a number as the prompt was refused)
        ('[{"prompt": "a", "class": 5}]', "f.json: record 1: class: expected a non-empty string, got a number"),
        ('{"prompt": "x", "category": 1.5}', "f.json: line 1: category: expected a non-empty string, got a number"),
        # one object over several lines names the record, not "line 1"; one line after blank lines names its line
        ('{\n  "prompt": "x",\n  "max_tokens": 0\n}\n', "f.json: record 1: max_tokens: expected a positive integer"),
        ('\n\n{"prompt": "x", "max_tokens": 0}\n', "f.json: line 3: max_tokens: expected a positive integer, got 0"),
        ("", "f.json: no prompts in the file"),
        ('[{"conversations": [{"from": "gpt", "value": "hello"}]}]', "f.json: no usable prompts"),
    ],
)  # fmt: skip
def test_malformed_records_name_the_file_record_and_field(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "f.json"
    f.write_text(text)
    with pytest.raises(SpecwiseError) as err:
        load_prompts(f)
    shown = str(err.value).replace(str(tmp_path) + "/", "")
    assert shown.startswith(message) and "\n" not in shown


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(["prompt", "messages", "conversations", "turns", "from", "value", "role", "content",
                        "category", "class", "max_tokens", "temperature"])  # fmt: skip
SHAPED = st.recursive(
    JSON,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner | st.sampled_from(
        ["human", "gpt", "system", "user", "assistant", "x"]), max_size=5),
    max_leaves=25,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(SHAPED)
@example({"\n": None})  # a key with a newline once made a two-line message
def test_any_json_record_parses_or_is_one_clear_error(data: object) -> None:
    try:
        conv = parse_record(data, "line 1", "f.jsonl")
    except SpecwiseError as exc:
        assert str(exc).startswith("f.jsonl: line 1") and "\n" not in str(exc)
        return
    if conv is not None:
        assert isinstance(conv, Conversation) and conv.turns
        for item in replay(conv, "all"):
            assert isinstance(item.prompt, str) and item.prompt
            assert all(m.role in ("system", "user", "assistant") for m in item.messages())


@settings(max_examples=40, deadline=None)
@given(st.lists(SHAPED, max_size=4), st.sampled_from(["json", "jsonl"]))
def test_any_json_file_loads_or_is_one_clear_error(tmp_path_factory: pytest.TempPathFactory, records: list[object],
                                                   form: str) -> None:  # fmt: skip
    f = tmp_path_factory.mktemp("h") / f"p.{form}"
    f.write_text(json.dumps(records) if form == "json" else "\n".join(json.dumps(r) for r in records))
    try:
        items = load_prompts(f, Selection(turns="all"))
    except SpecwiseError as exc:
        assert str(exc).startswith(str(f)) and "\n" not in str(exc)
        return
    assert items and all(isinstance(i, PromptItem) for i in items)
