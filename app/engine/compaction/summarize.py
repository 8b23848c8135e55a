"""The L2 planned summary: render the older segment, ask the summarizer, gate the answer.

- `render_segment` (app.engine.compaction.render) fits the segment into the summarizer's budget (half its window in chars,
  floor `summarizer_floor_chars`): every message gets a fair share, over-long ones keep head and
  tail 3:1, stubs are restored from the archive where the original fits the share, and native
  tool calls are named (`→ shell: ls -la`).
- `quality_gate` (app.engine.compaction.quality) rejects refusals and answers too short for the segment (the floor scales with
  the segment's size, capped at `summary_min_chars_cap`, 80).
- `summarize_pass` replaces all but the last `summary_keep_messages` non-system messages with
  one user message, `SUMMARY_HEADER` + the summary + the markers of the archived segment and of
  every stub it held. Verbatim messages stay out of the summary and follow it. One retry on a
  rejected answer; a second rejection is reported (`report.ok = False`) so the pipeline falls
  back to L3.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    merge_entries,
    part_string,
)
from app.engine.compaction.pairing import ensure_starts_with_user, repair_pairing
from app.engine.compaction.quality import quality_gate
from app.engine.compaction.render import CHARS_PER_TOKEN, fit_rendering, summarizer_budget
from app.engine.compaction.segment import archive_segment, segment_sources
from app.engine.compaction.truncate import is_pinned, tail_boundary
from app.engine.compaction.verbatim import limit_verbatim, reappendable
from app.model.archive import MARKER_RE, ArchiveEntry, markers_in, recall_suffix
from app.model.messages import Message
from app.model.prompts import SUMMARY_HEADER, SUMMARY_SYSTEM
from app.sizes import format_size

Summarizer = Callable[[str, str], Awaitable[str]]


@dataclass(frozen=True)
class SummaryRoute:
    """A route a summary may be written on: its summarizer, the exact body bytes of a summary request
    carrying a given (system, user text), its effective byte cap now (read before every attempt: a refusal
    may have taught a tighter one) and its context window."""

    name: str
    ask: Summarizer
    request_bytes: Callable[[str, str], int]
    cap: Callable[[], int | None]
    window_tokens: int


@dataclass(frozen=True)
class ContextEngine:
    """An external summarizer (the seed's `context_engine = "mcp:NAME"`): `write(segment, budget_chars,
    instruction)` gets the same budgeted rendering the built-in summarizer reads. Its answer passes the
    same quality gate; an error, a timeout or an empty/rejected answer falls back to the built-in
    summarizer for that compaction."""

    name: str  # e.g. "mcp:context"
    write: Callable[[str, int, str], Awaitable[str]]
    timeout: float = 180.0


SUMMARY_ATTEMPTS = 2  # one retry on a rejected answer
SUMMARY_BUDGET_CHARS = (
    4096 * CHARS_PER_TOKEN
)  # what a summary may hold: the summarizer's max_tokens, in chars


# -- the pass -----------------------------------------------------------------------------------------


def summary_request(rendered: str, count: int, instructions: str | None) -> str:
    parts = []
    if instructions and instructions.strip():
        parts.append(
            "The user asked for this compaction with instructions. Follow them:\n" + instructions.strip()
        )
    parts.append(f"Conversation segment to summarize ({count} messages):\n\n{rendered}")
    parts.append("Write the summary now.")
    return "\n\n".join(parts)


def _clean_summary(text: str, known: set[str], ctx: PassContext) -> str:
    """The summarizer's text with any marker it invented defanged (every marker must resolve)."""

    def fix(match: re.Match[str]) -> str:
        key = match.group(1) or match.group(2)
        return match.group(0) if key in known or ctx.lookup(key) is not None else f"ccr:{key}"

    return MARKER_RE.sub(fix, text.strip())


async def _ask_engine(
    engine: ContextEngine, rendered: str, instructions: str | None, segment_chars: int, cap: int
) -> tuple[str | None, str]:
    """(summary, "") from the external engine, or (None, why it is not used)."""
    try:
        reply = await asyncio.wait_for(
            engine.write(rendered, SUMMARY_BUDGET_CHARS, (instructions or "").strip()), timeout=engine.timeout
        )
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        return None, f"no answer within {engine.timeout:g} s"
    except Exception as exc:  # the engine's failure is a fallback, never a crash
        return None, (str(exc) or type(exc).__name__)[:300]
    if not (reply or "").strip():
        return None, "empty answer"
    reply = reply.strip()[:SUMMARY_BUDGET_CHARS]
    ok, reason = quality_gate(reply, segment_chars, cap)
    return (reply, "") if ok else (None, reason)


async def summarize_pass(
    messages: Messages,
    ctx: PassContext,
    *,
    summarizer: Summarizer,
    instructions: str | None = None,
    window_tokens: int,
    context_engine: ContextEngine | None = None,
    routes: Sequence[SummaryRoute] = (),
) -> PassResult:
    """Replace the older segment with a gated summary; `report.ok` False (view unchanged) if none passes.

    `report.counts["calls"]` is how many times the summarizer was asked (0, 1 or 2).
    Cancellation (`asyncio.CancelledError`) propagates; a summarizer that raises or times out
    counts as a rejected answer. With a `context_engine` it is asked first; when it fails the
    built-in summarizer writes this summary (`report.engine` says which did, and why).

    `routes` bound the summary request by bytes: the first route whose cap leaves room for the segment
    rendered at its minimum (`summarizer_floor_chars`, or the whole segment when shorter) writes the
    summary, its request fitted under that cap (re-fitted before the retry, against the cap then); when
    no route has room, nothing is asked and `report.counts["no_room"]` is 1 (the pipeline falls back to
    L3). Without `routes`, `summarizer` on a window of `window_tokens` with no byte cap.
    """
    settings = ctx.settings
    entries: list[ArchiveEntry] = []
    view = tuple(messages)
    quarter = limit_verbatim(view, ctx, reason="summary")
    if quarter.changed:
        view, entries = quarter.messages, list(quarter.entries)
    systems = [m for m in view if m.role == "system"]
    non_system = [m for m in view if m.role != "system"]
    boundary = tail_boundary(non_system, settings.summary_keep_messages)
    segment, kept = non_system[:boundary], non_system[boundary:]
    pinned = [m for m in segment if is_pinned(m)]
    rest = [m for m in segment if not is_pinned(m)]
    if not rest:
        return PassResult(
            tuple(messages),
            [],
            Report("summary", ok=False, detail="nothing to summarize", counts={"calls": 0}),
        )

    lookup_ctx = ctx.with_entries(entries)
    floor_chars = settings.summarizer_floor_chars
    if not routes:
        routes = (SummaryRoute("", summarizer, lambda _system, _text: 0, lambda: None, window_tokens),)

    def render_for(route: SummaryRoute, suffix: str = "") -> str | None:
        return fit_rendering(
            rest,
            summarizer_budget(route.window_tokens, floor_chars),
            lookup_ctx.lookup,
            request_text=lambda rendered: summary_request(rendered, len(rest), instructions) + suffix,
            request_bytes=lambda text: route.request_bytes(SUMMARY_SYSTEM, text),
            cap=route.cap(),
            min_chars=floor_chars,
        )

    chosen: SummaryRoute | None = None
    rendered: str | None = None
    no_room: list[str] = []
    for route in routes:
        rendered = render_for(route)
        if rendered is not None:
            chosen = route
            break
        no_room.append(
            f"route {route.name}'s cap ({format_size(route.cap() or 0)}) leaves no room for the summary input "
            f"at its minimum ({floor_chars:,} chars, or the whole segment when shorter)"
        )
    if chosen is None or rendered is None:
        return PassResult(
            tuple(messages),
            [],
            Report("summary", ok=False, detail="; ".join(no_room), counts={"calls": 0, "no_room": 1}),
        )
    summarizer = chosen.ask
    request = summary_request(rendered, len(rest), instructions)
    segment_chars = sum(len(part_string(p)) for m in rest for p in m.parts)

    calls = 0
    reasons: list[str] = []
    answer: str | None = None
    engine_used = "local"
    if context_engine is not None:
        answer, why = await _ask_engine(
            context_engine, rendered, instructions, segment_chars, settings.summary_min_chars_cap
        )
        engine_used = (
            context_engine.name if answer is not None else f"local (fallback: {context_engine.name} — {why})"
        )
    for attempt in range(SUMMARY_ATTEMPTS if answer is None else 0):
        text = request
        if attempt > 0:  # fitted again: the suffix adds bytes, and a refusal may have taught a tighter cap
            suffix = f"\n\n(Your previous answer was rejected: {reasons[-1]}. Write the summary itself.)"
            again = render_for(chosen, suffix)
            if again is None:
                reasons.append(
                    f"no room for a retry under route {chosen.name}'s cap now ({format_size(chosen.cap() or 0)})"
                )
                break
            text = summary_request(again, len(rest), instructions) + suffix
        calls += 1
        try:
            reply = await asyncio.wait_for(summarizer(SUMMARY_SYSTEM, text), timeout=settings.summary_timeout)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            reasons.append(f"summarizer timed out after {settings.summary_timeout:g} s")
            continue
        except Exception as exc:  # the summarizer's failure is a failed attempt, never a crash
            reasons.append(f"summarizer error: {type(exc).__name__}: {exc}"[:300])
            continue
        ok, reason = quality_gate(reply or "", segment_chars, settings.summary_min_chars_cap)
        if ok:
            answer = reply
            break
        reasons.append(reason)
    if answer is None:
        detail = "; ".join(f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
        return PassResult(
            tuple(messages),
            [],
            Report("summary", ok=False, detail=detail, counts={"calls": calls}, engine=engine_used),
        )

    archiver = Archiver(ctx, "summary")
    archived = archive_segment(rest, archiver)
    if archived is None:
        return PassResult(
            tuple(messages),
            [],
            Report("summary", ok=False, counts={"calls": calls}, detail="segment too large to archive"),
        )
    entry, carried = archived
    known = {entry.key, *carried}
    clean = _clean_summary(answer, known, lookup_ctx)
    named = set(markers_in(clean))
    suffix = recall_suffix([entry.key, *(k for k in carried if k not in named)])
    text = f"{SUMMARY_HEADER}\n{clean}\n\n{suffix}"
    summary = Message.create(
        "user",
        text,
        origin="summary",
        archive_keys=tuple(markers_in(text)),
        source_ids=segment_sources(rest, ctx),
        turn=rest[-1].meta.turn,
    )
    candidate = tuple(systems) + (summary,) + tuple(reappendable(pinned, ctx)) + tuple(kept)
    entries = merge_entries(entries, archiver.entries)
    for step in (repair_pairing, ensure_starts_with_user):
        result = step(candidate, ctx, reason="summary")
        if result.changed:
            candidate = result.messages
            entries = merge_entries(entries, result.entries)
    before, after = ctx.measure(tuple(messages)), ctx.measure(candidate)
    by = f" by {engine_used}" if engine_used != "local" else ""
    if engine_used == "local" and chosen is not routes[0]:  # say so: the summary went to another route
        by += f" on route {chosen.name} ({'; '.join(no_room)})"
    line = (
        f"🧠 summary{by}: {len(rest)} messages → 1 ({len(clean):,} chars), "
        f"{format_size(before)} → {format_size(after)}" + (f", {len(pinned)} verbatim kept" if pinned else "")
    )
    return PassResult(
        candidate,
        entries,
        Report(
            "summary",
            line,
            True,
            {"calls": calls, "summarized": len(rest), "verbatim": len(pinned)},
            max(0, before - after),
            detail="; ".join(reasons),
            engine=engine_used,
            route=f"{chosen.name} ({'; '.join(no_room)})" if chosen is not routes[0] else "",
        ),
    )
