"""The speculative methods are named in one table (``specwise.methods``): no other module lists several of them in a
tuple, list or set of its own, so a method added to (or removed from) the table reaches every place that picks
methods by what they are (lookups, heads, the profilable ones)."""

from __future__ import annotations

import ast
from pathlib import Path

from specwise.compat.drafts import DraftSuggestion
from specwise.methods import LOOKUP_METHODS, METHOD_NAMES, PROFILABLE
from specwise.profiler import settings
from specwise.specs.draft import DraftChoice

SRC = Path(__file__).resolve().parents[1] / "src" / "specwise"

# Lists that name particular methods on purpose, not a kind of method:
ALLOWED = {
    # vLLM 0.8.2-0.33's own name guess, which concerns exactly these two methods
    ("engines/vllm_versions.py", ("draft_model", "eagle")),
}


def _method_lists(tree: ast.Module) -> list[tuple[str, ...]]:
    """Each tuple/list/set literal of two or more method names in ``tree`` (a ``Literal[...]`` type is not one)."""
    in_literal = {
        id(node)
        for sub in ast.walk(tree)
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == "Literal"
        for node in ast.walk(sub.slice)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in in_literal and len(node.elts) >= 2:
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in METHOD_NAMES]
            if len(names) == len(node.elts):
                found.append(tuple(names))
    return found


def test_no_module_lists_methods_outside_the_table() -> None:
    stray = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "methods.py":
            continue
        for names in _method_lists(ast.parse(path.read_text())):
            if (rel, names) not in ALLOWED:
                stray.append((rel, names))
    assert stray == []


def test_the_table_s_names_are_what_the_readers_use() -> None:
    assert settings.METHODS == PROFILABLE == ("draft_model", "ngram", "suffix")
    assert LOOKUP_METHODS == ("ngram", "suffix")
    for method in LOOKUP_METHODS:
        assert DraftChoice(method).label == method  # type: ignore[arg-type]
        assert not DraftSuggestion(method, method, True, ()).model_based
    assert DraftSuggestion("eagle-x", "eagle", True, ()).model_based
