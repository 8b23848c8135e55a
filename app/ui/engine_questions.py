"""Questions the engine asks the user in the TUI that no other module owns: moving a partial answer along the
fallback chain, and `/memory review` (the session's `memory_review`).

    session.set_fallback_asker(fallback_asker(app))   # set once the session is open (app.ui.engine_link)
    open_memory_review(app)                           # `/memory review`
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.api.memory import Fact


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
    from app.ui.screens.memory_review import MemoryReviewScreen

    session = app.session
    review = session.memory_review()
    if not review.facts:
        return review.said

    def accept(fact: Fact, text: str | None) -> str:
        return f"accepted into {session.accept_fact(fact, text)}"

    def reject(fact: Fact) -> str:
        session.reject_fact(fact)
        return f"rejected: {fact.text[:60]}"

    app.push_screen(
        MemoryReviewScreen(list(review.facts), accept=accept, reject=reject, target=review.target)
    )
    return None
