"""Benchmark: resuming a long session in the TUI — ready time, typing latency, memory, scrolling back.

    python3 bench/resume.py             # table of medians, every session, 3 runs each
    python3 bench/resume.py --json      # one JSON line per session, then the headline
    python3 bench/resume.py --quick     # 3 runs each (PageUp in the first), no 20,000-message session

The parent writes the sessions into one database in a temporary BULKHEAD_HOME (through
`Session.append`, as a live session would): an empty one, 10 MiB / 800 messages, 2 MiB / 4,000
messages and 20,000 messages (5 MiB) — `bench.common.synthetic_session`, a third of them tool results —
then opens and closes each in the engine, as the bulkhead that wrote it would have: the session keeps its
view's exact size (`--unkept`: not, as one written by an older bulkhead or cut off by a crash, measured on open).
Each measurement is a FRESH process (this file with `--child`) that runs the real app
(`BulkheadApp(resume=ID)`, lab route, the real inspector) with `App.run_test(size=(160, 48))`:

- ready: from constructing the app to the engine ready AND the resumed history drawn (the app's
  workers done, then the first frame after that — or, when none is due within `READY_GRACE_S`, the last
  frame before: the app draws nothing while idle, and what the start changed was drawn already);
- keypress → frame: 40 keys sent to the prompt through the headless driver (as `Pilot.press` does, but
  without waiting for idle between keys), 10 a second; send → the prompt's value changed → the first
  frame after it; p50 and p99;
- RSS: VmRSS after `gc.collect()` once ready, the route's SDK imported and a long session's older messages
  decoded (both in threads after the first frame: `app.engine.head_later`; typing is measured after them too);
  the growth over the empty session, also as a multiple of the session's size in the database;
- scroll back (the 4,000-message session): the chat focused, PageUp pressed (10 a second, `--page-rate`, from a thread)
  until the top of the conversation is on screen and nothing older is left to show; PageUp → frame for
  every press (when it was due → the first frame after the chat took it: p50, p99, longest, how many over
  100 ms — the stall a user sees; a frame gap is no measure here, nothing is drawn between presses), the
  longest loop gap (a 5 ms probe task on the app's loop), Python's full garbage collections in that time
  (how many, the longest), and how many items the chat shows then.

The ratios (session / empty) are taken within one run.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Output,
    fmt_ms,
    fmt_ratio,
    isolated_env,
    machine_note,
    median,
    parser,
    percentile,
    ratio,
    rss_kb,
    synthetic_session,
)

SIZE = (160, 48)
# (label, MiB, messages)
SESSIONS = (("empty", 0, 0), ("10MB/800", 10, 800), ("2MB/4000", 2, 4000), ("20000", 5, 20000))
KEYS = 120  # a p99 of 40 presses was their slowest one: it moved ±25% between runs at ~4 ms
KEY_RATE = 10.0
TYPED = "the quick brown fox jumps over the lazy dog "
SCROLL_SESSION = "2MB/4000"
READY_GRACE_S = 0.5  # a frame due once the start is done comes within a few frames of it
SCROLL_DEADLINE_S = 300.0  # PageUp to the top of 4,000 messages is ~350 presses
PAGE_RATE = 10.0  # PageUp presses a second (--page-rate)


async def _until(predicate, timeout: float = 120) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("timed out")
        await asyncio.sleep(0.002)


def _importing() -> bool:
    """The SDK's import thread (`app.ui.startup.prewarm_in_background`) is still running."""
    return any(thread.name.startswith("import ") for thread in threading.enumerate())


async def _child(session_id: str, workspace: str, scroll: bool, page_rate: float = PAGE_RATE) -> dict:
    from textual import events

    from app.config import load_settings
    from app.ui.app import BulkheadApp

    frames: list[float] = []
    result: dict = {}
    start = time.perf_counter()
    app = BulkheadApp(
        load_settings(), resume=session_id or None, workspace=workspace, cursor_blink=False, keymap={}
    )
    original_display = app._display

    def display(screen, renderable):
        if renderable is not None:
            frames.append(time.perf_counter())
        return original_display(screen, renderable)

    app._display = display
    async with app.run_test(size=SIZE) as pilot:
        await _until(app.engine_ready.is_set)
        await app.workers.wait_for_complete()
        drawn = time.perf_counter()
        # The first frame after that, or — when nothing was left to draw (the app draws nothing while idle)
        # — the last one before it: what the start changed was on screen already.
        await _until(
            lambda: bool(frames) and frames[-1] >= drawn or time.perf_counter() > drawn + READY_GRACE_S
        )
        result["ready_ms"] = (
            next((f for f in frames if f >= drawn), frames[-1] if frames else drawn) - start
        ) * 1000
        # The route's SDK is imported in a thread after the first frame (0.6–1.6 s of CPU): memory and
        # typing are measured once it is in, the same steady state for every session.
        await _until(lambda: "anthropic" in sys.modules and not _importing(), 60)  # the lab's SDK
        await _until(lambda: not app.chat.older_coming, 60)  # a long session's older messages, decoded
        await pilot.pause()
        gc.collect()
        result["rss_kb"] = rss_kb()
        result["chat_items"] = len(app.chat.items)
        # typing
        prompt = app.prompt
        changed: list[float] = []
        original_edit = prompt.edit

        def edit(change):
            value = original_edit(change)
            changed.append(time.perf_counter())
            return value

        prompt.edit = edit
        driver = app._driver
        sent: list[float] = []
        t0 = time.perf_counter()
        for k in range(KEYS):
            delay = t0 + k / KEY_RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            char = TYPED[k % len(TYPED)]
            event = events.Key("space" if char == " " else char, char)
            event.set_sender(app)
            sent.append(time.perf_counter())
            driver.send_message(event)
        await _until(lambda: len(changed) >= KEYS, 30)
        await asyncio.sleep(0.1)
        key_frame = []
        for s, c in zip(sent, changed, strict=False):
            following = next((f for f in frames if f >= c), None)
            if following is not None:
                key_frame.append((following - s) * 1000)
        result["key_frame_p50_ms"] = percentile(key_frame, 50)
        result["key_frame_p99_ms"] = percentile(key_frame, 99)
        if scroll:
            result.update(await _scroll_back(app, pilot, frames, page_rate))
        await app.action_quit()
    return result


async def _scroll_back(app, pilot, frames: list[float], page_rate: float) -> dict:
    """PageUp in the focused chat until the top is on screen and nothing older is left to page in."""
    from textual import events

    chat = app.chat
    chat.focus()
    await pilot.pause()
    gaps: list[float] = []
    running = True

    async def probe() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append((now - last) * 1000)
            last = now

    collections: list[float] = []  # Python's full garbage collections during the scroll (ms each)
    began = [0.0]

    def timed_gc(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            collections.append((time.perf_counter() - began[0]) * 1000)

    gc.callbacks.append(timed_gc)
    task = asyncio.ensure_future(probe())
    start = time.perf_counter()
    deadline = start + SCROLL_DEADLINE_S
    driver = app._driver
    sent: list[float] = []  # when each press was due: a press due during a stall counts the stall
    handled: list[float] = []  # when the chat took each press (a frame before that is not its answer)
    original_page_up = chat.action_page_up

    def page_up() -> None:
        original_page_up()
        handled.append(time.perf_counter())

    chat.action_page_up = page_up

    def at_top() -> bool:
        return chat.scroll_y <= 0 and not getattr(chat, "older_count", 0)

    def press() -> None:  # in a thread, so that a stalled loop cannot delay the presses it is measured by
        due = time.perf_counter()
        while due < deadline:
            time.sleep(max(0.0, due - time.perf_counter()))
            if at_top():  # and still there a moment later (the last page's scroll may not have run yet)
                time.sleep(0.3)
                if at_top():
                    break
                due = time.perf_counter()
            event = events.Key("pageup", None)
            event.set_sender(app)
            sent.append(due)
            driver.send_message(event)  # thread-safe: posts to the app's loop
            due += 1 / page_rate

    presser = threading.Thread(target=press, name="PageUp", daemon=True)
    presser.start()
    while presser.is_alive():
        await asyncio.sleep(0.05)
    presses = len(sent)
    end = time.perf_counter()
    reached_top = chat.scroll_y <= 0 and not getattr(chat, "older_count", 0)
    running = False
    await task
    gc.callbacks.remove(timed_gc)
    window = [f for f in frames if start <= f <= end]
    frame_gaps = [(b - a) * 1000 for a, b in zip(window, window[1:], strict=False)]
    await pilot.pause()
    chat.action_page_up = original_page_up
    answered = [next((f for f in frames if f >= h), None) for h in handled]
    press_frame = [(f - s) * 1000 for s, f in zip(sent, answered, strict=False) if f is not None]
    return {
        "scroll_press_frame_p50_ms": percentile(press_frame, 50) if press_frame else 0.0,
        "scroll_press_frame_p99_ms": percentile(press_frame, 99) if press_frame else 0.0,
        "scroll_press_frame_max_ms": max(press_frame, default=0.0),
        "scroll_presses_over_100ms": sum(1 for t in press_frame if t > 100),
        "scroll_presses": presses,
        "scroll_s": end - start,
        "scroll_loop_gap_max_ms": max(gaps, default=0.0),
        "scroll_frame_gap_max_ms": max(frame_gaps, default=0.0),
        "scroll_frame_gap_p99_ms": percentile(frame_gaps, 99) if frame_gaps else 0.0,
        "scroll_frame_gaps_over_100ms": sum(1 for g in frame_gaps if g > 100),
        "scroll_full_gcs": len(collections),
        "scroll_full_gc_max_ms": max(collections, default=0.0),
        "scroll_reached_top": reached_top,
        "scroll_items_shown": len(chat.items),
    }


def run_child(home: Path, session_id: str, scroll: bool, page_rate: float = PAGE_RATE) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            session_id or "-",
            "1" if scroll else "0",
            str(page_rate),
        ],
        env=isolated_env(home),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=home,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"child failed ({done.returncode}): {done.stderr[-1500:]}")
    return json.loads(lines[-1])


def build_sessions(home: Path, sessions) -> dict[str, tuple[str, int, int]]:
    """label → (session id, messages, bytes of parts as stored)."""
    import os

    os.environ.update(isolated_env(home))
    from app.engine.session import Session
    from app.store import Store

    store = Store()
    built = {}
    for label, size_mb, messages in sessions:
        # a new session: bulkhead keeps no empty one (`app.engine.empty_sessions`), so none is written for it
        if not messages:
            built[label] = ("", 0, 0)
            continue
        session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(home))
        if messages:
            for message in synthetic_session(size_mb, messages)[
                1:
            ]:  # the engine brings its own system prompt
                session.append(message)
        stored = store.query(
            "SELECT coalesce(sum(length(CAST(parts AS BLOB))), 0) FROM messages WHERE session_id = ?",
            (session.id,),
        )[0][0]
        built[label] = (session.id, messages, stored)
    store.close()
    return built


def close_as_bulkhead(home: Path, built: dict[str, tuple[str, int, int]]) -> None:
    """Each session opened and closed by the engine, as the bulkhead that wrote it leaves it: with its view's exact
    size kept (`Engine.keep_view_size`), which a resume reports without measuring every message again."""
    from app.config import load_settings
    from app.engine.bootstrap import open_engine

    settings = load_settings()
    for session_id, _messages, _stored in built.values():
        if not session_id:
            continue
        engine, _choice, _resumed = open_engine(settings, resume=session_id, workspace=home)
        engine.context_report()  # the view measured, as every turn does
        asyncio.run(engine.close())


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) >= 2 and sys.argv[1] == "--child":
        session_id = "" if sys.argv[2] == "-" else sys.argv[2]
        result = asyncio.run(_child(session_id, str(Path.cwd()), sys.argv[3] == "1", float(sys.argv[4])))
        print(json.dumps(result), file=sys.__stdout__, flush=True)
        return 0
    p = parser(__doc__.split("\n\n")[0], runs=3)
    p.add_argument(
        "--no-scroll", action="store_true", help="skip the PageUp run (ready, typing and memory only)"
    )
    p.add_argument("--page-rate", type=float, default=PAGE_RATE, help="PageUp presses a second (default 10)")
    p.add_argument(
        "--unkept",
        action="store_true",
        help="sessions without a kept view size (written by an older bulkhead, or cut off by a crash): measured on open",
    )
    args = p.parse_args(argv)
    runs = args.runs or 3  # a ratio of two single runs moves ±10% with the machine's load: medians
    sessions = [s for s in SESSIONS if not (args.quick and s[2] > 10_000)]
    out = Output("resume", args.json)
    results: dict[str, dict[str, list]] = {}
    with tempfile.TemporaryDirectory(prefix="bulkhead-resume-") as folder:
        home = Path(folder)
        (home / "config.toml").write_text("")
        started = time.perf_counter()
        built = build_sessions(home, sessions)
        if not args.unkept:
            close_as_bulkhead(home, built)
        out.text(
            f"resume: fresh processes, BulkheadApp(resume=…) in run_test {SIZE[0]}×{SIZE[1]}, lab route; "
            f"sessions written in {time.perf_counter() - started:.0f} s"
            f"{' (no view size kept: measured on open)' if args.unkept else ''}; median of {runs} runs; {machine_note()}"
        )
        for run in range(runs):
            for label, _mb, _n in sessions:
                scroll = label == SCROLL_SESSION and not args.no_scroll and not (args.quick and run)
                r = run_child(home, built[label][0], scroll, args.page_rate)
                for key, value in r.items():
                    results.setdefault(label, {}).setdefault(key, []).append(value)
    m = {
        label: {
            k: (median(v) if isinstance(v[0], int | float) and not isinstance(v[0], bool) else v[-1])
            for k, v in r.items()
        }
        for label, r in results.items()
    }
    base = m["empty"]
    out.text(
        f"{'session':<10} {'stored':>8} {'ready ms':>9} {'×empty':>7} {'key→frame p50/p99 ms':>21} "
        f"{'×empty p50/p99':>15} {'RSS +MB':>8} {'×size':>6} {'items':>6}"
    )
    for label, _mb, n in sessions:
        r = m[label]
        stored = built[label][2]
        rss_delta = (r["rss_kb"] - base["rss_kb"]) / 1024
        size_mb = stored / 2**20
        record = {
            "session": label,
            "messages": n,
            "stored_mb": round(size_mb, 2),
            "ready_ms": round(r["ready_ms"], 1),
            "ready_ratio": round(ratio(r["ready_ms"], base["ready_ms"]), 2),
            "key_frame_p50_ms": round(r["key_frame_p50_ms"], 2),
            "key_frame_p99_ms": round(r["key_frame_p99_ms"], 2),
            "key_p50_ratio": round(ratio(r["key_frame_p50_ms"], base["key_frame_p50_ms"]), 2),
            "key_p99_ratio": round(ratio(r["key_frame_p99_ms"], base["key_frame_p99_ms"]), 2),
            "rss_mb": round(r["rss_kb"] / 1024, 1),
            "rss_growth_mb": round(rss_delta, 1),
            "rss_growth_per_size": round(rss_delta / size_mb, 2) if n else None,
            "chat_items": r["chat_items"],
        }
        for key in (
            "scroll_presses",
            "scroll_s",
            "scroll_loop_gap_max_ms",
            "scroll_press_frame_p50_ms",
            "scroll_press_frame_p99_ms",
            "scroll_press_frame_max_ms",
            "scroll_presses_over_100ms",
            "scroll_frame_gap_max_ms",
            "scroll_frame_gap_p99_ms",
            "scroll_frame_gaps_over_100ms",
            "scroll_full_gcs",
            "scroll_full_gc_max_ms",
            "scroll_reached_top",
            "scroll_items_shown",
        ):
            if key in r:
                record[key] = round(r[key], 1) if isinstance(r[key], float) else r[key]
        out.record(
            record,
            f"{label:<10} {size_mb:>6.1f}MB {r['ready_ms']:>9.0f} {fmt_ratio(record['ready_ratio']):>7} "
            f"{r['key_frame_p50_ms']:>10.1f}/{r['key_frame_p99_ms']:<10.1f} "
            f"{fmt_ratio(record['key_p50_ratio']):>7}/{fmt_ratio(record['key_p99_ratio']):<7} "
            f"{rss_delta:>+8.1f} {(fmt_ratio(record['rss_growth_per_size']) if n else '—'):>6} "
            f"{r['chat_items']:>6}",
        )
    s = m[SCROLL_SESSION]
    scrolled = "scroll_presses" in s
    if scrolled:
        out.text(
            f"scroll back ({SCROLL_SESSION}): {s['scroll_presses']} PageUp in {s['scroll_s']:.1f} s "
            f"({args.page_rate:g} a second), PageUp → frame "
            f"p50 {fmt_ms(s['scroll_press_frame_p50_ms'])} ms, p99 {fmt_ms(s['scroll_press_frame_p99_ms'])} ms, longest "
            f"{fmt_ms(s['scroll_press_frame_max_ms'])} ms ({s['scroll_presses_over_100ms']} over 100 ms); longest loop "
            f"gap {fmt_ms(s['scroll_loop_gap_max_ms'])} ms; Python's full "
            f"garbage collections then: {s['scroll_full_gcs']}, longest {fmt_ms(s['scroll_full_gc_max_ms'])} ms; "
            f"top reached: {s['scroll_reached_top']}; items shown then: {s['scroll_items_shown']}"
        )
    big, many = m["10MB/800"], m["2MB/4000"]
    big_size = built["10MB/800"][2] / 2**20
    out.headline(
        "resume a long session in the TUI (lab route, 160×48)",
        f"ready: empty {fmt_ms(base['ready_ms'])} ms, 10 MB/800 {fmt_ms(big['ready_ms'])} ms, "
        f"2 MB/4,000 {fmt_ms(many['ready_ms'])} ms; key→frame p99 {fmt_ms(many['key_frame_p99_ms'])} ms in "
        f"4,000 (empty {fmt_ms(base['key_frame_p99_ms'])})"
        + (
            f"; PageUp to the top of 4,000: PageUp → frame p99 {fmt_ms(s['scroll_press_frame_p99_ms'])} ms, "
            f"longest {fmt_ms(s['scroll_press_frame_max_ms'])} ms, {s['scroll_items_shown']} items"
            if scrolled
            else ""
        ),
        f"ready ×empty {fmt_ratio(ratio(big['ready_ms'], base['ready_ms']))} / "
        f"{fmt_ratio(ratio(many['ready_ms'], base['ready_ms']))}; key p99 ×empty "
        f"{fmt_ratio(ratio(many['key_frame_p99_ms'], base['key_frame_p99_ms']))}; RSS +"
        f"{(big['rss_kb'] - base['rss_kb']) / 1024:.0f} MB = "
        f"{fmt_ratio((big['rss_kb'] - base['rss_kb']) / 1024 / big_size)} the 10 MB session",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
