"""Architecture checks for issue 12: long functions, and untyped dicts crossing package boundaries.

    python scripts/check_seams.py            # prints findings, exits 1 if any

* a function longer than MAX_LINES lines (def line to last line) anywhere in src/specwise;
* a public function or method (no leading underscore) whose parameters or return are annotated ``dict[str, Any]``,
  ``Mapping[str, Any]``, ``list[dict[str, Any]]`` or ``Any``, and which another package uses: imported by name
  (``from specwise.x.y import f``), or reached through a module (``from specwise.x import y`` / ``import
  specwise.x.y as z`` / ``import specwise.x.y``, then ``y.f``, ``z.f`` or ``specwise.x.y.f``). The JSON edges are
  exempt by name: ``to_json``/``from_json``/``to_dict``/``from_dict`` (a document's serialised form) and
  ``json_safe``/``print_json``/``write_json_atomic`` (writers of JSON); readers of foreign documents by place
  (FOREIGN_READERS);
* a module outside src/specwise/cli that imports ``specwise.cli`` (``import specwise.cli...``, ``from specwise.cli...
  import``, ``from specwise import cli``): the library never depends on the command line, which parses arguments,
  calls the library and renders. The entry points that run the CLI are exempt (CLI_ENTRY_POINTS).

tests/test_architecture.py runs :func:`long_functions`, :func:`untyped_crossings` and :func:`cli_imports` and
expects none to find anything.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "specwise"
MAX_LINES = 80
JSON_EDGES = {"to_json", "from_json", "to_dict", "from_dict", "json_safe", "print_json", "write_json_atomic", "dump"}
# Readers of documents specwise does not define: what they take or return is someone else's format, parsed as is,
# and the typed value is built right behind them. They are the edge where untyped data enters, so they stay
# JSON-shaped rather than being wrapped; exempt by (file under src/specwise, name).
FOREIGN_READERS = {
    ("scenario/toml_loader.py", "read_toml"): "returns a scenario's TOML table as tomllib parsed it",
    ("specs/hf_config.py", "spec_from_hf_config"): "takes a Hugging Face config.json as parsed",
}
# Modules outside cli/ whose whole job is to run the command line (``python -m specwise``).
CLI_ENTRY_POINTS = {"__main__.py"}
UNTYPED = ("dict[str, Any]", "Mapping[str, Any]", "dict[str, object]", "Any")

Trees = dict[Path, ast.Module]


def package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def module_of(path: Path) -> str:
    """``specwise.report.models`` for src/specwise/report/models.py; a package's ``__init__`` is the package."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of_module(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def untyped(node: ast.expr | None, aliases: frozenset[str] = frozenset()) -> bool:
    """An annotation that is, or holds, one of UNTYPED or a module-level alias of one (``Event = dict[str, Any]``)."""
    if node is None:
        return False
    text = ast.unparse(node)
    spelled = any(u == text or f"[{u}]" in text or text.startswith(f"{u} ") or f"| {u}" in text for u in UNTYPED)
    return (
        spelled or "dict[str, Any]" in text or any(isinstance(n, ast.Name) and n.id in aliases for n in ast.walk(node))
    )


def _alias_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """Module-level ``Name = <type expression>`` and ``Name: TypeAlias = ...`` (Python 3.11: no ``type`` statement)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Subscript | ast.Name | ast.Attribute | ast.BinOp):
                yield node.targets[0].id, node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
            and ast.unparse(node.annotation).endswith("TypeAlias")
        ):
            yield node.target.id, node.value


def untyped_aliases(trees: Trees) -> frozenset[str]:
    """Names of module-level aliases of untyped annotations, through aliases of aliases."""
    assignments = [pair for tree in trees.values() for pair in _alias_assignments(tree)]
    found: frozenset[str] = frozenset()
    while True:
        more = found | {name for name, value in assignments if untyped(value, found)}
        if more == found:
            return found
        found = more


def parse_sources(root: Path = ROOT) -> Trees:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))}


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _where(path: Path, node: ast.stmt) -> str:
    return f"{path.relative_to(ROOT.parent)}:{node.lineno}"


def long_functions(trees: Trees) -> list[str]:
    """``path:line name N lines`` for every function longer than MAX_LINES."""
    out = []
    for path, tree in trees.items():
        for node in _functions(tree):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_LINES:
                out.append(f"{_where(path, node)} {node.name} {length} lines")
    return out


def _exempt(path: Path, name: str) -> bool:
    return name.startswith("_") or name in JSON_EDGES or (path.relative_to(ROOT).as_posix(), name) in FOREIGN_READERS


def public_untyped(trees: Trees) -> dict[tuple[str, str], str]:
    """(package, name) -> where, for public functions with an untyped parameter or return."""
    aliases = untyped_aliases(trees)
    found: dict[tuple[str, str], str] = {}
    for path, tree in trees.items():
        for node in _functions(tree):
            if _exempt(path, node.name):
                continue
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if any(untyped(a.annotation, aliases) for a in args) or untyped(node.returns, aliases):
                found[(package_of(path), node.name)] = _where(path, node)
    return found


def _bindings(tree: ast.Module, modules: set[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Names imported from specwise modules as (module, name), and local names bound to specwise modules."""
    names: list[tuple[str, str]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "specwise":
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else "specwise"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "specwise":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in modules:
                    aliases[alias.asname or alias.name] = submodule
                else:
                    names.append((node.module, alias.name))
    return names, aliases


def _chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the chain does not start at a plain name."""
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    return [current.id, *reversed(parts)]


def _attribute_uses(tree: ast.Module, aliases: dict[str, str], modules: set[str]) -> set[tuple[str, str]]:
    """(module, name) for every ``alias.name`` (through submodules too) where ``alias`` is a specwise module."""
    uses: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts = _chain(node)
        if parts is None or parts[0] not in aliases:
            continue
        module, rest = aliases[parts[0]], parts[1:]
        while rest and f"{module}.{rest[0]}" in modules:
            module, rest = f"{module}.{rest[0]}", rest[1:]
        if rest:
            uses.add((module, rest[0]))
    return uses


def _uses(tree: ast.Module, modules: set[str]) -> set[tuple[str, str]]:
    names, aliases = _bindings(tree, modules)
    return set(names) | _attribute_uses(tree, aliases, modules)


def untyped_crossings(trees: Trees) -> list[str]:
    """``where name (untyped) imported by path`` for every untyped public function another package uses."""
    untyped_functions = public_untyped(trees)
    modules = {module_of(path) for path in trees}
    crossing: set[str] = set()
    for path, tree in trees.items():
        here = package_of(path)
        for module, name in _uses(tree, modules):
            there = package_of_module(module)
            where = untyped_functions.get((there, name)) if there and there != here else None
            if where:
                crossing.add(f"{where} {name} (untyped) imported by {path.relative_to(ROOT.parent)}")
    return sorted(crossing)


def _imported_modules(tree: ast.Module) -> Iterator[tuple[ast.stmt, str]]:
    """(statement, module) for every module an import statement names, ``from a import b`` as ``a.b`` too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node, node.module
            for alias in node.names:
                yield node, f"{node.module}.{alias.name}"


def cli_imports(trees: Trees) -> list[str]:
    """``path:line imports specwise.cli...`` for every module outside src/specwise/cli (and CLI_ENTRY_POINTS) that
    imports the command line."""
    out = []
    for path, tree in trees.items():
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "cli" or rel.as_posix() in CLI_ENTRY_POINTS:
            continue
        seen = set()
        for node, module in _imported_modules(tree):
            if (module == "specwise.cli" or module.startswith("specwise.cli.")) and node.lineno not in seen:
                seen.add(node.lineno)
                out.append(f"{_where(path, node)} imports {module}")
    return out


def _print(prefix: str, lines: Iterable[str]) -> None:
    for line in lines:
        print(f"{prefix}: {line}")


def main() -> int:
    trees = parse_sources()
    long = long_functions(trees)
    crossing = untyped_crossings(trees)
    cli = cli_imports(trees)
    _print("long function", long)
    _print("untyped across packages", crossing)
    _print("library imports the CLI", cli)
    print(
        f"{len(long)} functions over {MAX_LINES} lines; {len(crossing)} untyped imports across packages; "
        f"{len(cli)} imports of specwise.cli outside it"
    )
    return 1 if long or crossing or cli else 0


if __name__ == "__main__":
    sys.exit(main())
