"""Nothing a bench run starts outlives it: when the run ends -- finished, failed or interrupted -- every task it
started (the scheduled requests, the live /metrics poller, the scrapes) has finished or been cancelled and awaited,
and its HTTP session and the garbage collector's freeze are undone, before the event loop is told.

Found as a rare CI warning in tests/loadgen/test_secrets.py: "Exception ignored in: <coroutine object
_schedule.<locals>.one>" (GeneratorExit in send_request, then aiohttp's clean-up hitting "Event loop is closed").
An earlier test's Ctrl-C, raised by the progress callback -- a bare callback on the event loop -- left the loop at
once, past every clean-up of the run; asyncio.run's shutdown, which cancels what is left, was itself cut short by
the next commit's callback raising again, so the loop closed with requests suspended in aiohttp and the collector
still frozen. The next run's ``gc.unfreeze`` made them collectable, and the one after (test_secrets) collected them.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from specwise.loadgen.client import ClientConfig, RequestSpec
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.runner import BenchPlan, LevelPlan, _together, run_plan
from specwise.loadgen.store import ResultStore
from specwise.traffic import Arrivals

REQUESTS = 24  # slow streams at 100 req/s: many in flight when the second record is committed


def _plan(url: str) -> BenchPlan:
    client = ClientConfig(base_url=url, model="mock", request_timeout_s=10.0, read_timeout_s=10.0)
    requests = tuple(RequestSpec(f"q{i}", "hello " * 4, 48) for i in range(REQUESTS))
    return BenchPlan(client, (LevelPlan(0, 100.0, requests),), Arrivals("poisson", 1.0), metrics_url=url + "/metrics")


def _run_until_it_raises(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, object]) -> BaseException:
    """Run ``coro`` on ``loop`` until something leaves the loop, and nothing after: as when a second Ctrl-C cuts
    asyncio.run's shutdown short (it cancels and runs whatever the run left pending)."""
    try:
        loop.run_until_complete(coro)
    except BaseException as exc:  # whatever left the loop is what the test looks at
        return exc
    raise AssertionError("the run was not interrupted")


def test_ctrl_c_in_the_progress_callback_leaves_no_task_behind(tmp_path: Path) -> None:
    held = [True]

    def ctrl_c(level: int, done: int, total: int, acceptance: float | None) -> None:
        if held[0] and done >= 2:  # as Ctrl-C lands, held down: on the event loop, at every commit from the 2nd
            raise KeyboardInterrupt

    store = ResultStore(tmp_path / "r.sqlite")
    loop = asyncio.new_event_loop()
    behaviour = MockBehaviour(ttft_s=0.01, chunk_interval_s=0.02, tokens_per_chunk=1)
    try:
        with MockServer(behaviour) as server:
            run = run_plan(_plan(server.url), store, "r", progress=ctrl_c, live_interval_s=0.01)
            raised = _run_until_it_raises(loop, run)
            left = asyncio.all_tasks(loop)  # pending: the run's, never finished nor awaited
            frozen = gc.get_freeze_count()
            held[0] = False
            if left:  # the old code's leftovers, cleaned up here so no other test sees them
                for task in left:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    finally:
        loop.close()
        gc.unfreeze()
        store.close()
    assert isinstance(raised, KeyboardInterrupt)
    assert not left, sorted(repr(t.get_coro()) for t in left)
    assert frozen == 0  # run_plan's gc.freeze undone: nothing the run made is kept from the collector
    done = ResultStore(tmp_path / "r.sqlite")
    try:
        assert 2 <= len(done.done_ids("r")) < REQUESTS  # the run stopped; what finished was kept
    finally:
        done.close()


def test_together_cancels_and_awaits_the_others_when_one_fails() -> None:
    finished: list[str] = []

    async def fails() -> int:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def slow() -> int:
        try:
            await asyncio.sleep(30)
        finally:
            finished.append("slow")  # its clean-up ran before _together raised
        return 1

    async def main() -> set[asyncio.Task[Any]]:
        with pytest.raises(ValueError, match="boom"):
            async with asyncio.timeout(10):
                await _together([slow(), fails()])
        assert finished == ["slow"]
        current = asyncio.current_task()
        return {t for t in asyncio.all_tasks() if t is not current}

    assert asyncio.run(main()) == set()


def test_together_returns_the_results_in_order() -> None:
    async def after(delay: float, value: int) -> int:
        await asyncio.sleep(delay)
        return value

    assert asyncio.run(_together([after(0.02, 1), after(0.0, 2)])) == [1, 2]
