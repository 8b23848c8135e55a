"""Benchmark: peer comparison — gptme 0.35.1's rule-based compactor vs bulkhead's planned pipeline.

    python3 -m venv /tmp/gptme-venv && /tmp/gptme-venv/bin/pip install gptme==0.35.1   # once
    python3 bench/peer_gptme.py --gptme-python /tmp/gptme-venv/bin/python
    python3 bench/peer_gptme.py --json --export /tmp/history.jsonl   # keep the exported history

The history is `bench.common.synthetic_session(5, 400)` — the 5 MiB / 400-message session of
`bench/compaction.py`: user prompts, assistant messages with tool calls, and large tool results.
It is exported as JSONL in gptme's message format (`role`, `content`, `timestamp`, and `call_id`
on tool results): assistant tool calls become gptme Markdown tool blocks (```shell …```), tool
results become `system` messages carrying the call's `call_id` (how gptme stores tool output).

- gptme: a subprocess in gptme's own venv loads the file with gptme's `Log.read_jsonl`, then
  times only `list(gptme.tools.autocompact.auto_compact_log(msgs, limit=L))` — the rule-based
  auto-compactor behind `/compact trim` and auto-compaction (phase 0 stale-output stubs, phase 2
  largest-tool-results-first truncation, phase 3 extractive compression of long assistant
  messages; `logdir=None`, so nothing is written to disk). L = 40% of the history's tokens by
  gptme's own count. gptme counts tokens with tiktoken, which downloads its BPE files on first
  use; this machine has no internet, so the run sets `GPTME_TIKTOKEN_TIMEOUT=0` and gptme uses
  its documented ≈4 chars/token approximation (cheaper than real BPE counting — if anything
  this favours gptme).
- bulkhead: in this process, `run_pipeline` (microcompact, dedup, budgets, pairing; L3 only if
  still over) on the same messages with target = 40% of the request bytes measured by the
  Anthropic adapter, no summarizer (rule-based, like gptme's), `session_folder=None` (nothing
  written). The adapter's cache is warm for the original messages, as in a live session.

Both sides run one untimed warm-up, then `--runs` timed runs; medians and the ratio
gptme / bulkhead, measured in the same run. Content chars before/after are given for both.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Output,
    fmt_ms,
    fmt_ratio,
    machine_note,
    median,
    parser,
    provider_measure,
    ratio,
    synthetic_session,
)

SIZE_MB, MESSAGES = 5, 400
TARGET_RATIO = 0.4
DEFAULT_VENV_PYTHON = "/tmp/gptme-venv/bin/python"
GPTME_VERSION = "0.35.1"


def gptme_call(call) -> str:
    """A bulkhead tool call as a gptme Markdown tool block (gptme's default tool format)."""
    args = dict(call.args)
    if call.name == "shell":
        command = args["command"]
    elif call.name == "grep":
        command = f"grep -rn '{args['pattern']}' {args.get('path', '.')}"
    else:  # read_file
        start = int(args.get("offset", 0)) + 1
        end = start + int(args["limit"]) - 1 if "limit" in args else "$"
        command = f"sed -n '{start},{end}p' {args['path']}"
    return f"```shell\n{command}\n```"


def export_jsonl(view, path: Path) -> int:
    """Write `view` as gptme JSONL; returns the number of lines."""
    from app.model.messages import Text, ToolCall, ToolResult

    start = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    lines = []
    for n, message in enumerate(view):
        stamp = (start + timedelta(seconds=n)).isoformat()
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResult):
                    lines.append(
                        {
                            "role": "system",
                            "content": part.content,
                            "timestamp": stamp,
                            "call_id": part.call_id,
                        }
                    )
            continue
        texts = [p.text for p in message.parts if isinstance(p, Text)]
        calls = [gptme_call(p) for p in message.parts if isinstance(p, ToolCall)]
        lines.append({"role": message.role, "content": "\n\n".join([*texts, *calls]), "timestamp": stamp})
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(lines)


GPTME_CHILD = textwrap.dedent("""
    import json, sys, time
    from gptme.logmanager import Log
    from gptme.message import len_tokens
    from gptme.tools.autocompact import auto_compact_log
    from importlib.metadata import version

    path, runs, target_ratio = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    msgs = list(Log.read_jsonl(path).messages)
    model = "gpt-4"
    tokens = len_tokens(msgs, model)
    limit = int(tokens * target_ratio)
    timings = []
    for i in range(runs + 1):  # the first is an untimed warm-up
        start = time.perf_counter()
        out = list(auto_compact_log(msgs, limit=limit))
        elapsed = (time.perf_counter() - start) * 1000
        if i:
            timings.append(elapsed)
    print(json.dumps({"version": version("gptme"), "messages": len(msgs), "tokens_before": tokens, "limit": limit,
                      "tokens_after": len_tokens(out, model), "messages_after": len(out),
                      "chars_before": sum(len(m.content) for m in msgs),
                      "chars_after": sum(len(m.content) for m in out), "timings_ms": timings}))
""")


def run_gptme(python: str, path: Path, runs: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "GPTME"))}
    env.update(GPTME_TIKTOKEN_TIMEOUT="0", PYTHONWARNINGS="ignore")
    with tempfile.TemporaryDirectory(prefix="gptme-home-") as home:
        env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/config", XDG_DATA_HOME=f"{home}/data")
        done = subprocess.run(
            [python, "-c", GPTME_CHILD, str(path), str(runs), str(TARGET_RATIO)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=home,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"gptme run failed ({done.returncode}): {done.stderr[-1500:]}")
    return json.loads(lines[-1])


def run_bulkhead(view, runs: int) -> dict:
    from bench.compaction import run_size

    measure, how = provider_measure()
    timings, before, after, method = asyncio.run(run_size(view, measure, TARGET_RATIO, None, runs + 1))
    return {
        "timings_ms": timings[1:],
        "bytes_before": before,
        "bytes_after": after,
        "method": method,
        "measure": how,
    }


def bulkhead_chars_after(view) -> tuple[int, int]:
    """(content chars before, after) of one pipeline run, counted like gptme's (text + results + calls)."""
    from app.config import Settings
    from app.engine.compaction.context import PassContext
    from app.engine.compaction.pipeline import run_pipeline

    measure, _ = provider_measure()
    master = {m.id for m in view}
    ctx = PassContext(
        settings=Settings(),
        turn=max(m.meta.turn for m in view),
        measure=measure,
        target_bytes=int(measure(view) * TARGET_RATIO),
        is_master=lambda m: m.id in master,
    )
    result = asyncio.run(run_pipeline(view, ctx, trigger="auto", summarizer=None, window_tokens=200_000))
    return sum(m.char_size() for m in view), sum(m.char_size() for m in result.messages)


def pip_error(python: str) -> str:
    return (
        f"gptme is not importable with {python}. Install it: python3 -m venv /tmp/gptme-venv && "
        f"/tmp/gptme-venv/bin/pip install gptme=={GPTME_VERSION}"
    )


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0], runs=7)
    p.add_argument(
        "--gptme-python",
        default=DEFAULT_VENV_PYTHON,
        help=f"the python of a venv with gptme=={GPTME_VERSION} (default {DEFAULT_VENV_PYTHON})",
    )
    p.add_argument("--export", metavar="FILE", help="write the exported history here (kept)")
    args = p.parse_args(argv)
    runs = args.runs or (3 if args.quick else 7)
    out = Output("peer_gptme", args.json)

    view = synthetic_session(SIZE_MB, MESSAGES)
    with tempfile.TemporaryDirectory(prefix="peer-gptme-") as folder:
        path = Path(args.export) if args.export else Path(folder) / "history.jsonl"
        lines = export_jsonl(view, path)
        out.text(
            f"peer: the same {SIZE_MB} MiB / {MESSAGES}-message history ({lines} gptme messages, "
            f"{path.stat().st_size:,} B of JSONL); target {TARGET_RATIO:g} × size; {runs} runs + 1 warm-up; "
            f"{machine_note()}"
        )
        bulk = run_bulkhead(view, runs)
        chars_before, chars_after = bulkhead_chars_after(view)
        b_med = median(bulk["timings_ms"])
        out.record(
            {
                "tool": "bulkhead",
                "median_ms": round(b_med, 2),
                "min_ms": round(min(bulk["timings_ms"]), 2),
                "bytes_before": bulk["bytes_before"],
                "bytes_after": bulk["bytes_after"],
                "chars_before": chars_before,
                "chars_after": chars_after,
                "method": bulk["method"],
            },
            f"bulkhead run_pipeline (rule-based, {bulk['measure']}): median {fmt_ms(b_med)} ms "
            f"(min {fmt_ms(min(bulk['timings_ms']))}); request {bulk['bytes_before']:,} → "
            f"{bulk['bytes_after']:,} B; content {chars_before:,} → {chars_after:,} chars ({bulk['method']})",
        )
        python = args.gptme_python
        if not Path(python).exists():
            out.record({"tool": "gptme", "error": pip_error(python)}, f"gptme: {pip_error(python)}")
            out.headline(
                "peer: gptme rule-based compactor vs bulkhead pipeline (5 MB)",
                f"bulkhead {fmt_ms(b_med)} ms; gptme not run (not installed: {python} is missing)",
            )
            return 0  # a peer that is not installed is skipped with its reason, not a failed bench
        gpt = run_gptme(python, path, runs)
    g_med = median(gpt["timings_ms"])
    out.record(
        {
            "tool": "gptme",
            "version": gpt["version"],
            "median_ms": round(g_med, 2),
            "min_ms": round(min(gpt["timings_ms"]), 2),
            "tokens_before": gpt["tokens_before"],
            "limit_tokens": gpt["limit"],
            "tokens_after": gpt["tokens_after"],
            "messages_after": gpt["messages_after"],
            "chars_before": gpt["chars_before"],
            "chars_after": gpt["chars_after"],
        },
        f"gptme {gpt['version']} auto_compact_log: median {fmt_ms(g_med)} ms (min "
        f"{fmt_ms(min(gpt['timings_ms']))}); {gpt['tokens_before']:,} → {gpt['tokens_after']:,} tokens "
        f"(limit {gpt['limit']:,}); content {gpt['chars_before']:,} → {gpt['chars_after']:,} chars; "
        f"{gpt['messages']} → {gpt['messages_after']} messages",
    )
    r = ratio(g_med, b_med)
    out.record(
        {"tool": "ratio", "gptme_over_bulkhead": round(r, 2)},
        f"ratio gptme / bulkhead (same run): {fmt_ratio(r)}",
    )
    out.headline(
        f"peer: gptme {gpt['version']} rule-based compactor vs bulkhead pipeline, same 5 MB history",
        f"gptme {fmt_ms(g_med)} ms vs bulkhead {fmt_ms(b_med)} ms",
        f"gptme/bulkhead {fmt_ratio(r)}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
