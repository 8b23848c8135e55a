"""The words of the turn notices (facts in app.model.notice_facts.turn)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.turn import (
    AnswerContinued,
    AnswerCutKept,
    FloorAboveTarget,
    ImagesStubbed,
    InterruptedTurnClosed,
    NoCapWarned,
    PreflightCompacting,
    PromptBlocked,
    RetryAsking,
    ToolRoundsStopped,
    TurnFailure,
)
from app.sizes import format_size, heaviest, sized_list
from app.textsafe import display_line

HEAVIEST_SERVERS = 3  # MCP servers named in the floor notice, the heaviest first


@describe.register
def _prompt_blocked(fact: PromptBlocked) -> Description:
    return Description(
        f"Prompt blocked by a UserPromptSubmit hook: {fact.reason}", level="warn", code=fact.code
    )


@describe.register
def _interrupted(fact: InterruptedTurnClosed) -> Description:
    return Description(
        "the previous request got no answer (it was interrupted); the model is told so, and "
        "your new prompt is sent on its own",
        code=fact.code,
    )


@describe.register
def _retry_asking(fact: RetryAsking) -> Description:
    return Description(
        "asking again for the last answer (the previous one stays in the session's log)", code=fact.code
    )


@describe.register
def _answer_continued(fact: AnswerContinued) -> Description:
    return Description(
        f"answer cut at the token limit — continuing with max_tokens {fact.max_tokens:,} "
        f"({fact.escalation}/{fact.escalations_max})",
        code=fact.code,
    )


@describe.register
def _answer_cut_kept(fact: AnswerCutKept) -> Description:
    return Description(
        f"answer cut at the token limit{' again' if fact.escalations else ''}; it is kept, marked partial",
        level="warn",
        code=fact.code,
    )


@describe.register
def _tool_rounds(fact: ToolRoundsStopped) -> Description:
    return Description(
        f"stopped after {fact.rounds} tool rounds in one turn; say how to continue",
        level="warn",
        code=fact.code,
    )


@describe.register
def _turn_failed(fact: TurnFailure) -> Description:
    return Description(fact.explanation, level="error", code=fact.code)


@describe.register
def _no_cap(fact: NoCapWarned) -> Description:
    return Description(fact.explanation, level="warn", code=fact.code)


@describe.register
def _preflight(fact: PreflightCompacting) -> Description:
    return Description(fact.explanation, code=fact.code)


@describe.register
def _floor(fact: FloorAboveTarget) -> Description:
    parts = list(zip(fact.parts, fact.part_bytes, strict=True))
    biggest = max(parts, key=lambda part: part[1])[0] if parts else "system prompt"
    servers = heaviest(zip(fact.servers, fact.server_bytes, strict=True), HEAVIEST_SERVERS)
    heavy = f"; the heaviest MCP servers {servers}" if servers else ""
    return Description(
        f"{fact.over} — but the request base alone ({format_size(fact.floor_bytes)}: "
        f"{sized_list(parts)}{heavy}) is above the compaction target "
        f"({format_size(fact.target_bytes)}): compacting history cannot help; reduce the biggest part, {biggest}",
        level="warn",
        code=fact.code,
    )


@describe.register
def _images_stubbed(fact: ImagesStubbed) -> Description:
    images = "an image" if fact.images == 1 else f"{fact.images} images"
    return Description(
        f"the provider could not read {images} in the conversation ({display_line(fact.reason)}); replaced by "
        f"a stub in the view (the log keeps the original) and sent again",
        level="warn",
        code=fact.code,
    )


__all__ = ["HEAVIEST_SERVERS"]
