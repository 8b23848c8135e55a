"""The facts of the budget notices: the byte cap in force, a request over it, `/cap reset`
(worded by app.engine.notice_words.budget)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class OverCapCompacting(NoticeFact):
    """The next request is predicted over the cap in force: the history is compacted before it is sent."""

    kind = "over_cap_compacting"
    code = "over_cap"
    predicted_bytes: int
    cap_bytes: int
    cap_source: str  # configured | learned | imported | assumed
    cap_detail: str  # where the cap comes from, as the cap says it ("max_payload from config.toml", …)
    target_bytes: int  # the compaction's target


@dataclass(frozen=True)
class CapReset(NoticeFact):
    """`/cap reset`: the learned (or assumed) cap of this endpoint forgotten, or none to forget."""

    kind = "cap_reset"
    code = "cap"
    forgotten: bool


__all__ = ["CapReset", "OverCapCompacting"]
