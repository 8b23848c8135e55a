"""What the benchmarks share: synthetic sessions, timing and percentiles, ratio and JSON output.

Every benchmark is run by hand (`python3 bench/NAME.py`), prints medians over repeated runs and,
where it compares two things, the RATIO of figures measured in the same run: the machine is
shared and noisy (2 cores), so absolute times move from run to run and ratios much less.
`--json` prints one JSON object per line instead of a table; the last line of a benchmark that
has a headline is `{"bench": NAME, "headline": {"what", "figure", "ratio"}}` (`run_all.py`
collects those). `--quick` is a fast smoke run with fewer repetitions.

Synthetic sessions (`synthetic_session`) are the ones `bench/compaction.py` has always used:
`messages` messages plus a system message, a third of them large tool results (reads of a
handful of files with varied ranges, shell and grep outputs — text with some unicode), the
rest user prompts and assistant messages with tool calls, scaled so the session is `size_mb`
MiB as compact JSON. `mixed_session` adds a few base64 images in user messages on top of that.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.config import Route, Settings  # noqa: E402
from app.engine.compaction.context import JsonMeasure  # noqa: E402
from app.model.messages import Image, Message, Text, ToolCall, ToolResult  # noqa: E402
from app.model.prompts import SYSTEM_PROMPT  # noqa: E402

MB = 1024 * 1024
SIZES = ((1, 400), (5, 400), (10, 800))  # (MiB, messages) of the sessions the benchmarks use
PATHS = [f"app/module_{i}.py" for i in range(12)]
# Variables that would make a benchmark talk to a real provider or read the user's files.
SCRUB_ENV = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
)


# -- synthetic sessions ----------------------------------------------------------------------------


def filler(size: int, seed: int) -> str:
    line = f"{seed:05d} │ def handler_{seed}(request): return process(request, mode='fast')  # ✓ ünïcødé\n"
    return (line * (size // len(line) + 1))[:size]


def synthetic_session(size_mb: int, messages: int) -> tuple[Message, ...]:
    """`messages` messages (+ a system message), a third large tool results, `size_mb` MiB as JSON."""
    cycles = messages // 3
    first = _session(cycles, messages, 10_000)
    small = JsonMeasure()(first) - cycles * 10_000 * len(filler(10_000, 0).encode()) // 10_000
    unit = len(filler(10_000, 0).encode()) / 10_000  # bytes per filler char (some are multi-byte)
    return _session(cycles, messages, max(1000, int((size_mb * MB - small) / cycles / unit)))


def _session(cycles: int, messages: int, large: int) -> tuple[Message, ...]:
    """`cycles` × (user prompt, assistant with a tool call, a tool result of `large` chars), padded."""
    out: list[Message] = [Message.create("system", SYSTEM_PROMPT, turn=0)]
    turn = 0
    for i in range(cycles):
        if i % 2 == 0:
            turn += 1
        out.append(Message.create("user", f"step {i}: please continue with module {i % 12} — ✓", turn=turn))
        kind = i % 3
        if kind == 0:
            offset = [None, 0, 100, 200][i % 4]
            limit = [None, 400, 200][i % 3]
            args = {
                "path": PATHS[i % len(PATHS)],
                **({} if offset is None else {"offset": offset}),
                **({} if limit is None else {"limit": limit}),
            }
            call = ToolCall(f"call_{i}", "read_file", args)
        elif kind == 1:
            call = ToolCall(f"call_{i}", "shell", {"command": f"pytest -q tests/test_{i % 12}.py"})
        else:
            call = ToolCall(f"call_{i}", "grep", {"pattern": f"handler_{i}", "path": "app"})
        out.append(Message.create("assistant", [Text(f"Looking at step {i}. " * 10), call], turn=turn))
        out.append(Message.create("tool", [ToolResult(call.id, filler(large, i))], turn=turn))
    for extra in range(messages - 3 * cycles):  # pad to the exact count: an answer, then a prompt
        role = "assistant" if extra % 2 == 0 else "user"
        out.append(
            Message.create(
                role, f"Done with step {cycles - 1}." if role == "assistant" else "next", turn=turn
            )
        )
    return tuple(out)


def fake_image(size: int, seed: int) -> Image:
    """A base64 'PNG' of about `size` bytes (random bytes: images do not compress or repeat)."""
    raw = random.Random(seed).randbytes(max(16, size * 3 // 4))
    return Image("image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n" + raw).decode("ascii"))


def mixed_session(size_mb: int, messages: int, images: int = 4) -> tuple[Message, ...]:
    """`synthetic_session` with `images` of the user prompts carrying a screenshot (1% of the size each)."""
    view = list(synthetic_session(size_mb, messages))
    users = [i for i, m in enumerate(view) if m.role == "user"]
    step = max(1, len(users) // (images + 1))
    for n, index in enumerate(users[step::step][:images]):
        message = view[index]
        view[index] = Message(
            id=message.id,
            role="user",
            parts=(*message.parts, fake_image(size_mb * MB // 100, n)),
            meta=message.meta,
        )
    return tuple(view)


def new_tool_turn(n: int, size: int = 8_000) -> tuple[Message, ...]:
    """One more exchange to append to a session: (assistant with a tool call, its result)."""
    call = ToolCall(f"call_new_{n}", "read_file", {"path": f"app/new_{n}.py"})
    return (
        Message.create("assistant", [Text(f"Reading new file {n} — ✓"), call], turn=10_000 + n),
        Message.create("tool", [ToolResult(call.id, filler(size, 90_000 + n))], turn=10_000 + n),
    )


def bench_route(provider: str) -> Route:
    """A route for `provider` that never leaves the machine (adapters only build and measure here)."""
    models = {
        "anthropic": "claude-sonnet-4-5",
        "openai": "gpt-4o",
        "bedrock": "anthropic.claude-3-5-sonnet-20241022-v2:0",
        "lab": "lab-1",
    }
    return Route(name=f"bench-{provider}", provider=provider, model=models[provider])


def make_adapter(provider: str):
    """A fresh adapter (empty per-message size cache) for `provider`."""
    from app.providers.factory import make_provider

    return make_provider(bench_route(provider), Settings(), api_key="bench-not-a-key")


def provider_measure() -> tuple[Callable[[tuple[Message, ...]], int], str]:
    try:
        from app.providers.anthropic import AnthropicProvider

        route = Route(name="bench", provider="anthropic", model="claude-sonnet-4-5")
        provider = AnthropicProvider(route, Settings(), api_key="bench-not-a-key")

        def measure(view: tuple[Message, ...]) -> int:
            return provider.build(view, "", (), max_tokens=8192).predicted_bytes

        measure(synthetic_session(1, 30))  # import and warm the adapter once
        return measure, "anthropic adapter build().predicted_bytes"
    except Exception as exc:  # no adapter in this tree: fall back to JSON bytes
        print(
            f"(anthropic adapter unavailable: {type(exc).__name__}: {exc}; using JSON bytes)", file=sys.stderr
        )
        return JsonMeasure(), "sum(len(json)) per message"


# -- timing ---------------------------------------------------------------------------------------


def time_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000, result


def repeat_ms(fn: Callable[[], Any], runs: int, warmup: int = 1) -> list[float]:
    """Milliseconds of `runs` calls of `fn` after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    return [time_ms(fn)[0] for _ in range(runs)]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0–100), linear between closest ranks; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def fmt_ratio(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "n/a"
    return f"{value:,.0f}×" if value >= 100 else f"{value:.1f}×" if value >= 10 else f"{value:.2f}×"


def fmt_ms(value: float) -> str:
    if value != value:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.3f}"


def fmt_bytes(n: int | float) -> str:
    for unit, size in (("MB", MB), ("KB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


# -- memory ----------------------------------------------------------------------------------------


def proc_status_kb(field: str) -> int:
    """A `kB` field of /proc/self/status (VmRSS, VmHWM, …); 0 where /proc is not there."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb() -> int:
    value = proc_status_kb("VmRSS")
    if value:
        return value
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # peak, the best stand-in without /proc


# -- environment --------------------------------------------------------------------------------------


def isolated_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment with a private BULKHEAD_HOME and config and no provider credentials."""
    config = home / "config.toml"
    if home.is_dir() and not config.exists():
        config.write_text("")  # a named BULKHEAD_CONFIG that does not exist is an error: an empty one
    env = {k: v for k, v in os.environ.items() if not k.startswith("BULKHEAD_") and k not in SCRUB_ENV}
    env.update(
        BULKHEAD_HOME=str(home),
        BULKHEAD_CONFIG=str(home / "config.toml"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        AWS_CONFIG_FILE=str(home / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra or {})
    return env


def with_bytecode_cache(env: dict[str, str]) -> dict[str, str]:
    """`env` for a child Python that reads and writes compiled bytecode, as an installed bulkhead does (pip
    compiles every module at install time). With PYTHONDONTWRITEBYTECODE set (this machine sets it for
    the worktrees) every fresh process would compile all of `app/` from source again — ~90 ms of a start that
    a user never pays, and that a bare Textual app (its modules compiled in site-packages) does not pay either.
    The bytecode goes to a cache folder of its own (PYTHONPYCACHEPREFIX), never into the checkout; run one
    process untimed first so the timed ones find it warm."""
    if env.get("PYTHONDONTWRITEBYTECODE"):
        env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.setdefault(
            "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"bulkhead-bench-pycache-{os.getuid()}")
        )
    return env


@contextlib.contextmanager
def temp_home(prefix: str = "bulkhead-bench-") -> Iterator[Path]:
    """A throwaway BULKHEAD_HOME (with its own config path) for this process, removed afterwards."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        home = Path(folder)
        env = isolated_env(home)
        os.environ.clear()
        os.environ.update(env)
        try:
            yield home
        finally:
            os.environ.clear()
            os.environ.update(saved)


def machine_note() -> str:
    load = ""
    with contextlib.suppress(OSError):
        load = " · load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return (
        f"{os.cpu_count()} cores{load} · Python {sys.version.split()[0]} · shared, noisy machine: "
        "compare ratios measured in one run"
    )


# -- output ---------------------------------------------------------------------------------------------


def parser(description: str, *, runs: int | None = None) -> argparse.ArgumentParser:
    """The flags every benchmark takes: --json, --quick (and --runs when it repeats a measurement)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    p.add_argument("--quick", action="store_true", help="a fast smoke run: fewer repetitions")
    if runs is not None:
        p.add_argument("--runs", type=int, default=None, help=f"repetitions per measurement (default {runs})")
    return p


class Output:
    """Prints a table (lines) or JSON lines (records), whichever `--json` asked for."""

    def __init__(self, bench: str, as_json: bool) -> None:
        self.bench = bench
        self.as_json = as_json

    def text(self, line: str = "") -> None:
        if not self.as_json:
            print(line, flush=True)

    def record(self, record: dict[str, Any], line: str | None = None) -> None:
        if self.as_json:
            print(json.dumps({"bench": self.bench, **record}, ensure_ascii=False), flush=True)
        elif line is not None:
            print(line, flush=True)

    def headline(self, what: str, figure: str, ratio_text: str = "") -> None:
        """The one-line summary `run_all.py` puts in the README's table."""
        if self.as_json:
            print(
                json.dumps(
                    {"bench": self.bench, "headline": {"what": what, "figure": figure, "ratio": ratio_text}},
                    ensure_ascii=False,
                ),
                flush=True,
            )
        else:
            print(f"\nheadline: {what}: {figure}" + (f" ({ratio_text})" if ratio_text else ""), flush=True)
