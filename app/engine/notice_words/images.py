"""The words of the images notices (facts in app.model.notice_facts.images)."""

from __future__ import annotations

__all__: list[str] = []
