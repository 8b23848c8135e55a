"""The facts of the recovery notices: what a refused request taught (a cap, a window) and the floor diagnosis
(worded by app.engine.notice_words.recovery)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class WindowLearned(NoticeFact):
    """A context overflow stated a smaller window than bulkhead used: requests stay under it from now on."""

    kind = "window_learned"
    code = "window_learned"
    tokens: int  # the window the provider's error stated
    per_minute: bool  # it was the tokens-per-minute limit, not the model's context window


@dataclass(frozen=True)
class CapLearnedFromRejection(NoticeFact):
    """A payload rejection of a known size: the endpoint's cap is learned (¾ of it)."""

    kind = "cap_learned"
    code = "cap_learned"
    rejected_bytes: int
    cap_bytes: int
    endpoint: str


@dataclass(frozen=True)
class CapAssumed(NoticeFact):
    """A payload rejection of an unknown size with no cap known: the fallback cap is assumed."""

    kind = "cap_assumed"
    code = "cap_assumed"
    cap_bytes: int


@dataclass(frozen=True)
class FloorNearLimit(NoticeFact):
    """The request base alone (system prompt, instructions, tools) comes close to what the gateway refused."""

    kind = "floor_near_limit"
    code = "floor"
    base_bytes: int
    refused_bytes: int | None  # the smallest body the endpoint is known to refuse
    diagnosis: str  # the diagnosis in app.engine.payload's words (also the receipt's reason)


@dataclass(frozen=True)
class FloorTooBig(NoticeFact):
    """The request base alone is at or over what the gateway refuses (or the cap in force): recovery cannot
    help, the turn fails."""

    kind = "floor_too_big"
    code = "floor"
    base_bytes: int
    refused_bytes: int | None  # the smallest body the endpoint is known to refuse
    cap_bytes: int | None  # the effective cap in force
    diagnosis: (
        str  # the diagnosis in app.engine.payload's or app.engine.recovery's words (also the turn's error)
    )


__all__ = ["CapAssumed", "CapLearnedFromRejection", "FloorNearLimit", "FloorTooBig", "WindowLearned"]
