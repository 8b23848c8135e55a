"""`/blocked` and `bulkhead probe --content`: find what the gateway refuses in a session's request, then
(optionally) withhold it. One driver for both front ends.

    plan = blocked_plan(engine)                       # parts and the most probes it may send (ask first)
    report = await find_blocked(engine, on_probe=...) # BlockedReport: the finding (or none), probes sent
    outcome = withhold(engine.session, report.finding)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.engine.content_finder import ContentFinder, Finding, ProbeFailed, RequestPart, Verdict, request_parts
from app.engine.failures import WAF_BLOCK, Failure, classify
from app.providers.base import ProviderError
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.turn import Engine

TRANSIENT_RETRIES = 2


@dataclass(frozen=True)
class BlockedPlan:
    parts: tuple[RequestPart, ...]
    max_probes: int
    sends_text: str  # what each probe carries, in words, for the question

    @property
    def question(self) -> str:
        return (
            f"Find the refused text: at most {self.max_probes} probe requests through this route "
            f"(they cost nothing at the model), each carrying part of the conversation ({self.sends_text}) "
            f"to the gateway. Go on?"
        )


@dataclass(frozen=True)
class BlockedReport:
    finding: Finding | None
    probes: int
    message: str

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": "result", "probes": self.probes, "message": self.message}
        data["finding"] = self.finding.to_json() if self.finding else None
        return data


def blocked_plan(engine: Engine) -> BlockedPlan:
    openai_wire = engine.route.provider == "openai"  # chat and Responses carry arguments as a JSON string
    parts = tuple(
        request_parts(
            engine.session.view.messages, engine.system, engine.tools, arguments_as_json=openai_wire
        )
    )
    finder = ContentFinder(_never, max_probes=engine.settings.content_probe_max)
    kinds = sorted({p.kind.replace("_", " ") for p in parts})
    return BlockedPlan(
        parts,
        finder.plan(parts),
        "messages, tool results, instructions or tool definitions: " + ", ".join(kinds),
    )


async def _never(texts: Sequence[str]) -> Verdict:  # pragma: no cover - plan() sends nothing
    raise AssertionError("plan() sends no probe")


def provider_verdicts(engine: Engine) -> Callable[[Sequence[str]], Any]:
    """send(texts) -> "passed" | "blocked" through the session's provider (its probe_texts)."""
    provider = engine.provider

    async def send(texts: Sequence[str]) -> Verdict:
        for attempt in range(TRANSIENT_RETRIES + 1):
            try:
                await provider.probe_texts(texts)
                return "passed"
            except ProviderError as error:
                failure = classify(error)
                if failure.kind == WAF_BLOCK:
                    return "blocked"
                if _provider_answered(failure, error):  # e.g. the 400 for our max_tokens: 0: it got through
                    return "passed"
                if failure.transient and attempt < TRANSIENT_RETRIES:
                    await engine.sleep(min(2.0, 0.5 * (attempt + 1)))
                    continue
                raise ProbeFailed(f"a probe failed: {display_line(failure.reason)}") from error
        raise ProbeFailed("a probe kept failing")  # pragma: no cover - the loop returns or raises

    return send


def _provider_answered(failure: Failure, error: ProviderError) -> bool:
    """The provider itself answered (JSON 4xx about the probe): the gateway let the probe through."""
    body = (error.body or error.message or "").lstrip()
    return (
        failure.kind in ("context_overflow", "other")
        and not failure.transient
        and error.status is not None
        and 400 <= error.status < 500
        and not body.lower().startswith(("<!doctype", "<html"))
    )


async def find_blocked(
    engine: Engine, *, on_probe: Callable[[int, str, Verdict], None] | None = None
) -> BlockedReport:
    plan = blocked_plan(engine)
    finder = ContentFinder(provider_verdicts(engine), max_probes=plan.max_probes, on_probe=on_probe)
    try:
        finding = await finder.find(plan.parts)
    except ProbeFailed as exc:
        return BlockedReport(None, finder.probes, str(exc))
    except asyncio.CancelledError:
        raise
    if finding is None:
        return BlockedReport(
            None,
            finder.probes,
            "every part passes the gateway on its own: the block is gone, or the gateway refuses a "
            "combination of parts (try /blocked after the next refusal)",
        )
    span = display_line(finding.span[:300])
    return BlockedReport(
        finding,
        finder.probes,
        f"the gateway refuses {finding.part.label}, lines {finding.line_start}-{finding.line_end}: “{span}” "
        f"({finder.probes} probes)",
    )
