"""The facts of the images notices (worded by app.engine.notice_words.images)."""

from __future__ import annotations

__all__: list[str] = []
