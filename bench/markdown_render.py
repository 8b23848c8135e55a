"""Benchmark: a streamed answer in Markdown — bulkhead's AnswerView beside Textual's own Markdown stream.

    python3 bench/markdown_render.py            # table of medians
    python3 bench/markdown_render.py --json     # one JSON line per measurement, then the headline
    python3 bench/markdown_render.py --quick    # 1 run of the 32 KB answer only (Textual's takes ~40 s here)

Each case is a headless app (`App.run_test`, 160×48) holding one widget: `app.ui.markdown.widget.AnswerView`
(what ships) or `textual.widgets.Markdown` fed through `Markdown.get_stream()` (Textual's MarkdownStream, what
STYLE.md would otherwise have us use). The same answer (prose, lists, code fences, a table; 32 KB or 128 KB)
arrives in 40-character deltas, the app's loop gets a turn after each 8 (as a provider's stream would give it);
then the stream is finished and the app waits until everything is drawn. Timed: the whole stream, start to
fully drawn, and the event loop's worst gap while it ran (p99 of a 1 ms ticker's lateness: what typing feels).
Each Textual upgrade reruns this to decide whether the custom painter still earns its cost.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Output, fmt_bytes, fmt_ms, fmt_ratio, machine_note, median, parser, percentile, ratio

SIZES = (32 * 1024, 128 * 1024)
DELTA_CHARS = 40
DELTAS_PER_TURN = 8
WAIT_TURNS = 100_000  # a guard against a hang, never a timing

SECTION = """\
## Step {n}: what changed

The handler now checks the **payload size** before it sends, and *retries* once with a smaller body when a
gateway answers `413`. See [the notes](https://example.com/notes/{n}) for the measurements.

- read the cap from `state.toml`
- compact to 70% of it
  - keep the last user message verbatim
1. measure
2. send

```python
def send(request, cap):
    body = encode(request)
    if len(body) > cap:
        body = compact(request, int(cap * 0.7))
    return post(body)  # {n}
```

| size | result | time |
|------|--------|------|
| 512 KB | sent | 1.2 s |
| 2 MB | compacted | 3.4 s |

"""


def make_answer(size: int) -> str:
    parts, n = [], 0
    while sum(len(p) for p in parts) < size:
        n += 1
        parts.append(SECTION.format(n=n))
    return "".join(parts)[:size]


async def one_run(answer: str, which: str) -> tuple[float, float]:
    from textual.app import App, ComposeResult
    from textual.widgets import Markdown

    from app.ui.markdown.widget import AnswerView

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield AnswerView("", streaming=True) if which == "bulkhead" else Markdown("")

    app = Host()
    lateness: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                before = time.perf_counter()
                await asyncio.sleep(0.001)
                lateness.append((time.perf_counter() - before - 0.001) * 1000)

        tick = asyncio.create_task(ticker())
        started = time.perf_counter()
        deltas = [answer[i : i + DELTA_CHARS] for i in range(0, len(answer), DELTA_CHARS)]
        if which == "bulkhead":
            view = app.query_one(AnswerView)
            for index, delta in enumerate(deltas, 1):
                view.append(delta)
                if index % DELTAS_PER_TURN == 0:
                    await asyncio.sleep(0)
            view.finish(answer)
            for _ in range(WAIT_TURNS):
                await pilot.pause()
                if view.rendered:
                    break
        else:
            markdown = app.query_one(Markdown)
            stream = Markdown.get_stream(markdown)
            for index, delta in enumerate(deltas, 1):
                await stream.write(delta)
                if index % DELTAS_PER_TURN == 0:
                    await asyncio.sleep(0)
            await stream.stop()
            await pilot.pause()
        await pilot.pause()
        elapsed = (time.perf_counter() - started) * 1000
        stop.set()
        await tick
    return elapsed, percentile(lateness, 99) if lateness else 0.0


def main() -> None:
    args = parser(__doc__.splitlines()[0], runs=3).parse_args()
    runs = args.runs or (1 if args.quick else 3)
    out = Output("markdown_render", args.json)
    out.text(
        f"markdown_render: headless 160×48, {DELTA_CHARS}-char deltas, {runs} run(s) per case; {machine_note()}"
    )
    out.text(f"{'answer':>10}  {'widget':>22}  {'stream→drawn ms':>16}  {'loop gap p99 ms':>16}")
    headline = None
    for size in SIZES[:1] if args.quick else SIZES:
        answer = make_answer(size)
        medians = {}
        for which in ("bulkhead", "textual"):
            results = [asyncio.run(one_run(answer, which)) for _ in range(runs)]
            total, gap = median([r[0] for r in results]), median([r[1] for r in results])
            medians[which] = (total, gap)
            label = "AnswerView" if which == "bulkhead" else "Markdown.get_stream()"
            out.record(
                {
                    "bytes": size,
                    "widget": which,
                    "stream_to_drawn_ms": round(total, 1),
                    "loop_gap_p99_ms": round(gap, 1),
                },
                f"{fmt_bytes(size):>10}  {label:>22}  {fmt_ms(total):>16}  {fmt_ms(gap):>16}",
            )
        headline = (size, medians)
    size, medians = headline
    (ours, our_gap), (theirs, their_gap) = medians["bulkhead"], medians["textual"]
    out.headline(
        f"a {fmt_bytes(size)} Markdown answer streamed, AnswerView vs Markdown.get_stream()",
        f"{fmt_ms(ours)} ms, loop gap p99 {fmt_ms(our_gap)} ms (Textual: {fmt_ms(theirs)} ms, "
        f"{fmt_ms(their_gap)} ms)",
        f"Textual / AnswerView {fmt_ratio(ratio(theirs, ours))}",
    )


if __name__ == "__main__":
    main()
