"""What the monitor loop says besides its events: a start line on stderr (what it watches, how often, where the
history goes), each judged window as a JSON line with ``--json``, and a closing line on stderr (windows judged,
what is open at the end and why the exit status is what it is) -- so a healthy loop is not silent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specwise.monitor.events import WindowJudged
from specwise.monitor.loop import Emit, Target
from specwise.monitor.vet import FAULTS
from specwise.monitor.window import NOT_VLLM_NOTE

_SHOWN = 5  # reasons listed in the closing line before "and N more"


@dataclass
class LoopTally:
    """Counts judged windows; with ``log`` (``--json``) each one is also a JSON line."""

    log: Emit | None = None
    windows: int = 0

    def on_window(self, t: Target, now: float) -> None:
        self.windows += 1
        if self.log is not None and t.last is not None:
            self.log(WindowJudged(now, t.url, t.last.to_dict(), tuple(sorted(t.alerts.active))))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def start_line(watched: str, interval_s: float, window_s: float, duration_s: float | None, db: Path) -> str:
    """``watching 2 targets every 5 s (windows of 5 s); history in DB; Ctrl-C stops``."""
    until = f" for {duration_s:g} s" if duration_s else "; Ctrl-C stops"
    return f"watching {watched} every {interval_s:g} s (windows of {window_s:g} s){until}; history in {db}"


def watched(targets: int, prometheus: str | None) -> str:
    return f"the fleet via {prometheus}" if prometheus else _plural(targets, "target")


def reasons(targets: Sequence[Target]) -> list[str]:
    """Why the loop exits 1 (empty: it exits 0): each alert open at the end, each target down at the end (or that
    never answered), each restart during the run, each fault still reported (:attr:`Target.alerting`)."""
    out: list[str] = []
    for t in targets:
        out += [f"{rule} open on {t.url}" for rule in sorted(t.alerts.active)]
        if t.failing:
            why = t.failing.removeprefix(f"{t.url}: ")
            out.append(f"{t.url} down" if t.answered else f"{t.url} never answered ({why})")
        if t.restarts:
            out.append(f"{t.url} restarted" + (f" {t.restarts} times" if t.restarts > 1 else ""))
        never = "" if t.judged else " (no window judged over the run)"
        out += [f"{FAULTS.get(kind, kind)} on {t.url}{never}" for kind in sorted(t.faults.active)]
    return out


def closing_line(targets: Sequence[Target], windows: int, elapsed_s: float, stopped_by: str | None) -> str:
    """``stopped after 12 s (Ctrl-C): 9 windows judged over 2 targets; exit 1: low_acceptance_rate open on URL``,
    then which targets' last window was no vLLM page at all (a wrong port or path watched without a word);
    ``stopped_by``: what ended the loop before its duration (Ctrl-C, SIGTERM), None where it ran out."""
    why = reasons(targets)
    how = f" ({stopped_by})" if stopped_by else ""
    head = f"stopped after {elapsed_s:.0f} s{how}: {_plural(windows, 'window')} judged over "
    head += _plural(len(targets), "target")
    wrong = "".join(f"; {t.url}: {NOT_VLLM_NOTE}" for t in targets if t.last and NOT_VLLM_NOTE in t.last.notes)
    if not why:
        judged = "" if windows else " (no window completed: nothing was judged)"
        return head + f"; exit 0: no alert open, no target down, no restart during the run{judged}" + wrong
    return head + "; " + exit_1(why) + wrong


def exit_1(why: Sequence[str], status: str = "exit 1") -> str:
    """``exit 1: REASON; REASON; and N more``: why the monitor exits 1, the first few reasons named."""
    more = f"; and {len(why) - _SHOWN} more" if len(why) > _SHOWN else ""
    return f"{status}: {'; '.join(why[:_SHOWN])}{more}"


def once_line(fired: Sequence[tuple[str, str]]) -> str:
    """``--once``'s closing line on stderr when an alert fired (``fired``: (rule, where) pairs, where a server's
    URL or an instance): ``exit 1 (an alert fired): low_acceptance_rate on URL``, its reasons worded as loop
    mode's closing line words them."""
    why = dict.fromkeys(f"{rule} on {where}" for rule, where in fired)
    return exit_1(list(why), "exit 1 (an alert fired)")
