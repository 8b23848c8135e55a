"""The facts of the turn notices (worded by app.engine.notice_words.turn)."""

from __future__ import annotations

__all__: list[str] = []
