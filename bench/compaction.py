"""Benchmark: the full planned compaction pipeline on synthetic 1, 5 and 10 MB sessions.

    python3 bench/compaction.py              # a table of per-size medians
    python3 bench/compaction.py --json       # one JSON line per size
    python3 bench/compaction.py --runs 9 --target-ratio 0.4 --summarizer fake

Sessions: 400 / 400 / 800 messages, a third of them large tool results (reads of a handful of
files with varied ranges, shell and grep outputs), the rest user prompts and assistant messages
with tool calls. The byte measure is the real provider measure — the Anthropic adapter's
`build(...).predicted_bytes` — when `app.providers.anthropic` is importable, else the size of
the messages as compact JSON. As in a live session, the measure's per-message cache is warm for
the original messages before timing (DESIGN.md §4: measuring is incremental); the derived
messages each run makes are measured cold.

The target is `--target-ratio` × the session's size (default 0.4, preflight's share of the cap).
With `--summarizer fake` an instant fake summarizer takes part (the summary runs only when the
trims do not reach the target); with `--summarizer none` the pipeline goes from the trims
straight to L3 when needed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.engine.compaction.context import PassContext
from app.engine.compaction.pipeline import run_pipeline
from app.model.messages import Message
from bench.common import SIZES, provider_measure, synthetic_session

FAKE_SUMMARY = (
    "The user and the assistant built and tested the project step by step: files under app/ were "
    "read and edited, the test suite was run repeatedly (→ shell: pytest -q) and the failures "
    "fixed. Next steps: finish the remaining modules and update the README."
)


async def fake_summarizer(system: str, text: str) -> str:
    return FAKE_SUMMARY


async def run_size(
    view: tuple[Message, ...], measure, target_ratio: float, summarizer, runs: int
) -> tuple[list[float], int, int, str]:
    """Time `runs` pipeline runs on `view` inside one event loop (loop start-up is not compaction)."""
    master = {m.id for m in view}
    timings: list[float] = []
    before = after = 0
    method = ""
    for _ in range(runs):
        before = measure(view)  # warm: a live session has every original message measured already
        ctx = PassContext(
            settings=Settings(),
            turn=max(m.meta.turn for m in view),
            measure=measure,
            target_bytes=int(before * target_ratio),
            is_master=lambda m: m.id in master,
        )
        start = time.perf_counter()
        result = await run_pipeline(view, ctx, trigger="auto", summarizer=summarizer, window_tokens=200_000)
        timings.append((time.perf_counter() - start) * 1000)
        after, method = measure(result.messages), result.method
    return timings, before, after, method


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON line per size")
    parser.add_argument("--runs", type=int, default=7, help="runs per size (median reported)")
    parser.add_argument("--target-ratio", type=float, default=0.4, help="target = ratio × session bytes")
    parser.add_argument("--summarizer", choices=("fake", "none"), default="fake")
    args = parser.parse_args(argv)

    measure, how = provider_measure()
    summarizer = fake_summarizer if args.summarizer == "fake" else None
    if not args.json:
        print(
            f"measure: {how}; target = {args.target_ratio:g} × size; summarizer: {args.summarizer}; "
            f"{args.runs} runs per size"
        )
        print(f"{'size':>6} {'msgs':>5} {'median ms':>10} {'min ms':>8} {'before':>12} {'after':>10}  method")
    for size_mb, messages in SIZES:
        view = synthetic_session(size_mb, messages)
        timings, before, after, method = asyncio.run(
            run_size(view, measure, args.target_ratio, summarizer, args.runs)
        )
        median = statistics.median(timings)
        if args.json:
            print(
                json.dumps(
                    {
                        "size_mb": size_mb,
                        "messages": len(view) - 1,
                        "median_ms": round(median, 2),
                        "bytes_before": before,
                        "bytes_after": after,
                    }
                )
            )
        else:
            print(
                f"{size_mb:>4}MB {len(view) - 1:>5} {median:>10.1f} {min(timings):>8.1f} {before:>12,} "
                f"{after:>10,}  {method}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
