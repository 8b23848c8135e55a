"""The facts of the memory notices (worded by app.engine.notice_words.memory)."""

from __future__ import annotations

__all__: list[str] = []
