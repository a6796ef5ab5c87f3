"""Run every hardening case (two worker processes, each case bounded in time and memory) and print the table.

    python -m tests.hardening.table [--group TEXT] [--json OUT.json]

Exit 0 when every case had a clean outcome (and the expected code where one is set), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import multiprocessing.pool
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from tests.hardening.cases import Case, all_cases
from tests.hardening.harness import Outcome, run_case


def _one(case: Case) -> tuple[Case, Outcome]:
    return case, run_case(case.name, list(case.argv))


class _Worker(mp.get_context("fork").Process):  # type: ignore[misc]
    """A pool worker that may start processes of its own (a case runs simulate/advise with worker processes)."""

    @property
    def daemon(self) -> bool:
        return False

    @daemon.setter
    def daemon(self, value: bool) -> None:
        pass


class _Context(type(mp.get_context("fork"))):  # type: ignore[misc]
    Process = _Worker


def run_all(cases: list[Case], workers: int) -> list[tuple[Case, Outcome]]:
    """Fresh workers every few cases (a case's memory cap and leftovers do not reach the next ones)."""
    with mp.pool.Pool(workers, maxtasksperchild=10, context=_Context()) as pool:
        return pool.map(_one, cases, chunksize=1)


def verdict(case: Case, out: Outcome) -> str | None:
    """None when the outcome is what the case demands; else why not."""
    if not out.clean:
        return f"unclean (exit {out.code}): {out.first_line[:160]}"
    if case.expect is not None and out.code != case.expect:
        return f"exit {out.code}, expected {case.expect}: {out.first_line[:160]}"
    if case.fragment and case.fragment not in out.stderr:
        return f"message lacks {case.fragment!r}: {out.first_line[:160]}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", help="only groups containing this text")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [c for c in all_cases(Path(tmp)) if not args.group or args.group in c.group]
        results = run_all(cases, args.workers)
    by_group: dict[str, Counter[str]] = defaultdict(Counter)
    bad = []
    for case, out in results:
        why = verdict(case, out)
        by_group[case.group]["cases"] += 1
        by_group[case.group][f"exit {out.code}"] += 1
        if why:
            by_group[case.group]["FINDINGS"] += 1
            bad.append((case, why))
    print(f"{'input class':<24} {'cases':>5} {'exit 0':>6} {'exit 1':>6} {'exit 2':>6} {'findings':>8}")
    for group, c in by_group.items():
        print(f"{group:<24} {c['cases']:>5} {c['exit 0']:>6} {c['exit 1']:>6} {c['exit 2']:>6} {c['FINDINGS']:>8}")
    total = sum(c["cases"] for c in by_group.values())
    print(f"{'total':<24} {total:>5} {'':>6} {'':>6} {'':>6} {len(bad):>8}")
    for case, why in bad:
        print(f"  [{case.group}] {case.name}: {why}", file=sys.stderr)
    if args.json:
        doc = [
            {"group": c.group, "case": c.name, "argv": list(c.argv), "exit": o.code, "stderr": o.first_line}
            for c, o in results
        ]
        args.json.write_text(json.dumps(doc, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
