"""Benchmark: a pasted log — paste into the prompt, send, until the answer is on screen.

    python3 bench/paste.py            # table of medians
    python3 bench/paste.py --json     # one JSON line per measurement, then the headline
    python3 bench/paste.py --quick    # 1 run per case instead of 3

The real app headless (`App.run_test`, 160×48) on its built-in lab model, a private BULKHEAD_HOME.
A log of N lines (~50 bytes each) arrives as one bracketed paste (`events.Paste` posted to the
app, as the terminal driver delivers it). Timed: paste → the prompt holds it all; Enter → the
lab's answer is in the chat and the app is idle. Each size runs twice in the same process: with
the chat's folding of long prompts (what ships) and with folding turned off (the whole prompt
laid out in the chat, as before) — the ratio of the two is the figure to compare.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Output, fmt_bytes, fmt_ms, fmt_ratio, machine_note, median, parser, ratio, temp_home

SIZES = (2_000, 20_000)  # lines: ~100 KB and ~1 MB
WAIT_S = 120.0  # a guard against a hang, never a timing


def make_log(lines: int) -> str:
    return "\n".join(f'Traceback line {n}: File "x.py", line {n}, in f' for n in range(lines))


async def one_run(log: str, fold: bool) -> tuple[float, float]:
    from textual import events

    from app.config import Settings
    from app.ui import chat_items
    from app.ui.app import BulkheadApp
    from app.ui.headless import ready, until

    saved = chat_items.PROMPT_FOLD_LINES, chat_items.PROMPT_FOLD_CHARS
    if not fold:
        chat_items.PROMPT_FOLD_LINES = chat_items.PROMPT_FOLD_CHARS = 10**12
    try:
        with temp_home() as home:
            workspace = home / "ws"
            workspace.mkdir()
            app = BulkheadApp(Settings(), workspace=workspace, cursor_blink=False)
            async with app.run_test(size=(160, 48)) as pilot:
                await ready(pilot, WAIT_S)
                started = time.monotonic()
                app.post_message(events.Paste(log))
                await until(pilot, lambda: len(app.prompt.text) == len(log), "the paste", WAIT_S)
                pasted = time.monotonic() - started
                started = time.monotonic()
                await pilot.press("enter")
                await until(
                    pilot, lambda: not app.busy and app.chat.last_answer() is not None, "the answer", WAIT_S
                )
                await pilot.pause()
                answered = time.monotonic() - started
                await app.action_quit()
    finally:
        chat_items.PROMPT_FOLD_LINES, chat_items.PROMPT_FOLD_CHARS = saved
    return pasted * 1000, answered * 1000


def main() -> None:
    args = parser(__doc__.splitlines()[0], runs=3).parse_args()
    runs = args.runs or (1 if args.quick else 3)
    out = Output("paste", args.json)
    out.text(f"paste: headless 160×48, lab model, {runs} run(s) per case; {machine_note()}")
    out.text(f"{'log':>14}  {'folding':>8}  {'paste ms':>9}  {'send→answer ms':>15}")
    headline = None
    for lines in SIZES:
        log = make_log(lines)
        medians = {}
        for fold in (True, False):
            results = [asyncio.run(one_run(log, fold)) for _ in range(runs)]
            paste_ms, answer_ms = median([r[0] for r in results]), median([r[1] for r in results])
            medians[fold] = answer_ms
            label = "on" if fold else "off"
            out.record(
                {
                    "lines": lines,
                    "bytes": len(log),
                    "folding": fold,
                    "paste_ms": round(paste_ms, 1),
                    "send_to_answer_ms": round(answer_ms, 1),
                },
                f"{fmt_bytes(len(log)):>14}  {label:>8}  {fmt_ms(paste_ms):>9}  {fmt_ms(answer_ms):>15}",
            )
        speedup = ratio(medians[False], medians[True])
        out.text(f"{'':>14}  send→answer without / with folding: {fmt_ratio(speedup)}")
        headline = (len(log), medians[True], medians[False], speedup)
    size, folded, unfolded, speedup = headline
    out.headline(
        f"a pasted {fmt_bytes(size)} log, send → answer on screen",
        f"{fmt_ms(folded)} ms (unfolded: {fmt_ms(unfolded)} ms)",
        f"unfolded / folded {fmt_ratio(speedup)}",
    )


if __name__ == "__main__":
    main()
