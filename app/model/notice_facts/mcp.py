"""The facts of the mcp notices (worded by app.engine.notice_words.mcp)."""

from __future__ import annotations

__all__: list[str] = []
