"""`/blocked` and `bulkhead probe --content`: find what the gateway refuses in a session's request, then
(optionally) withhold it. One driver for both front ends.

    plan = blocked_plan(engine)                       # parts and the most probes it may send (ask first)
    report = await find_offline(engine)               # first, when the offline-waf extra is installed: the
                                                      # local Core Rule Set at PL1-PL4, zero requests
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
    probes: int  # requests sent to the gateway (0 offline)
    message: str
    offline: bool = False  # judged by the local Core Rule Set (app.engine.offline_waf), nothing sent
    paranoia: int | None = None  # offline: the lowest paranoia level that refuses the request
    rules: tuple[str, ...] = ()  # offline: the CRS rules the span matches ("942100 SQL Injection …")
    evaluations: int = 0  # offline: local evaluations made

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": "result", "probes": self.probes, "message": self.message}
        data["finding"] = self.finding.to_json() if self.finding else None
        if self.offline:
            data["offline"] = {
                "paranoia": self.paranoia,
                "rules": list(self.rules),
                "evaluations": self.evaluations,
            }
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


def lines_words(finding: Finding) -> str:
    """ "line 3", "lines 3-5", "lines 3, 10-11": every line that holds a refused span."""
    ranges = finding.line_ranges
    words = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
    return f"line {words}" if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else f"lines {words}"


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
        f"the gateway refuses {finding.part.label}, {lines_words(finding)}: “{span}” "
        f"({finder.probes} probes)",
    )


OFFLINE_MAX_EVALUATIONS = 800  # local evaluations (a few ms each) before the offline search gives up


async def find_offline(
    engine: Engine,
    *,
    paranoia: int | None = None,
    on_probe: Callable[[int, str, Verdict], None] | None = None,
) -> BlockedReport:
    """The session's request judged by the local Core Rule Set (`app.engine.offline_waf`), nothing sent: at
    `paranoia`, or at the lowest of PL1-PL4 that refuses it; the part, the span and the rules it matches.
    A report without a finding says why (the extra or the rules missing, or no level refuses it)."""
    from app.engine.offline_waf import PARANOIA_LEVELS, LocalCrs, offline_unavailable

    why = offline_unavailable()
    if why:
        return BlockedReport(None, 0, why, offline=True)
    parts = blocked_plan(engine).parts
    texts = [text for part in parts for text in part.wire_texts]
    levels = (paranoia,) if paranoia else PARANOIA_LEVELS
    evaluations = 0
    for level in levels:
        crs = await asyncio.to_thread(LocalCrs, level)
        try:
            if await asyncio.to_thread(crs.judge, texts) == "passed":
                evaluations += crs.evaluations
                continue
            finder = ContentFinder(_threaded(crs), max_probes=OFFLINE_MAX_EVALUATIONS, on_probe=on_probe)
            try:
                finding = await finder.find(parts)
            except ProbeFailed as exc:
                return BlockedReport(None, 0, f"offline: {exc}", offline=True, paranoia=level)
            evaluations += crs.evaluations
            if finding is None:
                continue
            await asyncio.to_thread(crs.judge, [finding.span])
            rules = crs.last_rules
        finally:
            crs.close()
        span = display_line(finding.span[:300])
        named = "; ".join(rules[:4]) or "the anomaly score of several rules"
        return BlockedReport(
            finding,
            0,
            f"the OWASP Core Rule Set (paranoia level {level}, checked here: nothing was sent) refuses "
            f"{finding.part.label}, {lines_words(finding)}: “{span}” — rule {named}",
            offline=True,
            paranoia=level,
            rules=rules,
            evaluations=evaluations + 1,  # and the span judged alone, for its rules
        )
    where = f"paranoia level {paranoia}" if paranoia else "paranoia levels 1-4"
    return BlockedReport(
        None,
        0,
        f"the OWASP Core Rule Set ({where}, checked here) refuses nothing in this request: the gateway "
        f"judges by rules of its own, so only live probes can find the part",
        offline=True,
        paranoia=paranoia,
        evaluations=evaluations,
    )


def _threaded(crs: Any) -> Callable[[Sequence[str]], Any]:
    async def send(texts: Sequence[str]) -> Verdict:
        return await asyncio.to_thread(crs.judge, texts)

    return send
