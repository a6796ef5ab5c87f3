"""A bench run's coroutine closed unfinished -- its event loop gone, the coroutine collected later, often in another
test -- awaits nothing on the way out: awaiting inside GeneratorExit is "coroutine ignored GeneratorExit", the
warning the fast tier printed now and then from run_plan (the HTTP session's close and _together's clean-up awaited)."""

from __future__ import annotations

import asyncio

from specwise.loadgen.client import ClientConfig, HttpSession
from specwise.loadgen.runner import _together


def _close_suspended(coro_fn: object) -> None:
    loop = asyncio.new_event_loop()
    coro = coro_fn()  # type: ignore[operator]
    task = loop.create_task(coro)
    loop.run_until_complete(asyncio.sleep(0.05))  # the coroutine is suspended inside
    assert not task.done()
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # abandoned on purpose
    coro.close()  # raised RuntimeError("coroutine ignored GeneratorExit") before
    loop.close()


def test_together_awaits_nothing_when_closed() -> None:
    async def run() -> None:
        await _together([asyncio.sleep(30), asyncio.sleep(30)])

    _close_suspended(run)


def test_the_http_session_awaits_nothing_when_closed() -> None:
    async def run() -> None:
        async with HttpSession(ClientConfig("http://127.0.0.1:9", "m"), 1):
            await asyncio.sleep(30)

    _close_suspended(run)
