"""Benchmark: `bulkhead -p hello` in a folder with a slow stdio MCP server vs the same prompt without it.

    python3 bench/mcp_startup.py            # 7 rounds of alternating runs, medians
    python3 bench/mcp_startup.py --json     # one JSON line per measurement, then the headline
    python3 bench/mcp_startup.py --quick    # 3 rounds

Issue 40, item 8. Every run is a new `python3 -m app -p hello` process on the built-in lab model (no provider
configured), timed from just before it starts to its first answer byte on stdout and to its exit. The folder
"with" has a `.mcp.json` naming a tiny stdio server written with the `mcp` package's server API that sleeps
`--server-sleep` seconds (1.5) before it serves — so it answers `initialize` that long after its interpreter
and the SDK are up, as a server that opens a database or a browser does. Its definition is approved once
(`bulkhead mcp approve`) in the shared BULKHEAD_HOME, as a user would. Three kinds of run alternate in each
round:

- without: a folder with no `.mcp.json`;
- with, waiting: the default — the first request waits for the server (at most `mcp_tools_wait`, 10 s) while
  the route's own setup (SDK, client, lab) is done meanwhile, and carries its tools;
- with, not waiting: `BULKHEAD_MCP_TOOLS_WAIT=0` — the first request goes at once, the server's tools join
  from the next request.

The goal (issue 40): `-p` with the server within 1.1× of the prompt without it. Also: the recorded latency of
a run's first request vs its second (`-p "!read notes.txt" --json` without the server: the lab asks to read
the file, so there are two requests) — a request is timed from its sending, not from bulkhead's setup.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Output, fmt_ms, fmt_ratio, isolated_env, machine_note, median, parser, ratio

TIMEOUT_S = 120.0
GOAL = 1.1
SERVER = textwrap.dedent('''
    """A stdio MCP server slow to start: it sleeps before serving (a database, a browser to open)."""
    import sys, time
    time.sleep(float(sys.argv[1]))
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("slow")

    @server.tool()
    def lookup(key: str) -> str:
        """Look a key up in the slow service."""
        return f"value of {key}"

    server.run()
''')


def one_run(folder: Path, env: dict[str, str], *args: str) -> dict:
    """One `-p` process: ms to its first stdout byte and to its exit, and what it printed."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "-p", *args],
        env=env,
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdout is not None
    first_byte = os.read(proc.stdout.fileno(), 1)
    first = time.perf_counter()
    rest, err = proc.communicate(timeout=TIMEOUT_S)
    end = time.perf_counter()
    if proc.returncode or not first_byte:
        raise RuntimeError(f"-p failed ({proc.returncode}): {err.decode(errors='replace')[-800:]}")
    return {
        "first_byte_ms": (first - start) * 1000,
        "exit_ms": (end - start) * 1000,
        "stdout": (first_byte + rest).decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
    }


def main() -> int:
    p = parser(__doc__.splitlines()[0], runs=7)
    p.add_argument("--server-sleep", type=float, default=1.5, help="seconds the server sleeps before serving")
    args = p.parse_args()
    rounds = args.runs or (3 if args.quick else 7)
    out = Output("mcp_startup", args.json)
    out.text(machine_note())
    with tempfile.TemporaryDirectory(prefix="bulkhead-mcp-startup-") as temp:
        root = Path(temp)
        home = root / "home"
        home.mkdir()
        env = isolated_env(home)
        without, with_server = root / "without", root / "with"
        for folder in (without, with_server):
            folder.mkdir()
            (folder / "notes.txt").write_text("a line to read\n")
        server = root / "slow_server.py"
        server.write_text(SERVER)
        spec = {"command": sys.executable, "args": [str(server), str(args.server_sleep)]}
        (with_server / ".mcp.json").write_text(json.dumps({"mcpServers": {"slow": spec}}))
        approved = subprocess.run(
            [sys.executable, "-m", "app", "mcp", "approve"],
            env=env,
            cwd=with_server,
            capture_output=True,
            text=True,
        )
        if approved.returncode:
            raise RuntimeError(f"bulkhead mcp approve failed: {approved.stdout}{approved.stderr}")
        no_wait_env = {**env, "BULKHEAD_MCP_TOOLS_WAIT": "0"}
        kinds = {
            "without": (without, env),
            "with, waiting (default)": (with_server, env),
            "with, not waiting (mcp_tools_wait = 0)": (with_server, no_wait_env),
        }
        one_run(without, env, "hello")  # warm the disk cache and the database: not counted
        runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for _ in range(rounds):
            for kind, (folder, kind_env) in kinds.items():
                runs[kind].append(one_run(folder, kind_env, "hello"))
        med = {
            kind: {m: median([r[m] for r in done]) for m in ("first_byte_ms", "exit_ms")}
            for kind, done in runs.items()
        }
        base = med["without"]["exit_ms"]
        for kind, figures in med.items():
            factor = ratio(figures["exit_ms"], base)
            answer_factor = ratio(figures["first_byte_ms"], med["without"]["first_byte_ms"])
            out.record(
                {
                    "kind": kind,
                    **{k: round(v, 1) for k, v in figures.items()},
                    "answer_vs_without": round(answer_factor, 3),
                    "exit_vs_without": round(factor, 3),
                },
                f"{kind:<40} answer {fmt_ms(figures['first_byte_ms']):>6} ms · exit {fmt_ms(figures['exit_ms']):>6} ms"
                f" · vs without: answer {fmt_ratio(answer_factor)}, exit {fmt_ratio(factor)}",
            )
        waited = runs["with, waiting (default)"][0]["stderr"]
        skipped = runs["with, not waiting (mcp_tools_wait = 0)"][0]["stderr"]
        out.text(f"  waiting: stderr says {_mcp_lines(waited)}")
        out.text(f"  not waiting: stderr says {_mcp_lines(skipped)}")

        firsts, seconds = [], []
        for _ in range(rounds):
            done = one_run(without, env, "!read notes.txt", "--json")
            latencies = [
                event["latency_ms"]
                for event in map(json.loads, done["stdout"].splitlines())
                if event.get("type") == "request"
            ]
            if len(latencies) >= 2:
                firsts.append(latencies[0])
                seconds.append(latencies[1])
        first_ms, second_ms = median(firsts), median(seconds)
        out.record(
            {
                "kind": "latency",
                "first_request_ms": round(first_ms, 1),
                "second_request_ms": round(second_ms, 1),
            },
            f"recorded latency (`-p '!read notes.txt'`, two requests): first {fmt_ms(first_ms)} ms, "
            f"second {fmt_ms(second_ms)} ms",
        )
    no_wait_kind, waiting_kind = "with, not waiting (mcp_tools_wait = 0)", "with, waiting (default)"

    def factors(kind: str) -> str:
        answer = ratio(med[kind]["first_byte_ms"], med["without"]["first_byte_ms"])
        return f"answer {fmt_ratio(answer)}, exit {fmt_ratio(ratio(med[kind]['exit_ms'], base))}"

    out.headline(
        f"`-p hello` with a stdio MCP server that sleeps {args.server_sleep:g} s before serving (.mcp.json)",
        f"answer / exit {fmt_ms(med['without']['first_byte_ms'])} / {fmt_ms(base)} ms without; "
        f"{fmt_ms(med[waiting_kind]['first_byte_ms'])} / {fmt_ms(med[waiting_kind]['exit_ms'])} ms waiting for its "
        f"tools (default); {fmt_ms(med[no_wait_kind]['first_byte_ms'])} / {fmt_ms(med[no_wait_kind]['exit_ms'])} ms "
        f"not waiting; first request's recorded latency {fmt_ms(first_ms)} ms vs second {fmt_ms(second_ms)} ms",
        f"vs without — not waiting: {factors(no_wait_kind)} (goal ≤ {GOAL:g}×); waiting: {factors(waiting_kind)}",
    )
    return 0


def _mcp_lines(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if "MCP" in line]
    return " | ".join(lines) or "(nothing about MCP)"


if __name__ == "__main__":
    raise SystemExit(main())
