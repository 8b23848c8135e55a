"""The facts of the routes notices (worded by app.engine.notice_words.routes)."""

from __future__ import annotations

__all__: list[str] = []
