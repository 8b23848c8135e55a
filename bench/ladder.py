"""Benchmark: the recovery ladder's candidate building (L1, L2, L3 + shrink-to-fit), real provider measure.

    python3 bench/ladder.py             # table: per size × level, median ms
    python3 bench/ladder.py --json      # one JSON line per size × level, then the headline
    python3 bench/ladder.py --quick     # fewer runs

What one recovery attempt costs before anything is sent (DESIGN.md §6): `recovery_candidate(level,
view, ctx)` builds the candidate view, then the real request is rebuilt and measured with the
Anthropic adapter (`build(...).predicted_bytes`, system prompt and tool schemas included, as the
engine does) to check it is smaller than the rejected request. Sessions: `mixed_session` at
1/5/10 MiB. The scenario is a 413 on the whole session: rejected = its size, learned cap =
floor(0.75 × rejected), target = min(0.40 × cap, the window target) as `Recovery._target` computes.

Rows:
- L1 (pairing, halved tool-result budgets, long assistant cuts), L2 (keep the last 10),
  L3 (keep the last 4, each ≤ 4,000 chars, then shrink to the target) — each from the full view;
- L3 shrink: L3 with a tight target (the non-compactable floor + 3 KB), so shrink-to-fit has to
  cut the kept messages, measuring the real request after each round;
- walk: L1 → L2 → L3 as the engine walks them, each level on the previous candidate.

`candidate ms` is `recovery_candidate`; `total ms` adds rebuilding and measuring the request.
As in a live session, the adapter's per-message cache is warm for the original messages; the
derived messages each run makes are measured cold.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    SIZES,
    Output,
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    machine_note,
    make_adapter,
    median,
    mixed_session,
    parser,
    ratio,
)

MAX_TOKENS = 8192
WINDOW_TOKENS = 200_000
TIGHT_EXTRA = 3 * 1024


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0], runs=7)
    args = p.parse_args(argv)
    runs = args.runs or (3 if args.quick else 7)
    out = Output("ladder", args.json)

    from app.config import Settings
    from app.engine.compaction.context import PassContext
    from app.engine.compaction.pipeline import recovery_candidate
    from app.model.prompts import SYSTEM_PROMPT
    from app.tools.registry import TOOL_SPECS

    settings = Settings()
    tools = tuple(TOOL_SPECS)
    adapter = make_adapter("anthropic")

    def measure(view) -> int:
        return adapter.build(view, SYSTEM_PROMPT, tools, max_tokens=MAX_TOKENS).predicted_bytes

    floor = measure(())
    out.text(
        f"recovery ladder: candidate + rebuilt request measured (anthropic adapter, system + {len(tools)} "
        f"tools = {floor:,} B floor); {runs} runs; {machine_note()}"
    )
    out.text(
        f"{'size':>5} {'level':<10} {'cand ms':>8} {'total ms':>9} {'msgs':>10} {'bytes after':>12} "
        f"{'target':>10}  smaller"
    )
    headline = None
    walks: dict[int, float] = {}
    for size_mb, messages in SIZES:
        view = mixed_session(size_mb, messages)
        master = {m.id for m in view}
        rejected = measure(view)  # warm: the session was measured before it was sent
        cap = int(rejected * 0.75)
        window_target = int(settings.compact_target * (WINDOW_TOKENS - MAX_TOKENS) * 4.0)
        target = min(int(cap * settings.preflight_target), window_target)
        turn = max(m.meta.turn for m in view)

        def ctx_for(target_bytes: int, turn: int = turn, master: set[str] = master) -> PassContext:
            return PassContext(
                settings=settings,
                turn=turn,
                measure=measure,
                target_bytes=target_bytes,
                is_master=lambda message: message.id in master,
            )

        cases = [
            ("L1", (1,), target),
            ("L2", (2,), target),
            ("L3", (3,), target),
            ("L3 shrink", (3,), floor + TIGHT_EXTRA),
            ("walk", (1, 2, 3), target),
        ]
        for name, levels, goal in cases:
            cand_ms: list[float] = []
            total_ms: list[float] = []
            after = count = 0
            for _ in range(runs):
                candidate = view
                start = time.perf_counter()
                spent_building = 0.0
                for level in levels:
                    t0 = time.perf_counter()
                    candidate = recovery_candidate(level, candidate, ctx_for(goal)).messages
                    spent_building += time.perf_counter() - t0
                    after = measure(candidate)
                total_ms.append((time.perf_counter() - start) * 1000)
                cand_ms.append(spent_building * 1000)
                count = len(candidate)
            smaller = after < rejected
            record = {
                "size_mb": size_mb,
                "level": name,
                "candidate_ms": round(median(cand_ms), 3),
                "total_ms": round(median(total_ms), 3),
                "messages_before": len(view),
                "messages_after": count,
                "bytes_before": rejected,
                "bytes_after": after,
                "target_bytes": goal,
                "smaller": smaller,
                "fits": after <= goal,
            }
            out.record(
                record,
                f"{size_mb:>3}MB {name:<10} {fmt_ms(median(cand_ms)):>8} "
                f"{fmt_ms(median(total_ms)):>9} {len(view):>4}→{count:<5} {after:>12,} "
                f"{goal:>10,}  {'yes' if smaller else 'NO'}" + ("" if after <= goal else " (over target)"),
            )
            if name == "walk":
                walks[size_mb] = median(total_ms)
                headline = (size_mb, median(total_ms), rejected, after)
    if headline:
        size_mb, total, rejected, after = headline
        smallest = min(walks)
        out.headline(
            f"recovery ladder L1→L2→L3 candidates, {size_mb} MB session",
            f"{fmt_ms(total)} ms for all three, measured with the real request "
            f"({fmt_bytes(rejected)} → {fmt_bytes(after)})",
            f"{size_mb} MB / {smallest} MB walk: {fmt_ratio(ratio(total, walks[smallest]))}",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
