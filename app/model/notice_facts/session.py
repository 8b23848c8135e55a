"""The facts of the session notices (worded by app.engine.notice_words.session)."""

from __future__ import annotations

__all__: list[str] = []
