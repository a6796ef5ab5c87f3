"""The README's console examples, as data: every ``$ specwise ...`` line of a ```console block, the output lines
shown under it, and what it needs to run (issue 17: the README must work as written).

Conventions the README follows (and this parser enforces):
- a command starts with ``$ `` and may continue over lines ending in ``\\``;
- a trailing ``# exit N`` comment gives the exit status the example has (default 0); other comments are prose;
- output lines under a command are checked as substrings of what it prints (whitespace collapsed); ``...`` and
  lines in parentheses are elisions;
- ``$`` lines that are not ``specwise`` (``make``, ``source``, ``git``) are set-up steps, not run here;
- ``> FILE`` after a command redirects its output (the file lands in the scratch directory).

What an example needs decides where it runs: ``fast`` (the default test tier), ``models`` (the SmolLM2 weights
from ``make models``: slow tier), ``ray`` (the optional Ray extra, a cluster started for the run: slow tier), or
``parse`` (a server or Ray cluster of the user's, or the 1.6 GB Qwen pair: only its arguments are checked, with
the real parser).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_EXIT = re.compile(r"#\s*exit\s+(\d)\b")


@dataclass(frozen=True)
class Example:
    line: int  # where the command starts in README.md
    command: str  # as written, continuation lines joined, comment removed
    argv: tuple[str, ...]  # after "specwise"
    exit_code: int
    shown: tuple[str, ...]  # output lines the README shows under it

    @property
    def needs(self) -> str:
        text = self.command
        if (
            any(s in text for s in ("--url", "--prometheus", "RUN_ID", "--executor ray:"))
            or "qwen2.5-coder" in text.lower()
        ):
            return "parse"  # the reader's own server or Ray cluster, or the 1.6 GB Qwen pair
        if "smollm2" in text:
            return "models"
        if "--executor ray" in text:
            return "ray"  # the optional extra, pip install 'specwise[ray]': a Ray cluster started for the run
        return "fast"

    @property
    def id(self) -> str:
        return f"L{self.line}:{' '.join(self.argv[:3])}"


def _strip_comment(line: str) -> tuple[str, int | None]:
    """The command without its trailing ``#`` comment (a ``#`` inside quotes stays), and any ``# exit N``."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        return line, None
    kept = shlex.join(words)
    m = _EXIT.search(line[len(line.split("#", 1)[0]) :]) if "#" in line else None
    return kept, int(m.group(1)) if m else None


def examples(text: str | None = None) -> list[Example]:
    lines = (README.read_text() if text is None else text).splitlines()
    out: list[Example] = []
    in_console = False
    current: list[str] = []
    start = 0
    shown: list[str] = []

    def close() -> None:
        if not current:
            return
        raw = " ".join(part.rstrip("\\").strip() for part in current)
        command, code = _strip_comment(raw)
        words = shlex.split(command)
        if ">" in words:  # "> FILE": stdout goes to the file, nothing is shown
            words = words[: words.index(">")]
        if words and words[0] == "specwise":
            kept = tuple(s for s in shown if s.strip() not in ("...", "") and not s.strip().startswith("("))
            out.append(Example(start, command, tuple(words[1:]), code or 0, kept))
        current.clear()
        shown.clear()

    for i, line in enumerate(lines, 1):
        if line.startswith("```"):
            if in_console:
                close()
            in_console = line.strip() == "```console"
            continue
        if not in_console:
            continue
        if current and current[-1].rstrip().endswith("\\"):
            current.append(line)
        elif line.startswith("$ "):
            close()
            current.append(line[2:])
            start = i
        elif current:
            shown.append(line)
    return out


def normalise(text: str) -> str:
    return " ".join(text.split())
