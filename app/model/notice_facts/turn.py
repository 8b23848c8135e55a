"""The facts of the turn notices: a prompt run to its answer, `/retry`, the preflight at each boundary
(worded by app.engine.notice_words.turn)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class PromptBlocked(NoticeFact):
    """A UserPromptSubmit hook blocked the prompt: nothing was sent."""

    kind = "prompt_blocked"
    code = "hook_block"
    reason: str  # the hook's reason, as it came


@dataclass(frozen=True)
class InterruptedTurnClosed(NoticeFact):
    """The previous prompt got no answer (Esc, a crash): the model is told, the new prompt goes on its own."""

    kind = "interrupted_turn_closed"
    code = "interrupted"


@dataclass(frozen=True)
class RetryAsking(NoticeFact):
    """`/retry` of a complete answer: asked again from the prompt that asked for it."""

    kind = "retry_asking"
    code = "retry"


@dataclass(frozen=True)
class AnswerContinued(NoticeFact):
    """An answer cut at max_tokens, continued with a larger max_tokens."""

    kind = "answer_continued"
    code = "escalation"
    max_tokens: int  # the new limit
    escalation: int  # this one's number (1, 2, …)
    escalations_max: int  # max_token_escalations


@dataclass(frozen=True)
class AnswerCutKept(NoticeFact):
    """An answer cut at max_tokens that can grow no further: kept, marked partial."""

    kind = "answer_cut_kept"
    code = "partial"
    escalations: int  # how many times it was continued before


@dataclass(frozen=True)
class ToolRoundsStopped(NoticeFact):
    """A turn stopped after the most tool round trips one turn may take."""

    kind = "tool_rounds_stopped"
    code = "tool_rounds"
    rounds: int


@dataclass(frozen=True)
class TurnFailure(NoticeFact):
    """The turn got no (complete) answer."""

    kind = "turn_failed"
    code = "turn_failed"
    explanation: str  # why and what to do, worded where the turn failed (the turn loop, recovery, chat_fit…)
    partial: bool  # part of the answer had been shown: it is kept, marked partial
    failure_kind: str | None  # the classified failure (app.engine.failure_record.Failure.kind), if any
    status: int | None  # its HTTP status, if any


@dataclass(frozen=True)
class NoCapWarned(NoticeFact):
    """A large history and no byte cap known: said once per session."""

    kind = "no_cap_warning"
    code = "no_cap_warning"
    predicted_bytes: int  # the next request, predicted
    explanation: str  # the preflight's sentence (app.engine.payload.preflight)


@dataclass(frozen=True)
class PreflightCompacting(NoticeFact):
    """Before a request: the history is compacted against the byte cap or the context window."""

    kind = "preflight_compacting"
    code = "preflight"
    trigger: str  # preflight (the byte cap) | auto (the context window)
    predicted_bytes: int
    target_bytes: int | None
    explanation: str  # the preflight's sentence (app.engine.payload.preflight)


@dataclass(frozen=True)
class FloorAboveTarget(NoticeFact):
    """The preflight would compact, but the request base alone is above the compaction target."""

    kind = "floor_above_target"
    code = "floor"
    trigger: str
    over: str  # what the preflight found over, in its words ("pre-flight: history 1.2 MB ≈ 90% of …")
    floor_bytes: int  # the request base: a request with no messages
    target_bytes: int
    parts: tuple[str, ...]  # the base's parts (system prompt, instructions, memory, tools…), in order
    part_bytes: tuple[int, ...]
    servers: tuple[str, ...]  # MCP servers, heaviest first
    server_bytes: tuple[int, ...]  # their full tool definitions


@dataclass(frozen=True)
class ImagesStubbed(NoticeFact):
    """The provider could not read an image in the view: stubbed in the view, sent again."""

    kind = "images_stubbed"
    code = "image"
    images: int
    reason: str  # the failure's reason (a provider's words)
    status: int | None


__all__ = [
    "AnswerContinued",
    "AnswerCutKept",
    "FloorAboveTarget",
    "ImagesStubbed",
    "InterruptedTurnClosed",
    "NoCapWarned",
    "PreflightCompacting",
    "PromptBlocked",
    "RetryAsking",
    "ToolRoundsStopped",
    "TurnFailure",
]
