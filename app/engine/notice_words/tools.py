"""The words of the tools notices (facts in app.model.notice_facts.tools)."""

from __future__ import annotations

__all__: list[str] = []
