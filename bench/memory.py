"""Benchmark: resident memory with a 10 MB session open vs an empty one.

    python3 bench/memory.py             # table: RSS per stage, baseline vs 10 MB, and the delta
    python3 bench/memory.py --json      # one JSON line per stage, then the headline
    python3 bench/memory.py --quick     # one run per process kind instead of three

The parent writes two sessions into one database in a temporary BULKHEAD_HOME: an empty one and
a 10 MiB / 800-message `mixed_session` (stored through `Session.append`, as a live session
would). Each measurement is a FRESH process (this file with `--child`), identical except for
the session it opens, that reports its RSS (VmRSS from /proc/self/status, after `gc.collect()`)
at each stage:

- engine process: `imported` (the engine, the lab adapter and the TUI modules, so both kinds
  pay the same import cost) → `session loaded` (Store + `Session.load`: the master log and the
  view stack) → `engine built` (`Engine` on the lab route) → `payload measured`
  (`engine.measure(view)`: the adapter's per-message cache filled);
- TUI process: `TUI mounted` — `BulkheadApp(resume=ID)` under `App.run_test(size=(160, 48))`,
  once the engine is ready, the resumed history rendered in the chat and all of it decoded (a long
  session's older messages are decoded after its first frame; the provider SDK is imported by then,
  in both kinds). VmHWM (peak RSS) is reported beside it.

The delta (10 MB − empty) at each stage is what the session costs in memory; it is also given
as a multiple of the session's size in the database's JSON (`parts` column bytes).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Output,
    fmt_ratio,
    isolated_env,
    machine_note,
    median,
    mixed_session,
    parser,
    proc_status_kb,
    rss_kb,
)

SIZE_MB, MESSAGES = 10, 800
STAGES = ("imported", "session loaded", "engine built", "payload measured")


def snapshot() -> int:
    gc.collect()
    return rss_kb()


def child_engine(session_id: str) -> dict:
    marks: dict = {}
    from app.config import Route, Settings
    from app.engine.session import Session
    from app.engine.turn import Engine
    from app.providers.factory import make_provider
    from app.state import State
    from app.store import Store
    from app.ui import app as _ui  # noqa: F401 - same import footprint as the TUI process

    marks["imported"] = snapshot()
    store = Store()
    session = Session.load(store, session_id)
    marks["session loaded"] = snapshot()
    route = Route(name="lab", provider="lab", model="lab-1")
    engine = Engine(Settings(), session, route, make_provider(route, Settings()), state=State())
    marks["engine built"] = snapshot()
    predicted = engine.measure(session.view.messages)
    marks["payload measured"] = snapshot()
    shared = all(a is b for a, b in zip(session.master, session.view.messages, strict=False))
    return {
        "rss_kb": marks,
        "predicted_bytes": predicted,
        "messages": len(session.master),
        "view_shares_master_objects": shared,
    }


def child_tui(session_id: str, workspace: str) -> dict:
    import asyncio

    from app.config import load_settings
    from app.ui.app import BulkheadApp

    result: dict = {}

    async def main() -> None:
        app = BulkheadApp(
            load_settings(), resume=session_id, workspace=workspace, cursor_blink=False, keymap={}
        )
        async with app.run_test(size=(160, 48)) as pilot:
            while not app.engine_ready.is_set():
                await asyncio.sleep(0.01)
            await app.workers.wait_for_complete()
            while app.chat.older_coming:  # a long session's older messages are decoded after its first frame
                await asyncio.sleep(0.01)
            for _ in range(5):
                await pilot.pause()
            result["rss_kb"] = {"TUI mounted": snapshot()}
            result["chat_items"] = len(app.chat.items)
            await app.action_quit()

    asyncio.run(main())
    result["hwm_kb"] = proc_status_kb("VmHWM")
    return result


def run_child(home: Path, kind: str, session_id: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind, session_id],
        env=isolated_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=home,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"{kind} child failed ({done.returncode}): {done.stderr[-1500:]}")
    return json.loads(lines[-1])


def build_sessions(home: Path) -> tuple[str, str, int]:
    """(empty session id, 10 MB session id, bytes of the big session's parts as stored)."""
    import os

    os.environ.update(isolated_env(home))
    from app.engine.session import Session
    from app.store import Store

    store = Store()
    empty = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(home))
    big = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(home))
    for message in mixed_session(SIZE_MB, MESSAGES)[1:]:  # the engine brings its own system prompt
        big.append(message)
    stored = store.query(
        "SELECT sum(length(CAST(parts AS BLOB))) FROM messages WHERE session_id = ?", (big.id,)
    )[0][0]
    store.close()
    return empty.id, big.id, stored


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) >= 2 and sys.argv[1] == "--child":
        kind, session_id = sys.argv[2], sys.argv[3]
        result = child_engine(session_id) if kind == "engine" else child_tui(session_id, str(Path.cwd()))
        print(json.dumps(result), file=sys.__stdout__, flush=True)
        return 0
    p = parser(__doc__.split("\n\n")[0], runs=3)
    args = p.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    out = Output("memory", args.json)
    with tempfile.TemporaryDirectory(prefix="bulkhead-memory-") as folder:
        home = Path(folder)
        empty_id, big_id, stored = build_sessions(home)
        out.text(
            f"memory: RSS of fresh processes, empty session vs {SIZE_MB} MiB / {MESSAGES} messages "
            f"({stored / 2**20:.1f} MiB of parts in the database); median of {runs} runs; {machine_note()}"
        )
        results: dict[str, dict[str, list]] = {"empty": {}, "10MB": {}}
        extra: dict[str, dict] = {"empty": {}, "10MB": {}}
        for label, session_id in (("empty", empty_id), ("10MB", big_id)):
            for _ in range(runs):
                for kind in ("engine", "tui"):
                    r = run_child(home, kind, session_id)
                    for stage, kb in r["rss_kb"].items():
                        results[label].setdefault(stage, []).append(kb)
                    if "hwm_kb" in r:
                        results[label].setdefault("TUI peak (VmHWM)", []).append(r["hwm_kb"])
                    extra[label].update({k: v for k, v in r.items() if k not in ("rss_kb", "hwm_kb")})
    out.text(f"{'stage':<22} {'empty MB':>9} {'10 MB MB':>9} {'delta MB':>9} {'delta/size':>11}")
    deltas = {}
    for stage in (*STAGES, "TUI mounted", "TUI peak (VmHWM)"):
        base = median(results["empty"][stage]) / 1024
        loaded = median(results["10MB"][stage]) / 1024
        delta = loaded - base
        deltas[stage] = delta
        out.record(
            {
                "stage": stage,
                "empty_mb": round(base, 1),
                "loaded_mb": round(loaded, 1),
                "delta_mb": round(delta, 1),
                "delta_per_session_mb": round(delta / (stored / 2**20), 2),
            },
            f"{stage:<22} {base:>9.1f} {loaded:>9.1f} {delta:>+9.1f} {fmt_ratio(delta / (stored / 2**20)):>11}",
        )
    big = extra["10MB"]
    out.text(
        f"10 MB session: {big.get('messages')} messages, predicted request {big.get('predicted_bytes', 0):,} B; "
        f"chat items rendered {big.get('chat_items')}; the view shares the master's Message objects: "
        f"{'yes' if big.get('view_shares_master_objects') else 'NO (loaded twice from the database)'}"
    )
    out.headline(
        f"resident memory, {SIZE_MB} MB session open",
        f"+{deltas['payload measured']:.0f} MB engine process, +{deltas['TUI mounted']:.0f} MB with the TUI "
        f"(empty session: {median(results['empty']['TUI mounted']) / 1024:.0f} MB)",
        f"TUI delta / session size {fmt_ratio(deltas['TUI mounted'] / (stored / 2**20))}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
