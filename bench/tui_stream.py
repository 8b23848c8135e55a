"""Benchmark: the TUI under a 2,000 tokens/s stream while the user types — frame gaps, key latency, throughput.

    python3 bench/tui_stream.py                 # paced server, 2,000 tok/s for 10 s, typing at 10 keys/s
    python3 bench/tui_stream.py --json          # one JSON line per phase, then the headline
    python3 bench/tui_stream.py --quick         # 4 s phases
    python3 bench/tui_stream.py --source lab    # the lab's `slow` fault paces a `!big` answer instead
    python3 bench/tui_stream.py --tps 4000 --seconds 20 --key-rate 15
    python3 bench/tui_stream.py --resume        # the same in a resumed 4,000-message (2 MiB) session

The real app (`BulkheadApp`, with the real inspector) runs headless in this process with
`App.run_test(size=(160, 48))`; the engine talks to a local server over HTTP through the real
Anthropic adapter and SDK. Two phases, measured the same way in one run:

1. idle — the simulated user types into the prompt for `--seconds`, nothing streams;
2. stream — an answer streams at `--tps` tokens/s (1 token = 4 chars, the engine's own estimate)
   while the user keeps typing at the same rate.

How the stream is paced (`--source`):
- `paced` (default): a small Anthropic-wire SSE server in a SEPARATE process (this file with
  `--serve`), so its work does not share this process's GIL. It streams Markdown (paragraphs, lists,
  code blocks) in `text_delta` events of `--delta-chars` (16 chars ≈ 4 tokens, like real APIs) on an
  absolute schedule: event k leaves at t0 + k × delta_chars / (4 × tps).
- `lab`: `bulkhead lab` in a separate process; after a warm-up turn its control plane
  (`POST /_lab/config {"faults": "slow:1", "slow_pause": P}`) makes every stream event wait P
  seconds, and the prompt `!big SIZE` asks for SIZE = tps × 4 × seconds bytes. The lab splits a
  long answer into 64 deltas, so P = seconds / (64 + 6 other events): the right tokens/s, in
  coarse chunks of ~1/64 of the answer (a harsher, burstier load than real APIs).

How the UI is measured (all in this process, on the app's event loop):
- loop gap: a probe task sleeps 5 ms in a loop on the app's event loop and records the time
  between its wake-ups; anything that blocks the loop (layout, Markdown parsing, rendering,
  SSE parsing, event dispatch) shows as a gap above 5 ms. This is the frame gap a terminal user
  feels: no frame, key or timer can run during it.
- frames: `app._display` (what a Screen calls with each compositor update, after rendering;
  headless it is not written to a terminal but the rendering work is done) is wrapped, and the
  interval between consecutive frames is recorded (Textual caps frames at 60/s: 16.7 ms).
- key latency: a typer task sends key events at `--key-rate` a second through the headless
  driver exactly as `Pilot.press` does (`driver.send_message(events.Key(...))`) but without
  Pilot's wait-for-idle after each key, which would slow the typing down to the app's idle
  moments and hide the latency; the prompt's `edit` is wrapped to time when its value changes.
  key→value is send → value changed; key→frame is send → the first frame after the change.
- throughput: the engine's TextDelta events are timed on the session's event bus (chars/4 per
  second between the first and last delta), next to the server's target.
- rendered: from the last delta until the chat no longer streams AND the app has handled every event
  queued before (so a final render awaited inside the app's event handler counts); the JSON adds
  `render_done_loop_gap_max_ms`, the longest loop gap in that window.
- disk writes: every write of the session to disk (`Store.append_message`, `update_session`,
  `record_event`, `record_request`, the draft's appends and removal) is timed, with the thread it ran
  on; `turn_disk_*` (send → rendered) says how many ran on the event loop's thread and how long the
  loop spent in them (issue 21: the session's writer thread does them, so 0).

`--resume` first writes a 2 MiB / 4,000-message session (`bench.common.synthetic_session`, through
`Session.append`) and opens the app on it (`BulkheadApp(resume=ID)`): the same phases, measured in a long
session (each request then carries the whole 2 MiB history to the paced server).

Textual captures stdout/stderr while the app runs; `BENCH_VERBOSE=1` prints progress to the real
stderr. `--text prose` streams long plain paragraphs instead of block-rich Markdown (the UI's cost
grows with the number of Markdown blocks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    ROOT,
    Output,
    fmt_ms,
    fmt_ratio,
    isolated_env,
    machine_note,
    parser,
    percentile,
    ratio,
    temp_home,
)

SIZE = (160, 48)
PROBE_S = 0.005
CHARS_PER_TOKEN = 4
TYPED = "the quick brown fox jumps over the lazy dog while the answer streams in "
WARMUP_PROMPT = "warmup: say hi"
STREAM_PROMPT = "explain the plan in detail"


# -- the paced server (runs in its own process) ------------------------------------------------------------


def markdown_text(chars: int) -> str:
    """Markdown like a coding answer: headings, paragraphs, lists and code blocks."""
    blocks: list[str] = []
    n = 0
    while sum(len(b) + 2 for b in blocks) < chars:
        n += 1
        blocks.append(f"## Step {n}: refactor the `payload_{n}` module")
        blocks.append(
            f"The request builder in step {n} measures every message once and caches the size, so "
            f"the **incremental** cost stays flat as the session grows; the *gateway* cap is "
            f"checked before sending — see `app/engine/payload.py` line {n * 7}."
        )
        blocks.append(
            "\n".join(
                f"- item {n}.{i}: keep `{['head', 'tail', 'stub', 'marker'][i % 4]}` under {i * 128} bytes ✓"
                for i in range(1, 5)
            )
        )
        blocks.append(
            "```python\n"
            + "\n".join(
                f"def handler_{n}_{i}(request):\n    return process(request, size={i * 1024})"
                for i in range(3)
            )
            + "\n```"
        )
    return "\n\n".join(blocks)[:chars]


def prose_text(chars: int) -> str:
    """Plain paragraphs of ~600 chars: far fewer Markdown blocks for the same length."""
    sentence = (
        "The request builder measures every message once and caches its size, so the incremental "
        "cost stays flat as the session grows, and the gateway cap is checked before sending. "
    )
    paragraph = sentence * 3
    return "\n\n".join([paragraph.strip()] * (chars // len(paragraph) + 1))[:chars]


TEXTS = {"markdown": markdown_text, "prose": prose_text}


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _serve_one(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    tps: float,
    seconds: float,
    delta_chars: int,
    kind: str,
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = json.loads(await reader.readexactly(length) or b"{}")
            last = body.get("messages", [{}])[-1]
            content = last.get("content")
            prompt = (
                content
                if isinstance(content, str)
                else " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
            )
            text = (
                "Hi — warm." if WARMUP_PROMPT in prompt else TEXTS[kind](int(tps * CHARS_PER_TOKEN * seconds))
            )
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                b"request-id: req_bench\r\n\r\n"
            )
            writer.write(
                _chunk(
                    _sse(
                        "message_start",
                        {
                            "type": "message_start",
                            "message": {
                                "id": "msg_bench",
                                "type": "message",
                                "role": "assistant",
                                "model": body.get("model", "x"),
                                "content": [],
                                "stop_reason": None,
                                "stop_sequence": None,
                                "usage": {"input_tokens": 10, "output_tokens": 1},
                            },
                        },
                    )
                )
            )
            writer.write(
                _chunk(
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": 0,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
            )
            await writer.drain()
            interval = delta_chars / (CHARS_PER_TOKEN * tps)
            start = time.perf_counter()
            for k, i in enumerate(range(0, len(text), delta_chars)):
                delay = start + k * interval - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(
                    _chunk(
                        _sse(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": 0,
                                "delta": {"type": "text_delta", "text": text[i : i + delta_chars]},
                            },
                        )
                    )
                )
                await writer.drain()
            writer.write(_chunk(_sse("content_block_stop", {"type": "content_block_stop", "index": 0})))
            writer.write(
                _chunk(
                    _sse(
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": len(text) // CHARS_PER_TOKEN},
                        },
                    )
                )
            )
            writer.write(_chunk(_sse("message_stop", {"type": "message_stop"})))
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def serve(tps: float, seconds: float, delta_chars: int, kind: str) -> None:
    async def main() -> None:
        server = await asyncio.start_server(
            lambda r, w: _serve_one(r, w, tps, seconds, delta_chars, kind), "127.0.0.1", 0
        )
        print(server.sockets[0].getsockname()[1], flush=True)
        deadline = time.monotonic() + 600  # never outlive a forgotten benchmark
        while time.monotonic() < deadline and sys.stdin.readable():
            await asyncio.sleep(0.5)
            if os.getppid() == 1:
                break
        server.close()

    asyncio.run(main())


# -- starting the source -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_source(args, home: Path) -> tuple[subprocess.Popen, str]:
    env = isolated_env(home)
    if args.source == "paced":
        proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--serve",
                "--tps",
                str(args.tps),
                "--seconds",
                str(args.seconds),
                "--delta-chars",
                str(args.delta_chars),
                "--text",
                args.text,
            ],
            stdout=subprocess.PIPE,
            stdin=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        port = int(proc.stdout.readline())
        return proc, f"http://127.0.0.1:{port}"
    port = free_port()
    log_file = (home / "lab.log").open("w")  # a file, not a pipe: a chatty lab never blocks on a full pipe
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "lab", "--port", str(port)],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url + "/_lab/config", timeout=1).read()
            return proc, url
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the lab did not start on {url}: {(home / 'lab.log').read_text()[-800:]}")


def lab_configure(url: str, **changes) -> None:
    request = urllib.request.Request(
        url + "/_lab/config",
        data=json.dumps(changes).encode(),
        method="POST",
        headers={"content-type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=5).read()


# -- the measurement ---------------------------------------------------------------------------------------


class Probes:
    """Loop-gap probe, frame timestamps, key send/change times and TextDelta times, on the app's loop."""

    def __init__(self, app) -> None:
        self.app = app
        self.loop_gaps: list[tuple[float, float]] = []  # (time, gap)
        self.frames: list[float] = []
        self.sent: list[float] = []
        self.changed: list[float] = []
        self.deltas: list[tuple[float, int]] = []
        self._running = True
        original_display = app._display

        def display(screen, renderable):
            if renderable is not None:
                self.frames.append(time.perf_counter())
            return original_display(screen, renderable)

        app._display = display
        prompt = app.prompt
        original_edit = prompt.edit

        def edit(change):
            result = original_edit(change)
            self.changed.append(time.perf_counter())
            return result

        prompt.edit = edit
        app.session.subscribe(self._on_event)
        self.writes: list[tuple[float, float, bool]] = []  # (end time, seconds, on the loop's thread)
        self._unwrap = self._time_writes(threading.get_ident())
        self.task = asyncio.ensure_future(self._probe())

    def _time_writes(self, loop_thread: int):
        """Time every disk write of the session (SQLite, the draft) and note whether it ran on the event loop's
        thread (before issue 21's writer all did; now the session's writer thread does them). Returns an undo."""
        from app.engine.draft import DraftWriter
        from app.store import Store

        names = [(Store, n) for n in ("append_message", "update_session", "record_event", "record_request")]
        names += [(DraftWriter, n) for n in ("_append", "_discard", "clear") if n in vars(DraftWriter)]
        if ("_discard" in vars(DraftWriter)) and (DraftWriter, "clear") in names:
            names.remove((DraftWriter, "clear"))  # with the writer, clear only queues; _discard writes
        originals = []
        for owner, name in names:
            real = getattr(owner, name)
            originals.append((owner, name, real))

            def timed(*args, _real=real, **kwargs):
                start = time.perf_counter()
                try:
                    return _real(*args, **kwargs)
                finally:
                    end = time.perf_counter()
                    self.writes.append((end, end - start, threading.get_ident() == loop_thread))

            setattr(owner, name, timed)

        def undo() -> None:
            for owner, name, real in originals:
                setattr(owner, name, real)

        return undo

    def _on_event(self, event) -> None:
        if event.type == "text":
            self.deltas.append((time.perf_counter(), len(event.text)))

    async def _probe(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(PROBE_S)
            now = time.perf_counter()
            self.loop_gaps.append((now, now - last))
            last = now

    async def type_for(self, seconds: float, rate: float, until=None) -> None:
        """Send one key every 1/rate s (absolute schedule) for `seconds`, or until `until()` is true."""
        from textual import events

        driver = self.app._driver
        start = time.perf_counter()
        k = 0
        while True:
            target = start + k / rate
            if (until is None and target - start >= seconds) or (until is not None and until()):
                break
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            char = TYPED[k % len(TYPED)]
            key = "space" if char == " " else char
            event = events.Key(key, char)
            event.set_sender(self.app)
            self.sent.append(time.perf_counter())
            driver.send_message(event)
            k += 1

    def stop(self) -> None:
        self._running = False
        self._unwrap()

    def window(self, start: float, end: float) -> dict:
        gaps = [g * 1000 for t, g in self.loop_gaps if start <= t <= end]
        frames = [f for f in self.frames if start <= f <= end]
        intervals = [(b - a) * 1000 for a, b in zip(frames, frames[1:], strict=False)]
        key_value, key_frame = [], []
        for sent, changed in zip(self.sent, self.changed, strict=False):
            if not start <= sent <= end:
                continue
            key_value.append((changed - sent) * 1000)
            following = next((f for f in self.frames if f >= changed), None)
            if following is not None:
                key_frame.append((following - sent) * 1000)
        seconds = end - start
        middle = start + seconds / 2
        early = [g * 1000 for t, g in self.loop_gaps if start <= t < middle]
        late = [g * 1000 for t, g in self.loop_gaps if middle <= t <= end]
        return {
            "loop_gap_p99_first_half_ms": round(percentile(early, 99), 2),
            "loop_gap_p99_second_half_ms": round(percentile(late, 99), 2),
            "seconds": round(seconds, 2),
            "loop_gap_p50_ms": round(percentile(gaps, 50), 2),
            "loop_gap_p99_ms": round(percentile(gaps, 99), 2),
            "loop_gap_max_ms": round(max(gaps, default=float("nan")), 2),
            "frames": len(frames),
            "fps": round(len(frames) / seconds, 1) if seconds else None,
            "frame_gap_p50_ms": round(percentile(intervals, 50), 2),
            "frame_gap_p99_ms": round(percentile(intervals, 99), 2),
            "frame_gap_max_ms": round(max(intervals, default=float("nan")), 2),
            "keys": len(key_value),
            "key_to_value_p50_ms": round(percentile(key_value, 50), 2),
            "key_to_value_p99_ms": round(percentile(key_value, 99), 2),
            "key_to_frame_p50_ms": round(percentile(key_frame, 50), 2),
            "key_to_frame_p99_ms": round(percentile(key_frame, 99), 2),
        }

    def disk(self, start: float, end: float) -> dict:
        """The session's disk writes (SQLite, the draft) that ended in the window: how long the loop spent in them."""
        writes = [(d * 1000, on_loop) for t, d, on_loop in self.writes if start <= t <= end]
        on_loop = [d for d, loop in writes if loop]
        return {
            "disk_writes": len(writes),
            "disk_writes_on_loop": len(on_loop),
            "disk_write_on_loop_ms": round(sum(on_loop), 2),
            "disk_write_on_loop_max_ms": round(max(on_loop, default=0.0), 2),
            "disk_write_total_ms": round(sum(d for d, _ in writes), 2),
        }


def log(text: str) -> None:
    if os.environ.get("BENCH_VERBOSE"):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.__stderr__, flush=True)


async def until(predicate, timeout: float, what: str) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


RESUME_SIZE = (2, 4000)  # (MiB, messages) of the session --resume opens


def build_resume_session(workspace: Path) -> str:
    """Write the long session --resume opens (in this process's BULKHEAD_HOME); its id."""
    from app.engine.session import Session
    from app.store import Store
    from bench.common import synthetic_session

    store = Store()
    session = Session.create(
        store, route="bench", provider="anthropic", model="claude-sonnet-4-5", workspace=str(workspace)
    )
    for message in synthetic_session(*RESUME_SIZE)[1:]:
        session.append(message)
    store.close()
    return session.id


async def run_app(args, url: str, workspace: Path) -> dict:
    from app.config import Route, load_settings
    from app.ui.app import BulkheadApp

    provider = "anthropic" if args.source == "paced" else "lab"
    # max_output_tokens: the lab model stops at max_tokens (4 chars a token); let the whole !big answer through.
    route = Route(
        name="bench",
        provider=provider,
        model="claude-sonnet-4-5" if provider == "anthropic" else "lab-1",
        base_url=url,
        max_output_tokens=64_000,
    )
    settings = load_settings().with_overrides(routes={"bench": route})
    resume = build_resume_session(workspace) if args.resume else None
    app = BulkheadApp(
        settings, workspace=workspace, cursor_blink=False, keymap={}, route_name="bench", resume=resume
    )
    results: dict = {}
    try:
        async with app.run_test(size=SIZE) as pilot:
            try:  # Textual captures stdout/stderr while it runs: say what went wrong on the real stderr
                await measure(args, url, app, pilot, results)
            except BaseException:
                import traceback

                traceback.print_exc(file=sys.__stderr__)
                raise
    except Exception as exc:
        if "stream" not in results:
            raise
        # Measured already: an error while the app shuts down is reported, not fatal to the figures.
        results["exit_error"] = f"{type(exc).__name__}: {exc}"
        print(
            f"warning: the app raised {results['exit_error']} while shutting down (after the measurement)",
            file=sys.stderr,
        )
    log("app exited")
    return results


async def measure(args, url: str, app, pilot, results: dict) -> None:
    await until(app.engine_ready.is_set, 60, "the engine")
    log("engine ready")
    # Warm-up turn: the SDK imported, the connection open, the first answer rendered.
    app.send(WARMUP_PROMPT)
    await until(lambda: not app.busy, 60, "the warm-up turn")
    await app.workers.wait_for_complete()
    await pilot.pause()
    log("warm-up done")
    probes = Probes(app)
    await asyncio.sleep(0.5)

    idle_start = time.perf_counter()
    await probes.type_for(args.seconds, args.key_rate)
    await asyncio.sleep(0.2)
    idle_end = time.perf_counter()
    results["idle"] = probes.window(idle_start, idle_end)
    log("idle phase done")
    app.prompt.set_text("")

    if args.source == "lab":
        size = int(args.tps * CHARS_PER_TOKEN * args.seconds)
        await asyncio.to_thread(lab_configure, url, faults="slow:1", slow_pause=args.seconds / 70)
        prompt = f"!big {size // 1024}KB"
    else:
        prompt = STREAM_PROMPT
    sent_at = time.perf_counter()
    app.send(prompt)
    await until(lambda: probes.deltas, 60, "the first delta")
    stream_start = probes.deltas[0][0]
    typer = asyncio.ensure_future(probes.type_for(0, args.key_rate, until=lambda: not app.busy))
    await until(lambda: not app.busy, args.seconds * 6 + 60, "the streamed turn")
    stream_end = probes.deltas[-1][0]
    await typer
    # Rendered = the chat no longer streams AND the app has handled every event queued before this point:
    # a design that draws the final answer inside the app's event handler (awaiting a Markdown update)
    # is done only when that handler returns, which `chat.streaming` alone does not show.
    handled = asyncio.Event()
    app.call_later(handled.set)
    await until(lambda: handled.is_set() and not app.chat.streaming, 60, "the answer to render")
    finished = time.perf_counter()
    probes.stop()
    await probes.task
    log("stream phase done")
    results["stream"] = probes.window(stream_start, stream_end)
    chars = sum(n for t, n in probes.deltas)
    duration = stream_end - stream_start
    answer = app.chat.last_answer()
    results["stream"].update(
        {
            "target_tps": args.tps,
            "chars": chars,
            "deltas": len(probes.deltas),
            "delivered_tps": round(chars / CHARS_PER_TOKEN / duration) if duration else None,
            "first_delta_ms": round((stream_start - sent_at) * 1000, 1),
            "render_done_after_last_delta_ms": round((finished - stream_end) * 1000, 1),
            "render_done_loop_gap_max_ms": round(
                max((g * 1000 for t, g in probes.loop_gaps if stream_end < t <= finished), default=0.0), 1
            ),
            "answer_chars_rendered": len(answer.raw) if answer else 0,
            **{f"turn_{k}": v for k, v in probes.disk(sent_at, finished).items()},  # from send to rendered
        }
    )
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    results["keys_sent"], results["keys_applied"] = len(probes.sent), len(probes.changed)
    results["typed_ok"] = len(probes.sent) == len(probes.changed)
    await app.action_quit()


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--source", choices=("paced", "lab"), default="paced", help="what paces the stream")
    p.add_argument("--tps", type=float, default=2000, help="tokens per second streamed (1 token = 4 chars)")
    p.add_argument("--seconds", type=float, default=None, help="length of each phase (default 10; --quick 4)")
    p.add_argument("--key-rate", type=float, default=10, help="keys per second the simulated user types")
    p.add_argument("--delta-chars", type=int, default=16, help="chars per text_delta (paced source)")
    p.add_argument(
        "--text",
        choices=tuple(TEXTS),
        default="markdown",
        help="what the paced source streams: block-rich Markdown (default) or long plain paragraphs",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="measure in a resumed 2 MiB / 4,000-message session instead of a new one",
    )
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.seconds = args.seconds or (4.0 if args.quick else 10.0)
    if args.serve:
        serve(args.tps, args.seconds, args.delta_chars, args.text)
        return 0
    out = Output("tui_stream", args.json)
    with temp_home() as home:
        workspace = home / "workspace"
        workspace.mkdir()
        proc, url = start_source(args, home)
        try:
            results = asyncio.run(run_app(args, url, workspace))
        finally:
            with contextlib.suppress(Exception):
                if proc.stdin:
                    proc.stdin.close()
                proc.terminate()
                proc.wait(timeout=10)
    where = f" in a resumed {RESUME_SIZE[1]:,}-message session" if args.resume else ""
    out.text(
        f"TUI stream{where}: {args.source} source at {args.tps:,.0f} tok/s, typing {args.key_rate:g} keys/s, "
        f"{args.seconds:g} s phases, {SIZE[0]}×{SIZE[1]} headless; {machine_note()}"
    )
    out.text(
        f"{'phase':<7} {'loop gap p50/p99/max ms':>24} {'frame gap p50/p99/max ms':>25} {'fps':>5} "
        f"{'key→value p50/p99':>18} {'key→frame p50/p99':>18} {'keys':>5}"
    )
    for phase in ("idle", "stream"):
        r = results[phase]
        out.record(
            {"phase": phase, "source": args.source, **r},
            f"{phase:<7} {r['loop_gap_p50_ms']:>8.1f}/{r['loop_gap_p99_ms']:.1f}/{r['loop_gap_max_ms']:<7.1f} "
            f"{r['frame_gap_p50_ms']:>10.1f}/{r['frame_gap_p99_ms']:.1f}/{r['frame_gap_max_ms']:<7.1f} "
            f"{r['fps']:>5} {r['key_to_value_p50_ms']:>8.1f}/{r['key_to_value_p99_ms']:<8.1f} "
            f"{r['key_to_frame_p50_ms']:>8.1f}/{r['key_to_frame_p99_ms']:<8.1f} {r['keys']:>5}",
        )
    s, i = results["stream"], results["idle"]
    out.text(
        f"stream: {s['deltas']:,} deltas, {s['chars']:,} chars in {s['seconds']} s → delivered "
        f"{s['delivered_tps']:,} tok/s (target {s['target_tps']:,.0f}); first delta after "
        f"{s['first_delta_ms']} ms; rendered answer {s['answer_chars_rendered']:,} chars, complete "
        f"{s['render_done_after_last_delta_ms']} ms after the last delta; keys applied "
        f"{results['keys_applied']}/{results['keys_sent']}"
    )
    out.text(
        f"disk writes of the streamed turn (send → rendered): {s['turn_disk_writes']} (SQLite, the draft), "
        f"{s['turn_disk_write_total_ms']} ms in all; on the event loop: {s['turn_disk_writes_on_loop']} writes, "
        f"{s['turn_disk_write_on_loop_ms']} ms (longest {s['turn_disk_write_on_loop_max_ms']} ms)"
    )
    gap_ratio = ratio(s["loop_gap_p99_ms"], i["loop_gap_p99_ms"])
    key_ratio = ratio(s["key_to_frame_p99_ms"], i["key_to_frame_p99_ms"])
    growth = ratio(s["loop_gap_p99_second_half_ms"], s["loop_gap_p99_first_half_ms"])
    out.text(
        f"stream / idle (same run): loop gap p99 {fmt_ratio(gap_ratio)}, key→frame p99 {fmt_ratio(key_ratio)}; "
        f"loop gap p99 second half / first half of the stream {fmt_ratio(growth)} "
        f"({fmt_ms(s['loop_gap_p99_second_half_ms'])} vs {fmt_ms(s['loop_gap_p99_first_half_ms'])} ms)"
    )
    out.record(
        {
            "phase": "summary",
            "delivered_tps": s["delivered_tps"],
            "target_tps": args.tps,
            "loop_gap_p99_ratio": round(gap_ratio, 2),
            "key_to_frame_p99_ratio": round(key_ratio, 2),
            "loop_gap_p99_growth": round(growth, 2),
            "keys_sent": results["keys_sent"],
            "keys_applied": results["keys_applied"],
            "typed_ok": results["typed_ok"],
            "turn_disk_writes": s["turn_disk_writes"],
            "turn_disk_write_on_loop_ms": s["turn_disk_write_on_loop_ms"],
        }
    )
    out.headline(
        f"TUI streaming {args.tps:,.0f} tok/s while typing ({args.source}){where}",
        f"frame gap p50/p99 {fmt_ms(s['frame_gap_p50_ms'])}/{fmt_ms(s['frame_gap_p99_ms'])} ms, "
        f"loop gap p99 {fmt_ms(s['loop_gap_p99_ms'])} ms, key→frame p99 "
        f"{fmt_ms(s['key_to_frame_p99_ms'])} ms, {s['delivered_tps']:,} tok/s delivered",
        f"loop gap p99 stream/idle {fmt_ratio(gap_ratio)}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
