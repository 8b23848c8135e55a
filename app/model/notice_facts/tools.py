"""The facts of the tools notices (worded by app.engine.notice_words.tools)."""

from __future__ import annotations

__all__: list[str] = []
