"""Issue 12's seams, kept: no function over 80 lines in src/specwise, and no public function with untyped
``dict[str, Any]`` / ``Any`` parameters or return that another package uses (scripts/check_seams.py). The checker
itself is tested on a small made-up package tree: each way one package can reach another's function is seen."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_seams.py"


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_seams", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checker = _load_checker()


@pytest.fixture(scope="module")
def trees() -> dict[Path, ast.Module]:
    return checker.parse_sources()


def test_no_function_is_over_80_lines(trees: dict[Path, ast.Module]) -> None:
    assert checker.long_functions(trees) == []


def test_no_untyped_function_crosses_a_package_boundary(trees: dict[Path, ast.Module]) -> None:
    assert checker.untyped_crossings(trees) == []


def test_nothing_outside_the_cli_imports_it(trees: dict[Path, ast.Module]) -> None:
    assert checker.cli_imports(trees) == []


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


UNTYPED_LIB = {
    "lib/__init__.py": "",
    "lib/mod.py": (
        "from typing import Any\n"
        "Event = dict[str, Any]\n"
        "def loose(x: dict[str, Any]) -> None: ...\n"
        "def aliased() -> list[Event]: ...\n"
        "def typed(x: int) -> int: ...\n"
        "def to_json() -> dict[str, Any]: ...\n"
    ),
}


@pytest.mark.parametrize(
    ("user", "found"),
    [
        ("from specwise.lib.mod import loose, typed\n", ["loose"]),
        ("from specwise.lib import mod\nmod.loose(1)\nmod.typed(1)\n", ["loose"]),
        ("from specwise.lib import mod as m\nm.aliased()\n", ["aliased"]),
        ("import specwise.lib.mod as z\nz.loose\n", ["loose"]),
        ("import specwise.lib.mod\nspecwise.lib.mod.aliased()\n", ["aliased"]),
        ("import specwise\nspecwise.lib.mod.loose.__name__\n", ["loose"]),
        ("from specwise.lib.mod import to_json, typed\nfrom specwise.lib import mod\nmod.typed(mod.to_json())\n", []),
    ],
)
def test_checker_sees_names_module_attributes_and_aliases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: str, found: list[str]
) -> None:
    root = tmp_path / "src" / "specwise"
    _tree(root, {**UNTYPED_LIB, "app/__init__.py": "", "app/use.py": user, "lib/same.py": user})
    monkeypatch.setattr(checker, "ROOT", root)
    crossings = checker.untyped_crossings(checker.parse_sources(root))
    assert [line.split()[1] for line in crossings] == found  # lib/same.py is the same package: never reported
    assert all(line.endswith("imported by specwise/app/use.py") for line in crossings)


def test_foreign_readers_are_exempt_only_where_they_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "src" / "specwise"
    reader = "from typing import Any\ndef read_toml() -> dict[str, Any]: ...\n"
    user = "from specwise.scenario.toml_loader import read_toml\nfrom specwise.lib.reader import read_toml\n"
    _tree(root, {"scenario/toml_loader.py": reader, "lib/reader.py": reader, "app/use.py": user})
    monkeypatch.setattr(checker, "ROOT", root)
    crossings = checker.untyped_crossings(checker.parse_sources(root))
    assert crossings == ["specwise/lib/reader.py:2 read_toml (untyped) imported by specwise/app/use.py"]


def test_long_functions_are_counted_from_def_to_last_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "src" / "specwise"
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    _tree(root, {"lib/long.py": f"def long():\n{body}\ndef short():\n    pass\n"})
    monkeypatch.setattr(checker, "ROOT", root)
    assert checker.long_functions(checker.parse_sources(root)) == ["specwise/lib/long.py:1 long 81 lines"]


def test_cli_imports_are_found_outside_cli_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "src" / "specwise"
    uses = {
        "lib/a.py": "def f():\n    from specwise.cli.common import positive_int\n",
        "lib/b.py": "from specwise import cli\n",
        "lib/c.py": "import specwise.cli.simulate as s\n",
        "lib/d.py": "from specwise.clinic import x\nfrom specwise import clip\nimport specwise.client\n",
        "cli/e.py": "from specwise.cli.common import positive_int\n",
        "__main__.py": "from specwise.cli import main\n",
    }
    _tree(root, uses)
    monkeypatch.setattr(checker, "ROOT", root)
    assert checker.cli_imports(checker.parse_sources(root)) == [
        "specwise/lib/a.py:2 imports specwise.cli.common",
        "specwise/lib/b.py:1 imports specwise.cli",
        "specwise/lib/c.py:1 imports specwise.cli.simulate",
    ]
