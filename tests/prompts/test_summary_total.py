"""The total row of ``specwise prompts`` (review s60: a category called "all" printed as a second "all" row)."""

from __future__ import annotations

from specwise.prompts.items import PromptItem
from specwise.prompts.summary import summarize


def _item(text: str, category: str | None) -> PromptItem:
    return PromptItem(prompt=text, workload_class=category)


def test_the_total_row_is_marked_and_never_shares_a_categorys_name() -> None:
    plain = summarize("f", [_item("a b", "x"), _item("c", "y")])
    assert [r.category for r in plain.rows] == ["x", "y", "all"]
    assert [r.total for r in plain.rows] == [False, False, True]
    assert plain.to_json()["categories"][-1] == {  # type: ignore[index]
        "category": "all",
        "requests": 2,
        "multi_turn": 0,
        "mean_length": 1.5,
        "max_length": 2,
        "total": True,
    }
    named_all = summarize("f", [_item("a b", "all"), _item("c", "x")])
    assert [r.category for r in named_all.rows] == ["all", "x", "(total)"]
    assert "total" not in named_all.rows[0].to_json()
    one = summarize("f", [_item("a", "x")])  # one category: no total row
    assert [(r.category, r.total) for r in one.rows] == [("x", False)]
