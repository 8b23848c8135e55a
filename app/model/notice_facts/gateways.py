"""The facts of the gateways notices (worded by app.engine.notice_words.gateways)."""

from __future__ import annotations

__all__: list[str] = []
