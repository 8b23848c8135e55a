"""Run every benchmark and print the headline table in Markdown (for bench/README.md and the README).

    python3 bench/run_all.py                 # every bench with --quick (a few minutes)
    python3 bench/run_all.py --full          # every bench in full (about 10 minutes here)
    python3 bench/run_all.py --only payload,ladder
    python3 bench/run_all.py --gptme-python /tmp/gptme-venv/bin/python

Each benchmark runs as its own process with `--json`; its headline line (`{"bench", "headline"}`)
becomes one row of the table: what was measured, the figure, and the ratio measured in the same
run. `bench/compaction.py` has no headline line; its row is made from its 10 MB JSON line. A bench
that fails gets a row saying so (with the end of its stderr below the table) and the others still run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = (
    "payload",
    "compaction",
    "ladder",
    "archive_search",
    "tui_stream",
    "tui_stream_resume",
    "resume",
    "paste",
    "mention",
    "startup",
    "mcp_startup",
    "memory",
    "peer_gptme",
    "markdown_render",
)
# A row that is another bench's script run with extra flags.
VARIANTS = {"tui_stream_resume": ("tui_stream", ["--resume"])}


def command(name: str, full: bool, gptme_python: str | None) -> list[str]:
    script, extra = VARIANTS.get(name, (name, []))
    cmd = [sys.executable, str(HERE / f"{script}.py"), "--json", *extra]
    if name == "compaction":
        cmd += ["--runs", "7" if full else "3"]  # compaction.py predates --quick
    elif not full:
        cmd.append("--quick")
    if name == "peer_gptme" and gptme_python:
        cmd += ["--gptme-python", gptme_python]
    return cmd


def compaction_row(records: list[dict]) -> dict:
    rows = [r for r in records if "size_mb" in r]
    big = max(rows, key=lambda r: r["size_mb"])
    small = min(rows, key=lambda r: r["size_mb"])
    per_mb = (big["median_ms"] / big["size_mb"]) / (small["median_ms"] / small["size_mb"])
    return {
        "what": f"planned compaction pipeline, {big['size_mb']} MB / {big['messages']} messages",
        "figure": f"{big['median_ms']:.0f} ms ({big['bytes_before'] / 2**20:.1f} MB → "
        f"{big['bytes_after'] / 1024:.0f} KB)",
        "ratio": f"ms per MB, {big['size_mb']} MB / {small['size_mb']} MB: {per_mb:.2f}×",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="full runs instead of --quick")
    p.add_argument("--only", help=f"comma list from {','.join(BENCHES)}")
    p.add_argument("--gptme-python", help="passed to peer_gptme.py")
    args = p.parse_args(argv)
    names = [n for n in BENCHES if not args.only or n in args.only.split(",")]
    rows: list[tuple[str, dict, float, str]] = []
    failures: list[str] = []
    for name in names:
        cmd = command(name, args.full, args.gptme_python)
        shown = "python3 " + " ".join(
            str(Path(c).relative_to(HERE.parent)) if c.startswith(str(HERE)) else c for c in cmd[1:]
        )
        print(f"running {shown} …", file=sys.stderr, flush=True)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
        elapsed = time.perf_counter() - start
        records = []
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
        headline = next((r["headline"] for r in records if "headline" in r), None)
        if headline is None and name == "compaction" and records:
            headline = compaction_row(records)
        if done.returncode or headline is None:
            headline = {"what": name, "figure": f"FAILED (exit {done.returncode})", "ratio": ""}
            failures.append(f"### {name}\n```\n{done.stderr[-1500:]}\n```")
        rows.append((name, headline, elapsed, shown))
    mode = "full" if args.full else "--quick"
    print("\n| bench | what | figure | ratio (same run) |\n|---|---|---|---|")
    for name, h, _, _ in rows:
        print(f"| `{name}` | {h['what']} | {h['figure']} | {h.get('ratio') or '—'} |")
    print(f"\nCommands ({mode}; each printed its medians, `--json` for machine-readable lines):\n")
    for _name, _, elapsed, shown in rows:
        print(f"- `{shown}` ({elapsed:.0f} s)")
    if failures:
        print("\n" + "\n\n".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
