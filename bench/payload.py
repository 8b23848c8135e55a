"""Benchmark: the payload meter — exact request bytes, full vs incremental, per provider adapter.

    python3 bench/payload.py            # table: per size × adapter, medians and the full/incremental ratio
    python3 bench/payload.py --json     # one JSON line per size × adapter, then the headline
    python3 bench/payload.py --quick    # fewer runs

Sessions: `bench.common.mixed_session` at 1, 5 and 10 MiB (400/400/800 messages: user prompts,
assistant messages with tool calls, large tool results with some unicode, 4 base64 images).
For each adapter (anthropic, openai, bedrock), with the real system prompt and tool schemas:

- full: a FRESH adapter (empty per-message cache) builds the request for the session plus one
  new exchange — every message is translated and serialised once (what a naive meter pays on
  every request);
- incremental: a WARM adapter (the session already measured) builds it after one new exchange
  (an assistant tool call and an 8 KB result) is appended — what the engine pays before each
  request (DESIGN.md §4). `serialized_messages` is checked to grow by exactly the 2 new messages.

The ratio is full / incremental medians from the same run. The predicted size is also checked
against `len(dumps(body))` for the httpx adapters (anthropic, openai): it must be exact.
"""

from __future__ import annotations

import sys
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
    new_tool_turn,
    parser,
    ratio,
    time_ms,
)

PROVIDERS = ("anthropic", "openai", "bedrock")
MAX_TOKENS = 8192


def bench_adapter(provider: str, view, system: str, tools, full_runs: int, inc_runs: int) -> dict:
    from app.providers.base import dumps

    full: list[float] = []
    predicted = 0
    extra = new_tool_turn(0)
    for _ in range(full_runs):
        adapter = make_adapter(provider)  # fresh: nothing cached
        elapsed, request = time_ms(
            lambda a=adapter: a.build(view + extra, system, tools, max_tokens=MAX_TOKENS)
        )
        full.append(elapsed)
        predicted = request.predicted_bytes
        assert adapter.serialized_messages == len(view) + len(extra), (
            "a fresh adapter serialises every message"
        )
    exact = None
    if provider in ("anthropic", "openai"):
        exact = len(dumps(request.body)) == request.predicted_bytes

    warm = make_adapter(provider)
    current = tuple(view)
    warm.build(current, system, tools, max_tokens=MAX_TOKENS)
    incremental: list[float] = []
    for n in range(1, inc_runs + 1):
        current = current + new_tool_turn(n)
        before = warm.serialized_messages
        elapsed, _ = time_ms(lambda c=current: warm.build(c, system, tools, max_tokens=MAX_TOKENS))
        incremental.append(elapsed)
        assert warm.serialized_messages - before == 2, (
            "incremental: only the appended messages are serialised"
        )
    return {
        "full_ms": median(full),
        "incremental_ms": median(incremental),
        "bytes": predicted,
        "exact": exact,
        "full_runs": full_runs,
        "incremental_runs": inc_runs,
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0], runs=7)
    p.add_argument("--sizes", default="1,5,10", help="MiB sizes to run, from 1,5,10")
    args = p.parse_args(argv)
    full_runs = args.runs or (3 if args.quick else 7)
    inc_runs = (full_runs * 3) if args.runs else (9 if args.quick else 25)
    wanted = {int(s) for s in args.sizes.split(",")}
    out = Output("payload", args.json)

    from app.model.prompts import SYSTEM_PROMPT
    from app.tools.registry import TOOL_SPECS

    tools = tuple(TOOL_SPECS)
    out.text(
        f"payload meter: full (fresh adapter, every message serialised) vs incremental (warm cache + one "
        f"new exchange); {full_runs} full / {inc_runs} incremental runs; {machine_note()}"
    )
    out.text(
        f"{'size':>5} {'msgs':>5} {'adapter':<10} {'bytes':>11} {'full ms':>9} {'incr ms':>9} "
        f"{'full/incr':>10}  exact"
    )
    headline = None
    for size_mb, messages in SIZES:
        if size_mb not in wanted:
            continue
        view = mixed_session(size_mb, messages)
        for provider in PROVIDERS:
            r = bench_adapter(provider, view, SYSTEM_PROMPT, tools, full_runs, inc_runs)
            r_ratio = ratio(r["full_ms"], r["incremental_ms"])
            exact = {True: "yes", False: "NO", None: "-"}[r["exact"]]
            out.record(
                {
                    "size_mb": size_mb,
                    "messages": len(view) - 1,
                    "adapter": provider,
                    "bytes": r["bytes"],
                    "full_ms": round(r["full_ms"], 3),
                    "incremental_ms": round(r["incremental_ms"], 3),
                    "ratio": round(r_ratio, 1),
                    "exact": r["exact"],
                },
                f"{size_mb:>3}MB {len(view) - 1:>5} {provider:<10} {r['bytes']:>11,} "
                f"{fmt_ms(r['full_ms']):>9} {fmt_ms(r['incremental_ms']):>9} {fmt_ratio(r_ratio):>10}  {exact}",
            )
            if provider == "anthropic":
                headline = (size_mb, r, r_ratio)
    if headline:
        size_mb, r, r_ratio = headline
        out.headline(
            f"payload meter, {size_mb} MB session (anthropic)",
            f"incremental {fmt_ms(r['incremental_ms'])} ms vs full {fmt_ms(r['full_ms'])} ms "
            f"({fmt_bytes(r['bytes'])})",
            f"full/incremental {fmt_ratio(r_ratio)}",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
