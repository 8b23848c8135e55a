"""Questions the engine asks the user in the TUI that no other module owns: moving a partial answer along the
fallback chain (app.engine.fallback), and `/memory review` (app.engine.memory).

    engine.fallback.asker = fallback_asker(app)       # set once the engine is open (app.ui.engine_link)
    open_memory_review(app)                           # `/memory review`
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from app.textsafe import display_line


def fallback_asker(app: Any) -> Callable[[str], Awaitable[bool]]:
    """Ask, over everything, whether a partial answer goes on on the next route (y continues, n or Esc stops)."""

    async def ask(question: str) -> bool:
        from app.ui.screens.confirm import ConfirmScreen

        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(result: bool | None) -> None:
            if not future.done():
                future.set_result(bool(result))

        app.push_screen(
            ConfirmScreen(display_line(question), yes="Continue there", no="Stop here"), callback=answered
        )
        return await future

    return ask


def open_memory_review(app: Any) -> str | None:
    """`/memory review`: the facts waiting for review, in a screen; a sentence instead when there is none to show."""
    from app.engine.instructions import memory_file
    from app.ui.screens.memory_review import MemoryReviewScreen

    engine = app.engine
    worker = engine.memory
    if worker.mode == "off":
        return 'the memory worker is off (memory = "off" in config.toml); /memory TEXT still adds a line'
    if worker.mode == "auto":
        return (
            f'memory = "auto": facts are kept in {worker.path} (part of every request), not reviewed; '
            f'memory = "suggest" offers them here instead'
        )
    facts = worker.pending()
    if not facts:
        return "no facts wait for review — the memory worker suggests them as the conversation goes on"

    def accept(fact: Any, text: str | None) -> str:
        path = worker.accept(fact, text)
        return f"accepted into {path}"

    def reject(fact: Any) -> str:
        worker.reject(fact)
        return f"rejected: {fact.text[:60]}"

    app.push_screen(
        MemoryReviewScreen(facts, accept=accept, reject=reject, target=str(memory_file(engine.workspace)))
    )
    return None
