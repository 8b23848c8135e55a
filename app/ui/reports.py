"""The reports the chat shows as tables (`/cost`, `/context`, `/memory`, the probe): rows of (label, value).

    title, rows = context_report(engine.context_report(), no_cap_warn_bytes=settings.no_cap_warn_bytes)
    await chat.add_report(title, rows)

Pure formatting: no widgets, no engine calls; outside text in a row (a file name, a problem) is made
safe here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from app.sizes import format_size
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.api import ContextReport
    from app.engine.api.memory import Instructions
    from app.model.costs import Counters

Rows = list[tuple[str, str]]


def _joined(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def cost_report(c: Counters) -> tuple[str, Rows]:
    """`/cost`: tokens, cost, the summarizer apart, compactions, rejections, recoveries."""
    rows = [
        ("requests", f"{c.requests:,} ({c.failed_requests:,} failed, {c.retries:,} retries)"),
        (
            "tokens",
            f"{c.input_tokens:,} in · {c.output_tokens:,} out · {c.cache_read_tokens:,} cache read · "
            f"{c.cache_write_tokens:,} cache write",
        ),
        (
            "cost",
            f"${c.cost_usd:.4f}" + (f" ({c.unpriced_requests} unpriced)" if c.unpriced_requests else ""),
        ),
        (
            "summarizer",
            f"{c.summarizer_calls} call{'' if c.summarizer_calls == 1 else 's'} · "
            f"{c.summarizer_input_tokens:,} in · "
            f"{c.summarizer_output_tokens:,} out · ${c.summarizer_cost_usd:.4f}",
        ),
        (
            "compactions",
            _joined(c.compactions)
            + (f" · by step: {_joined(c.compactions_by_level)}" if c.compactions_by_level else ""),
        ),
        ("last 4 only", str(c.l3_count)),
        ("rejections", _joined(c.rejections)),
        ("recoveries", f"{c.recoveries_ok} ok · {c.recoveries_failed} failed"),
        ("bytes saved", format_size(c.bytes_saved)),
    ]
    if c.memory_calls:
        rows.insert(
            4,
            (
                "memory",
                f"{c.memory_calls} call{'' if c.memory_calls == 1 else 's'} · {c.memory_input_tokens:,} in · "
                f"{c.memory_output_tokens:,} out · ${c.memory_cost_usd:.4f}",
            ),
        )
    from app.ui.widgets.cost import route_rows

    rows += [(f"route {name}" if name != "fallbacks" else name, text) for name, text in route_rows(c).items()]
    return "cost — this session", rows


def context_report(r: ContextReport, *, no_cap_warn_bytes: int) -> tuple[str, Rows]:
    """`/context`: the next request against the cap and the window, the views, the floor."""
    from app.engine.api.ui_text import describe_floor

    share = f" ({r.cap_share:.0%} of the cap)" if r.cap_share is not None else ""
    if r.effective_cap:
        detail = (
            r.cap_detail or r.cap_source
        )  # "learned 2026-… from a 413 rejection", not "learned: learned …"
        if not detail.startswith(r.cap_source):
            detail = f"{r.cap_source}: {detail}"
        cap = f"{format_size(r.effective_cap)} — {detail}"
    else:
        cap = (
            f"none known — a request over {format_size(no_cap_warn_bytes)} warns once; "
            f"/cap SIZE or max_payload sets one, a gateway's rejection teaches one"
        )
    rows = [
        ("next request", f"{format_size(r.predicted_bytes)}{share}"),
        ("cap", cap),
        (
            "tokens",
            f"≈{r.estimated_tokens:,} of a {r.context_window:,}-token window "
            f"({r.bytes_per_token:.2f} bytes/token)",
        ),
        ("messages", f"{r.messages_in_view:,} in the view · {r.messages_in_master:,} in the master log"),
        ("views", f"{r.views_stacked} stacked (/rewind compact pops one)"),
        ("floor", f"{format_size(r.floor_bytes)} ({describe_floor(r.floor_parts)})"),
    ]
    if r.context_engine == "provider":
        rows.append(
            (
                "engine",
                f"provider — {r.native_compaction}, from {r.compact_threshold:,} tokens"
                if r.native_compaction
                else "provider — none on this route: the local pipeline",
            )
        )
        cleared = r.provider_edits
        if cleared.get("edits"):
            rows.append(
                (
                    "provider cleared",
                    f"{cleared['edits']:,} edits · {cleared['tool_results']:,} tool "
                    f"results ({cleared['stubbed']:,} stubbed here, archived) · {cleared['tokens']:,} "
                    f"tokens · {cleared['expected_rebuilds']:,} cache rebuilds expected",
                )
            )
    return "context — the next request", rows


def memory_report(loaded: Instructions, memory_file: str) -> tuple[str, Rows]:
    """`/memory` without text: the instruction files in the system prompt."""
    rows = [
        (
            display_line(str(f.path)),
            f"{format_size(f.bytes)} · "
            + {"global": "yours, every project", "project": "this project"}.get(
                f.scope, f"imported by {display_line(f.imported_by.name if f.imported_by else '?')}"
            ),
        )
        for f in loaded.files
    ]
    rows += [("problem", display_line(p)) for p in loaded.problems]
    rows.append(
        ("/memory TEXT", f"adds a line to {display_line(memory_file)} (as does a prompt starting with #)")
    )
    title = (
        f"instructions — {format_size(loaded.bytes)} of the system prompt"
        if loaded.files
        else "instructions — no AGENTS.md or CLAUDE.md yet (/init writes one)"
    )
    return title, rows


def probe_report(route_name: str, result: Any) -> tuple[str, Rows]:
    """The probe's findings (`app.probe.ProbeResult`): each probe, the cap, how the gateway says no."""
    rows = [
        (
            f"#{p.number}",
            f"{format_size(p.size)} → {p.verdict}"
            + (f" ({p.status})" if p.status else "")
            + (f" {p.kind}" if p.kind else ""),
        )
        for p in result.probes
    ]
    rows.append(("cap", format_size(result.cap_bytes) if result.cap_bytes else "none found"))
    if result.kind:
        rows.append(("how it says no", f"{result.kind}: " + "; ".join(result.evidence[:3])))
    if result.suggestion:
        rows.append(
            (
                "suggestion",
                f'max_payload = "{format_size(result.suggestion)}" '
                f"(or `bulkhead probe --save` to remember it)",
            )
        )
    rows.append(("verdict", result.message or ("conclusive" if result.conclusive else "inconclusive")))
    return f"probe — route {route_name}", rows
