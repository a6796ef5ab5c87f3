"""The example scenarios shipped inside the package (issue 14: from a wheel, ``examples/*.toml`` were missing).

Their only copy is ``examples/`` at the repository root; the package reaches it as ``specwise/examples_data``
(a link in the checkout, real files in the wheel). Names are paths without the suffix: ``advise/summarize-low-qps``,
``llama70b-4xh100``, ``launch/smollm2``, ``models/my-finetune`` (a model directory), ``datasets/sharegpt_sample``
(a prompt dataset). A scenario flag takes
``example:NAME`` for the packaged file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.fileio import write_files_atomic

EXAMPLE_PREFIX = "example:"
_KINDS = {
    "advise": "advise scenario",
    "launch": "bench --launch file",
    "models": "model directory",
    "datasets": "prompt dataset",
}
_DATASET_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True)
class Example:
    name: str  # e.g. "advise/summarize-low-qps"
    kind: str  # "simulate scenario", "advise scenario", "bench --launch file", "model directory"
    files: tuple[str, ...]  # paths under the examples root, e.g. ("advise/summarize-low-qps.toml",)
    description: str  # the file's own first line of prose

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "files": list(self.files), "description": self.description}


def root() -> Traversable:
    return resources.files("specwise") / "examples_data"


def _describe(text: str) -> str:
    """The first sentence of the file's leading comment (after the ``# specwise ...`` command that runs it)."""
    words: list[str] = []
    for line in text.splitlines():
        body = line.lstrip("#").strip()
        if not line.startswith("#") or (not body and words):
            break
        if body and not body.startswith(("specwise ", "--")) and not line.startswith("#   "):
            words.append(body)
    prose = " ".join(words)
    return re.split(r"(?<=\.)\s+(?=[A-Z])", prose, maxsplit=1)[0]


def _walk(node: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    out: list[tuple[str, Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            out.extend(_walk(child, rel + "/"))
        elif child.name.endswith((".toml", ".json", ".jsonl")):
            out.append((rel, child))
    return out


def list_examples() -> list[Example]:
    """Every shipped example, scenarios first."""
    found: dict[str, Example] = {}
    for rel, item in _walk(root()):
        top = rel.split("/", 1)[0] if "/" in rel else ""
        if top == "models":  # a directory is one example: models/NAME/config.json
            name = "/".join(rel.split("/")[:2])
            prev = found.get(name)
            files = (*prev.files, rel) if prev else (rel,)
            found[name] = Example(name, _KINDS["models"], files, "a local Hugging Face model directory (config.json)")
            continue
        if top == "datasets":  # JSON has no comment to describe it: the README's Prompts section does
            name = next(rel.removesuffix(s) for s in (*_DATASET_SUFFIXES, "") if rel.endswith(s))
            found[name] = Example(name, _KINDS[top], (rel,), "a prompt dataset for bench/profile --prompts")
            continue
        name = rel.removesuffix(".toml")
        found[name] = Example(name, _KINDS.get(top, "simulate scenario"), (rel,), _describe(item.read_text("utf-8")))
    order = {
        "simulate scenario": 0,
        "advise scenario": 1,
        "bench --launch file": 2,
        "model directory": 3,
        "prompt dataset": 4,
    }
    return sorted(found.values(), key=lambda e: (order[e.kind], e.name))


def find_example(name: str, scenarios: bool = False) -> Example:
    """An example by name, by its file path, or by its last part when that is unambiguous. ``scenarios``: a name
    that is none suggests and lists the scenarios only (the caller wants one)."""
    path = name.removeprefix(EXAMPLE_PREFIX).removeprefix("examples/").strip("/")
    key = next(path.removesuffix(s) for s in (".toml", *_DATASET_SUFFIXES, "") if path.endswith(s))
    examples = list_examples()
    for e in examples:
        if key == e.name or path in e.files:
            return e
    matches = [e for e in examples if e.name.rsplit("/", 1)[-1] == key]
    if len(matches) == 1:
        return matches[0]
    listed = [e for e in examples if e.kind.endswith("scenario")] if scenarios else examples
    if not matches:
        near = difflib.get_close_matches(key, [e.name for e in listed], n=3, cutoff=0.6)
        if near:
            raise SpecwiseError(f"{name!r} is not a shipped example; did you mean {', '.join(near)}?")
    names = ", ".join(e.name for e in (matches or listed))
    what = "is ambiguous" if matches else "is not a shipped " + ("scenario" if scenarios else "example")
    raise SpecwiseError(f"{name!r} {what}: {names} (specwise examples lists them)")


def example_text(example: Example) -> str:
    """The example's file (a model directory: its config.json)."""
    return (root() / example.files[0]).read_text("utf-8")


def example_path(name: str) -> Path:
    """The packaged file of a scenario named ``example:NAME`` (the installed package holds real files)."""
    item = root() / find_example(name).files[0]
    path = Path(str(item))
    if not path.is_file():  # a zipped install: no path to give
        raise SpecwiseError(f"{name}: the package is not installed as files; use specwise examples --copy DIR")
    return path


_USED_BY = {
    "bench --launch file": "specwise bench --launch",
    "model directory": "--target / --draft",
    "prompt dataset": "--prompts",
}


def scenario_example_path(name: str) -> Path:
    """:func:`example_path` for a ``--scenario``: an example that is not a scenario (a launch file, a dataset) is
    refused saying what it is and where it goes, not parsed as a scenario and refused for its keys."""
    example = find_example(name, scenarios=True)
    if not example.kind.endswith("scenario"):
        use = _USED_BY.get(example.kind, "specwise examples")
        raise SpecwiseError(
            f"{name!r} is a {example.kind}, not a scenario (it goes to {use}; specwise examples lists them)"
        )
    return example_path(name)


@dataclass(frozen=True)
class CopyResult:
    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]  # already there with the same bytes


def copy_examples(dest: Path, examples: list[Example], *, force: bool = False) -> CopyResult:
    """Copy the examples' files under ``dest`` (their layout kept: ``dest/advise/...``), all or nothing. A file
    already there with other contents is refused unless ``force``; one with the same bytes is left as it is."""
    if dest.exists() and not dest.is_dir():
        raise SpecwiseError(f"{dest}: is a file; --copy takes the directory to copy the examples into")
    plan: dict[Path, bytes] = {}
    unchanged: list[Path] = []
    clashes: list[str] = []
    for rel in (f for e in examples for f in e.files):
        data, path = (root() / rel).read_bytes(), dest / rel
        if path.is_file() and path.read_bytes() == data:
            unchanged.append(path)
            continue
        if path.exists() and not force:
            clashes.append(str(path))
        plan[path] = data
    if clashes:
        more = f" and {len(clashes) - 1} more" if len(clashes) > 1 else ""
        raise SpecwiseError(f"{clashes[0]}{more}: already there with other contents (--force overwrites)")
    try:
        for path in plan:
            path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecwiseError(f"{dest}: cannot create ({exc.strerror or exc})") from None
    write_files_atomic(plan)
    return CopyResult(tuple(plan), tuple(unchanged))
