"""The words of the routes notices (facts in app.model.notice_facts.routes)."""

from __future__ import annotations

__all__: list[str] = []
