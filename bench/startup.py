"""Benchmark: startup — process start to first frame, to the open session, to the first answer; SDK import cost.

    python3 bench/startup.py            # table of medians
    python3 bench/startup.py --json     # one JSON line per measurement, then the headline
    python3 bench/startup.py --quick    # 3 runs each instead of 7

Every run starts a NEW process (the disk cache is warm after the first: "cold" means a cold
interpreter, not a cold disk), with its own empty BULKHEAD_HOME and config and no provider
keys, so bulkhead opens a new session on its built-in lab model. Every process reads compiled
bytecode, as an installed bulkhead does: where PYTHONDONTWRITEBYTECODE is set (this machine sets it),
from a cache folder of the bench's own (`bench.common.with_bytecode_cache`; one untimed run of each
kind writes it) — else every run would compile all of `app/` again (~90 ms no user pays). Definitions:

- pty, first frame: `python3 -m app` on a pseudo-terminal of 160×48 (TERM=xterm-256color);
  t0 is just before fork; "first frame" is the moment the pty carries the first paint of the
  screen — the bytes of the top bar's text `bulkhead ·`, written by Textual's first full-screen
  update. "session open" is when the top bar is repainted with the route (`(offline)`), i.e.
  the engine was opened in its worker (database, session, route) and the first frame after it
  was written. 3 s later the process is sent Ctrl+Q, and the time to its exit is timed too.
- in-process (a lower bound without a terminal): a fresh interpreter imports `app.ui.app`,
  builds `BulkheadApp` and runs it with `App.run_test(size=(160, 48))`; first frame is the first
  call of `app._display` (the first compositor update, after rendering); session open is
  `app.engine_ready`. It also records whether the provider SDK (`anthropic`, which the lab
  route uses) was already imported at the first frame — DESIGN says first paint must not wait
  for it (it is imported in the engine worker afterwards).
- one-shot: `bulkhead -p hello` (the installed console script, else `python3 -m app -p hello`)
  end to end: start → first byte of the answer on stdout, and → exit. With no provider configured
  it starts the lab in-process and answers from it.
- SDK import cost: `import anthropic` / `import openai` / `import boto3` timed inside a fresh
  interpreter (just the import statement), next to `import app.ui.app` (what the TUI imports
  before its first frame) and `import textual.app`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    ROOT,
    Output,
    fmt_ms,
    fmt_ratio,
    isolated_env,
    machine_note,
    median,
    parser,
    ratio,
    with_bytecode_cache,
)

ROWS, COLS = 48, 160
FIRST_FRAME_MARK = "bulkhead ·".encode()
SESSION_MARK = b"(offline)"
TIMEOUT_S = 60.0
QUIT_AFTER_S = (
    3.0  # Ctrl+Q this long after the session opened (quitting earlier also waits for the SDK import)
)


BARE_APP = ROOT / "bench" / "bare_textual.py"
BARE_GOAL = 1.15  # issue 43: bulkhead's first frame at most this many times the bare app's


def child_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The isolated environment of a measured process, with compiled bytecode as an installed bulkhead has it."""
    return with_bytecode_cache(isolated_env(home, extra))


def warm_up() -> None:
    """One untimed run of each kind: the bytecode cache (`with_bytecode_cache`) is written by the first."""
    pty_run()
    pty_run([sys.executable, str(BARE_APP)], session_mark=None)
    oneshot_run()
    with tempfile.TemporaryDirectory(prefix="bulkhead-startup-") as folder:
        subprocess.run(
            [sys.executable, "-c", "import " + ", ".join(IMPORTS)],
            env=child_env(Path(folder)),
            capture_output=True,
            timeout=TIMEOUT_S,
            cwd=ROOT,
        )


def pty_run(argv: list[str] | None = None, session_mark: bytes | None = SESSION_MARK) -> dict:
    """One `python3 -m app` (or `argv`) on a pty: ms to first frame, to the session open frame (`session_mark`;
    None: none to wait for), and to exit after Ctrl+Q."""
    with tempfile.TemporaryDirectory(prefix="bulkhead-startup-") as folder:
        home = Path(folder)
        env = child_env(home, {"TERM": "xterm-256color", "COLUMNS": str(COLS), "LINES": str(ROWS)})
        start = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the app
            try:
                os.chdir(home)
                os.execve(sys.executable, argv or [sys.executable, "-m", "app"], env)
            finally:
                os._exit(127)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        seen = b""
        first = session = None
        deadline = start + TIMEOUT_S
        try:
            while time.perf_counter() < deadline and session is None and not (first and session_mark is None):
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    break
                now = time.perf_counter()
                seen = seen[-4096:] + data
                if first is None and FIRST_FRAME_MARK in seen:
                    first = now
                if first is not None and session_mark is not None and session_mark in seen:
                    session = now
            settle = time.perf_counter() + QUIT_AFTER_S
            while time.perf_counter() < settle:  # let the session settle (SDK prewarm done), keep reading
                ready, _, _ = select.select([fd], [], [], 0.05)
                if ready:
                    with contextlib.suppress(OSError):
                        os.read(fd, 1 << 16)
            quit_at = time.perf_counter()
            os.write(fd, b"\x11")  # Ctrl+Q
            exited = None
            while time.perf_counter() < quit_at + 15:
                with contextlib.suppress(OSError):
                    ready, _, _ = select.select([fd], [], [], 0.05)
                    if ready:
                        os.read(fd, 1 << 16)
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    exited = time.perf_counter()
                    break
        finally:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                if not exited:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
            os.close(fd)
    if first is None:
        raise RuntimeError(f"no first frame within {TIMEOUT_S:.0f} s; last output: {seen[-300:]!r}")
    return {
        "first_frame_ms": (first - start) * 1000,
        "session_open_ms": (session - start) * 1000 if session else float("nan"),
        "quit_ms": (exited - quit_at) * 1000 if exited else float("nan"),
    }


IN_PROCESS = textwrap.dedent("""
    import asyncio, json, sys, time
    t_script = time.monotonic()
    from app.config import load_settings
    from app.ui.app import BulkheadApp
    t_imported = time.monotonic()
    marks = {}

    async def main():
        app = BulkheadApp(load_settings(), workspace=sys.argv[1], cursor_blink=False, keymap={})
        original = app._display

        def display(screen, renderable):
            if renderable is not None and "first_frame" not in marks:
                marks["first_frame"] = time.monotonic()
                marks["sdk_at_first_frame"] = "anthropic" in sys.modules
            return original(screen, renderable)

        app._display = display
        marks["constructed"] = time.monotonic()
        async with app.run_test(size=(160, 48)):
            while not app.engine_ready.is_set():
                await asyncio.sleep(0.002)
            marks["engine_ready"] = time.monotonic()
            marks["sdk_at_engine_ready"] = "anthropic" in sys.modules
            await app.action_quit()

    asyncio.run(main())
    print(json.dumps({"script": t_script, "imported": t_imported, **marks}), file=sys.__stdout__)
""")


def in_process_run() -> dict:
    with tempfile.TemporaryDirectory(prefix="bulkhead-startup-") as folder:
        home = Path(folder)
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, str(home)],
            env=child_env(home),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=home,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"in-process run failed ({done.returncode}): {done.stderr[-800:]}")
    m = json.loads(lines[-1])
    return {
        "interpreter_ms": (m["script"] - start) * 1000,
        "import_app_ms": (m["imported"] - m["script"]) * 1000,
        "construct_to_first_frame_ms": (m["first_frame"] - m["constructed"]) * 1000,
        "start_to_first_frame_ms": (m["first_frame"] - start) * 1000,
        "first_frame_to_engine_ready_ms": (m["engine_ready"] - m["first_frame"]) * 1000,
        "sdk_at_first_frame": m["sdk_at_first_frame"],
        "sdk_at_engine_ready": m["sdk_at_engine_ready"],
    }


def oneshot_command() -> tuple[list[str], str]:
    script = Path(sys.executable).parent / "bulkhead"
    if script.is_file():
        return [str(script), "-p", "hello"], "bulkhead -p hello"
    return [sys.executable, "-m", "app", "-p", "hello"], "python3 -m app -p hello"


def oneshot_run() -> dict:
    command, _ = oneshot_command()
    with tempfile.TemporaryDirectory(prefix="bulkhead-startup-") as folder:
        home = Path(folder)
        start = time.perf_counter()
        proc = subprocess.Popen(
            command,
            env=child_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=home,
        )
        first_byte = os.read(proc.stdout.fileno(), 1)  # unbuffered: communicate() reads the rest
        first = time.perf_counter()
        rest, err = proc.communicate(timeout=TIMEOUT_S)
        end = time.perf_counter()
    if proc.returncode or not first_byte:
        raise RuntimeError(f"one-shot failed ({proc.returncode}): {err.decode(errors='replace')[-800:]}")
    return {
        "first_answer_byte_ms": (first - start) * 1000,
        "exit_ms": (end - start) * 1000,
        "answer": (first_byte + rest).decode(errors="replace").strip()[:80],
    }


IMPORT_TIMER = (
    "import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
)
IMPORTS = ("anthropic", "openai", "boto3", "app.ui.app", "textual.app")


def import_ms(module: str) -> float:
    with tempfile.TemporaryDirectory(prefix="bulkhead-startup-") as folder:
        done = subprocess.run(
            [sys.executable, "-c", IMPORT_TIMER.format(module=module)],
            capture_output=True,
            text=True,
            env=child_env(Path(folder)),
            timeout=TIMEOUT_S,
            cwd=ROOT,
        )
    if done.returncode:
        raise RuntimeError(f"import {module} failed: {done.stderr[-300:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0], runs=7)
    args = p.parse_args(argv)
    runs = args.runs or (3 if args.quick else 7)
    out = Output("startup", args.json)
    out.text(f"startup: {runs} fresh processes per measurement; {machine_note()}")

    warm_up()
    ptys, bares = [], []
    for _ in range(runs):  # alternating, so both see the same machine
        ptys.append(pty_run())
        bares.append(pty_run([sys.executable, str(BARE_APP)], session_mark=None))
    first = median([r["first_frame_ms"] for r in ptys])
    bare_first = median([r["first_frame_ms"] for r in bares])
    first_ratio = ratio(first, bare_first)
    out.record(
        {
            "kind": "pty_vs_bare",
            "first_frame_ms": round(first, 1),
            "bare_first_frame_ms": round(bare_first, 1),
            "ratio": round(first_ratio, 3),
            "goal": BARE_GOAL,
            "runs": runs,
        },
        f"first frame beside a bare Textual app with the same widget kinds (bench/bare_textual.py), "
        f"alternating: {fmt_ms(first)} ms vs {fmt_ms(bare_first)} ms = {fmt_ratio(first_ratio)} "
        f"(goal ≤ {BARE_GOAL}×: {'met' if first_ratio <= BARE_GOAL else 'NOT met'})",
    )
    session = median([r["session_open_ms"] for r in ptys])
    quit_ms = median([r["quit_ms"] for r in ptys])
    out.record(
        {
            "kind": "pty",
            "first_frame_ms": round(first, 1),
            "session_open_ms": round(session, 1),
            "quit_ms": round(quit_ms, 1),
            "runs": runs,
        },
        f"python3 -m app on a pty: first frame {fmt_ms(first)} ms · session open {fmt_ms(session)} ms · "
        f"Ctrl+Q → exit {fmt_ms(quit_ms)} ms (3 s after it opened)   (medians; min first frame "
        f"{fmt_ms(min(r['first_frame_ms'] for r in ptys))} ms)",
    )

    inproc = [in_process_run() for _ in range(runs)]
    fields = (
        "interpreter_ms",
        "import_app_ms",
        "construct_to_first_frame_ms",
        "start_to_first_frame_ms",
        "first_frame_to_engine_ready_ms",
    )
    med = {k: median([r[k] for r in inproc]) for k in fields}
    sdk_first = sum(r["sdk_at_first_frame"] for r in inproc)
    sdk_ready = sum(r["sdk_at_engine_ready"] for r in inproc)
    out.record(
        {
            "kind": "in_process",
            **{k: round(v, 1) for k, v in med.items()},
            "sdk_imported_at_first_frame": f"{sdk_first}/{runs}",
            "sdk_imported_at_engine_ready": f"{sdk_ready}/{runs}",
        },
        f"in-process (run_test): interpreter {fmt_ms(med['interpreter_ms'])} ms + import app.ui.app "
        f"{fmt_ms(med['import_app_ms'])} ms + App → first frame {fmt_ms(med['construct_to_first_frame_ms'])} ms "
        f"= first frame at {fmt_ms(med['start_to_first_frame_ms'])} ms; engine ready "
        f"{fmt_ms(med['first_frame_to_engine_ready_ms'])} ms later; SDK already imported at the first "
        f"frame in {sdk_first}/{runs} runs",
    )

    _, label = oneshot_command()
    shots = [oneshot_run() for _ in range(runs)]
    shot_first = median([r["first_answer_byte_ms"] for r in shots])
    shot_exit = median([r["exit_ms"] for r in shots])
    out.record(
        {
            "kind": "oneshot",
            "command": label,
            "first_answer_byte_ms": round(shot_first, 1),
            "exit_ms": round(shot_exit, 1),
            "answer": shots[0]["answer"],
        },
        f"{label}: first answer byte {fmt_ms(shot_first)} ms · exit {fmt_ms(shot_exit)} ms   "
        f"(answer: {shots[0]['answer'][:60]!r}…)",
    )

    imports = {module: median([import_ms(module) for _ in range(runs)]) for module in IMPORTS}
    for module, value in imports.items():
        out.record(
            {"kind": "import", "module": module, "median_ms": round(value, 1)},
            f"import {module:<12} {fmt_ms(value):>7} ms",
        )
    sdk = imports["anthropic"]
    out.text(
        f"the anthropic SDK import ({fmt_ms(sdk)} ms) is {fmt_ratio(ratio(sdk, first))} of the pty first "
        f"frame; {'it is not' if sdk_first == 0 else 'it IS'} imported before the first frame"
    )
    out.headline(
        "startup to first frame (pty, lab session)",
        f"first frame {fmt_ms(first)} ms ({fmt_ratio(first_ratio)} a bare Textual app), session open "
        f"{fmt_ms(session)} ms; `{label}` answers in "
        f"{fmt_ms(shot_first)} ms; SDK import {fmt_ms(sdk)} ms not on the first-frame path"
        if sdk_first == 0
        else f"first frame {fmt_ms(first)} ms (SDK imported before it!)",
        f"SDK import / first frame {fmt_ratio(ratio(sdk, first))}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
