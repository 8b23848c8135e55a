"""Driving the app without a terminal (`App.run_test`): the waits the tests, the screenshot script
and the benchmarks share.

Each wait polls between UI frames until the app is in the state asked for; the timeout is a guard
against a hang (it raises `TimeoutError` naming what never happened), never a timing assertion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

WAIT_S = 60.0


async def until(
    pilot, predicate: Callable[[], object], what: str = "condition", timeout: float = WAIT_S
) -> None:
    """Poll `predicate` between UI frames until it holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await pilot.pause(0.01)


async def ready(pilot, timeout: float = WAIT_S) -> None:
    """Until the engine is open (the session started in its worker) and a frame drew it."""
    await until(pilot, pilot.app.engine_ready.is_set, "the engine", timeout)
    await pilot.pause()


async def settle(pilot, timeout: float = WAIT_S) -> None:
    """Until the running turn has ended and the chat has rendered every event it posted."""
    app = pilot.app
    await until(pilot, lambda: not app.busy, "the turn to end", timeout)
    await app.workers.wait_for_complete()
    await pilot.pause()
    await until(pilot, lambda: not app.chat.streaming, "the answer to render", timeout)
    await pilot.pause()
