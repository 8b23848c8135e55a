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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Route, Settings  # noqa: E402
from app.engine.compaction.context import JsonMeasure, PassContext  # noqa: E402
from app.engine.compaction.pipeline import run_pipeline  # noqa: E402
from app.engine.messages import Message, Text, ToolCall, ToolResult  # noqa: E402
from app.engine.prompts import SYSTEM_PROMPT  # noqa: E402

MB = 1024 * 1024
SIZES = ((1, 400), (5, 400), (10, 800))
PATHS = [f"app/module_{i}.py" for i in range(12)]
FAKE_SUMMARY = ("The user and the assistant built and tested the project step by step: files under app/ were "
                "read and edited, the test suite was run repeatedly (→ shell: pytest -q) and the failures "
                "fixed. Next steps: finish the remaining modules and update the README.")


def filler(size: int, seed: int) -> str:
    line = f"{seed:05d} │ def handler_{seed}(request): return process(request, mode='fast')  # ✓ ünïcødé\n"
    return (line * (size // len(line) + 1))[:size]


def synthetic_session(size_mb: int, messages: int) -> tuple[Message, ...]:
    """`messages` messages (+ a system message), a third large tool results, `size_mb` MiB as JSON."""
    cycles = messages // 3
    first = _session(cycles, messages, 10_000)
    small = JsonMeasure()(first) - cycles * 10_000 * len(filler(10_000, 0).encode()) // 10_000
    unit = len(filler(10_000, 0).encode()) / 10_000  # bytes per filler char (some are multi-byte)
    return _session(cycles, messages, max(1000, int((size_mb * MB - small) / cycles / unit)))


def _session(cycles: int, messages: int, large: int) -> tuple[Message, ...]:
    """`cycles` × (user prompt, assistant with a tool call, a tool result of `large` chars), padded."""
    out: list[Message] = [Message.create("system", SYSTEM_PROMPT, turn=0)]
    turn = 0
    for i in range(cycles):
        if i % 2 == 0:
            turn += 1
        out.append(Message.create("user", f"step {i}: please continue with module {i % 12} — ✓", turn=turn))
        kind = i % 3
        if kind == 0:
            offset = [None, 0, 100, 200][i % 4]
            limit = [None, 400, 200][i % 3]
            args = {"path": PATHS[i % len(PATHS)], **({} if offset is None else {"offset": offset}),
                    **({} if limit is None else {"limit": limit})}
            call = ToolCall(f"call_{i}", "read_file", args)
        elif kind == 1:
            call = ToolCall(f"call_{i}", "shell", {"command": f"pytest -q tests/test_{i % 12}.py"})
        else:
            call = ToolCall(f"call_{i}", "grep", {"pattern": f"handler_{i}", "path": "app"})
        out.append(Message.create("assistant", [Text(f"Looking at step {i}. " * 10), call], turn=turn))
        out.append(Message.create("tool", [ToolResult(call.id, filler(large, i))], turn=turn))
    for extra in range(messages - 3 * cycles):  # pad to the exact count: an answer, then a prompt
        role = "assistant" if extra % 2 == 0 else "user"
        out.append(Message.create(role, f"Done with step {cycles - 1}." if role == "assistant" else "next",
                                  turn=turn))
    return tuple(out)


def provider_measure() -> tuple[Callable[[tuple[Message, ...]], int], str]:
    try:
        from app.providers.anthropic import AnthropicProvider

        route = Route(name="bench", provider="anthropic", model="claude-sonnet-4-5")
        provider = AnthropicProvider(route, Settings(), api_key="bench-not-a-key")

        def measure(view: tuple[Message, ...]) -> int:
            return provider.build(view, "", (), max_tokens=8192).predicted_bytes

        measure(synthetic_session(1, 30))  # import and warm the adapter once
        return measure, "anthropic adapter build().predicted_bytes"
    except Exception as exc:  # no adapter in this tree: fall back to JSON bytes
        print(f"(anthropic adapter unavailable: {type(exc).__name__}: {exc}; using JSON bytes)", file=sys.stderr)
        return JsonMeasure(), "sum(len(json)) per message"


async def fake_summarizer(system: str, text: str) -> str:
    return FAKE_SUMMARY


async def run_size(view: tuple[Message, ...], measure, target_ratio: float, summarizer,
                   runs: int) -> tuple[list[float], int, int, str]:
    """Time `runs` pipeline runs on `view` inside one event loop (loop start-up is not compaction)."""
    master = {m.id for m in view}
    timings: list[float] = []
    before = after = 0
    method = ""
    for _ in range(runs):
        before = measure(view)  # warm: a live session has every original message measured already
        ctx = PassContext(settings=Settings(), turn=max(m.meta.turn for m in view), measure=measure,
                          target_bytes=int(before * target_ratio), is_master=lambda m: m.id in master)
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
        print(f"measure: {how}; target = {args.target_ratio:g} × size; summarizer: {args.summarizer}; "
              f"{args.runs} runs per size")
        print(f"{'size':>6} {'msgs':>5} {'median ms':>10} {'min ms':>8} {'before':>12} {'after':>10}  method")
    for size_mb, messages in SIZES:
        view = synthetic_session(size_mb, messages)
        timings, before, after, method = asyncio.run(run_size(view, measure, args.target_ratio, summarizer,
                                                              args.runs))
        median = statistics.median(timings)
        if args.json:
            print(json.dumps({"size_mb": size_mb, "messages": len(view) - 1, "median_ms": round(median, 2),
                              "bytes_before": before, "bytes_after": after}))
        else:
            print(f"{size_mb:>4}MB {len(view) - 1:>5} {median:>10.1f} {min(timings):>8.1f} {before:>12,} "
                  f"{after:>10,}  {method}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
