"""The engine's notices, worded in one place: a part says what happened as a fact, this words it.

    self.host.emit(notice(RewindDone(messages=12)))    # a Notice with describe's text, level and code, and the fact

Each module registers the words of one area's facts (`app.model.notice_facts.<area>`) on `describe`, the one
presenter of the chat, `-p` and the logs; importing this package registers them all. Light, like describe:
app.model, app.sizes and app.textsafe only.
"""

from __future__ import annotations

from typing import cast

from app.engine.describe import describe
from app.engine.notice_words import (  # noqa: F401  (each registers its facts' words on describe)
    budget,
    compaction,
    gateways,
    history,
    images,
    mcp,
    memory,
    recovery,
    routes,
    session,
    tools,
    turn,
)
from app.model.events import Notice, NoticeLevel
from app.model.notice_facts import NoticeFact


def notice(fact: NoticeFact) -> Notice:
    """The notice that tells `fact`, in describe's words."""
    line = describe(fact)
    if (
        line is None
    ):  # a fact without words is a programming error, caught by tests/engine/test_notice_words.py
        raise TypeError(f"no words for the notice fact {type(fact).__name__} (app.engine.notice_words)")
    level = cast(NoticeLevel, line.level if line.level in ("info", "warn", "error") else "info")
    return Notice(line.text, level=level, code=line.code or fact.code, fact=fact)


__all__ = ["describe", "notice"]
