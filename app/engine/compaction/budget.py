"""Tool-result budgets: per result and per turn (DESIGN.md §4), scaled by `ctx.budget_scale`.

A result over `result_max_chars × scale` (20,000; 10,000 at recovery L1) keeps its head and
tail; the full text is archived (marker in the preview) and, when the context names a session
folder, also written to a spill file whose path the preview names. When a turn's results
together exceed `turn_budget_chars × scale` (200,000; 100,000 at L1), the largest results of the
turn are cut first: each gets a fair share of the turn budget.
"""

from __future__ import annotations

import math

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    derive,
    is_protected,
    unchanged,
    utf8_len,
)
from app.engine.compaction.cut import MIN_CUT_CHARS, preview, water_cap
from app.engine.compaction.microcompact import call_names
from app.model.archive import has_marker
from app.model.messages import Part, ToolResult
from app.sizes import format_size
from app.tools.budget import spill_note, spill_text


def enforce_budgets(messages: Messages, ctx: PassContext) -> PassResult:
    per_result = ctx.scaled(ctx.settings.result_max_chars)
    per_turn = ctx.scaled(ctx.settings.turn_budget_chars)

    # The fair share of each turn's budget, computed on sizes after the per-result cut.
    by_turn: dict[int, list[int]] = {}
    fixed: dict[int, int] = {}
    for message in messages:
        if message.role != "tool":
            continue
        for part in message.tool_results:
            if is_protected(message):
                fixed[message.meta.turn] = fixed.get(message.meta.turn, 0) + len(part.content)
            else:
                by_turn.setdefault(message.meta.turn, []).append(min(len(part.content), per_result))
    turn_cap: dict[int, float] = {}
    for turn, sizes in by_turn.items():
        budget = per_turn - fixed.get(turn, 0)
        if sum(sizes) + fixed.get(turn, 0) > per_turn:
            turn_cap[turn] = max(MIN_CUT_CHARS, water_cap(sizes, max(0, budget)))

    archiver = Archiver(ctx, "budget")
    names = call_names(messages)
    out = []
    cut_result = cut_turn = freed = spilled = 0
    for message in messages:
        if message.role != "tool" or is_protected(message):
            out.append(message)
            continue
        cap = turn_cap.get(message.meta.turn, math.inf)
        allowance = int(min(per_result, cap))
        parts: list[Part] = []
        changed = False
        for any_part in message.parts:
            if not isinstance(any_part, ToolResult) or len(any_part.content) <= allowance:
                parts.append(any_part)
                continue
            part = any_part
            keys = archiver.stash(part.content, message)
            if keys is None:
                parts.append(part)
                continue
            note = ""
            if ctx.session_folder is not None and not has_marker(part.content):
                try:  # the same spill files the tools write, so the model finds them the same way
                    note = spill_note(
                        spill_text(names.get(part.call_id, "tool"), part.content, ctx.session_folder)
                    )
                    spilled += 1
                except OSError:
                    pass
            new_content = preview(part.content, allowance, keys, note=note)
            if len(new_content) >= len(part.content):
                parts.append(part)
                continue
            freed += utf8_len(part.content) - utf8_len(new_content)
            parts.append(ToolResult(part.call_id, new_content, part.is_error))
            changed = True
            if allowance < per_result:
                cut_turn += 1
            else:
                cut_result += 1
        out.append(derive(message, ctx, parts) if changed else message)
    if not (cut_result or cut_turn):
        return unchanged(messages, "budget")
    bits = []
    if cut_result:
        bits.append(f"{cut_result} over {per_result:,} chars")
    if cut_turn:
        bits.append(f"{cut_turn} for the {per_turn:,}-char turn budget")
    line = f"✂ budgets: {cut_result + cut_turn} results cut ({', '.join(bits)}), {format_size(freed)} freed"
    return PassResult(
        tuple(out),
        archiver.entries,
        Report(
            "budget", line, True, {"per_result": cut_result, "per_turn": cut_turn, "spilled": spilled}, freed
        ),
    )
