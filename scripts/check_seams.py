"""Architecture checks for issue 12: long functions, and untyped dicts crossing package boundaries.

    python scripts/check_seams.py            # prints findings, exits 1 if any

* a function longer than MAX_LINES lines (def line to last line) anywhere in src/specwise;
* a public function or method (no leading underscore) whose parameters or return are annotated ``dict[str, Any]``,
  ``Mapping[str, Any]``, ``list[dict[str, Any]]`` or ``Any``, and which is imported by another package. The JSON
  edges are exempt by name: ``to_json``/``from_json``/``to_dict``/``from_dict`` (a document's serialised form)
  and ``json_safe``/``print_json``/``write_json_atomic`` (writers of JSON).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "specwise"
MAX_LINES = 80
JSON_EDGES = {"to_json", "from_json", "to_dict", "from_dict", "json_safe", "print_json", "write_json_atomic", "dump"}
UNTYPED = ("dict[str, Any]", "Mapping[str, Any]", "dict[str, object]", "Any")


def package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def untyped(node: ast.expr | None) -> bool:
    if node is None:
        return False
    text = ast.unparse(node)
    return any(u == text or f"[{u}]" in text or text.startswith(f"{u} ") or f"| {u}" in text for u in UNTYPED) or (
        "dict[str, Any]" in text
    )


def main() -> int:
    files = sorted(ROOT.rglob("*.py"))
    long_functions: list[str] = []
    public_untyped: dict[tuple[str, str], str] = {}  # (package, name) -> where
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_LINES:
                    long_functions.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} {length} lines")
                if node.name.startswith("_") or node.name in JSON_EDGES:
                    continue
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                if any(untyped(a.annotation) for a in args) or untyped(node.returns):
                    public_untyped[(package_of(path), node.name)] = f"{path.relative_to(ROOT.parent)}:{node.lineno}"
    crossing: list[str] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        here = package_of(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("specwise."):
                there = node.module.split(".")[1]
                if there == here:
                    continue
                for alias in node.names:
                    where = public_untyped.get((there, alias.name))
                    if where:
                        crossing.append(f"{where} {alias.name} (untyped) imported by {path.relative_to(ROOT.parent)}")
    for line in long_functions:
        print(f"long function: {line}")
    for line in sorted(set(crossing)):
        print(f"untyped across packages: {line}")
    print(
        f"{len(long_functions)} functions over {MAX_LINES} lines; {len(set(crossing))} untyped imports across packages"
    )
    return 1 if long_functions or crossing else 0


if __name__ == "__main__":
    sys.exit(main())
