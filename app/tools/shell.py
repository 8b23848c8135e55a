"""The shell tool, and `run_command`: one way to run a command and kill everything it started.

A command runs as `bash -c COMMAND` (`/bin/sh -c` without bash) in the workspace, in a
new session — so it leads its own process group — with stdin closed (or fed with
`input`), stdout and stderr captured separately. Its processes are tracked as a tree
(`app.tools.proctree`: a cgroup where Linux allows one, else a /proc walk that also finds
`setsid` children and orphans). On timeout, on `cancel` (Esc), or when the awaiting task
itself is cancelled, every one of them gets SIGTERM, then SIGKILL after a short grace, and
`run_command` returns once none is alive — or says which survived. The event loop never
blocks (asyncio subprocesses). The hook runner (`app.engine.hooks`) uses the same function.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.model.tools import ToolSpec
from app.redact import known_secrets
from app.secrets import is_provider_credential
from app.sizes import format_size
from app.tools import proctree
from app.tools.base import (
    DEFAULT_SHELL_TIMEOUT,
    MAX_SHELL_TIMEOUT,
    ToolContext,
    ToolInfo,
    ToolOutcome,
    error,
    ok,
    schema,
)
from app.tools.files import BINARY_SAMPLE_BYTES, looks_binary
from app.tools.proctree import ProcessTree, ProcInfo

MAX_CAPTURE_BYTES = 8 * 1024 * 1024  # per stream; more is counted, not kept
KILL_GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL
DRAIN_GRACE_SECONDS = 1.0  # after the command exits, for background children still holding its output
GROUP_GONE_WAIT_SECONDS = 5.0  # how long to confirm a killed group is really gone


def shell_argv(command: str) -> list[str]:
    """`bash -c COMMAND` (no login shell, no rc files), or `/bin/sh -c` where bash is missing."""
    return [shutil.which("bash") or "/bin/sh", "-c", command]


@dataclass(frozen=True)
class ProcessResult:
    """How a command ended. `returncode` is None when we killed it (timeout or cancel)."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    cancelled: bool = False
    duration_s: float = 0.0
    pid: int | None = None
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    output_held_open: bool = False  # a background child kept stdout/stderr open after exit
    start_error: str = ""  # the process could not be started at all
    tracking: str = "group"  # how its processes were followed: cgroup | proc | group (`app.tools.proctree`)
    survivors: tuple[str, ...] = ()  # "PID (name)" of processes still alive after a kill

    @property
    def killed(self) -> bool:
        return self.timed_out or self.cancelled

    def text(self, which: str) -> str:
        data = self.stdout if which == "stdout" else self.stderr
        return data.decode("utf-8", "replace")


class _Capture:
    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.dropped = 0
        self.limit = limit

    async def pump(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol plus an event set when the process itself exits.

    `Process.wait()` also waits for the pipes to close, which never happens while a
    background child still holds them; this event does not.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


@dataclass
class _Child:
    proc: asyncio.subprocess.Process
    exited: asyncio.Event

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        """Stop holding our end of the pipes (a background child may keep the other end open)."""
        transport = getattr(self.proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def wait_exit(self, timeout: float | None = None) -> bool:
        """True once the process has exited (within `timeout`)."""
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except TimeoutError:
            return False
        return True


async def _spawn(argv: list[str], **kwargs: Any) -> _Child:
    loop = asyncio.get_running_loop()
    protocols: list[_ExitAwareProtocol] = []

    def factory() -> _ExitAwareProtocol:
        protocol = _ExitAwareProtocol(1 << 16, loop)
        protocols.append(protocol)
        return protocol

    transport, protocol = await loop.subprocess_exec(factory, *argv, **kwargs)
    return _Child(asyncio.subprocess.Process(transport, protocol, loop), protocol.exited)


async def kill_tree(
    tree: ProcessTree, child: _Child | None, grace: float = KILL_GRACE_SECONDS
) -> list[ProcInfo]:
    """SIGTERM every process of the command (its group, `setsid` children, orphans: `ProcessTree`),
    SIGKILL what is left after `grace`, wait until they are gone; return the ones that survived."""
    tree.signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace
    if child is not None:
        await child.wait_exit(grace)
    while tree.remaining() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    tree.signal_all(signal.SIGKILL)
    deadline = time.monotonic() + GROUP_GONE_WAIT_SECONDS
    while (left := tree.remaining()) and time.monotonic() < deadline:
        tree.signal_all(signal.SIGKILL)
        await asyncio.sleep(0.02)
    return left


async def _watch(tree: ProcessTree) -> None:
    """Keep noting the command's new processes while it runs (the /proc walk; nothing with a cgroup)."""
    while True:
        tree.poll()
        await asyncio.sleep(proctree.POLL_SECONDS)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write `data` and close stdin; a process that exits or closes stdin early is fine."""
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            stdin.close()


async def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
    cancel: asyncio.Event | None = None,
    max_capture_bytes: int = MAX_CAPTURE_BYTES,
    kill_grace: float = KILL_GRACE_SECONDS,
    kill_stragglers: bool = False,
) -> ProcessResult:
    """Run `argv` in its own process group and capture its output; never raises for the command's sake.

    The group is killed whole on `timeout`, when `cancel` is set, or when the awaiting task
    is cancelled (the CancelledError then propagates after the kill). When the command exits
    but a background child keeps its output open, we stop reading after a short grace; with
    `kill_stragglers` that child's group is killed too, else it is left running.
    """
    started = time.monotonic()
    if cancel is not None and cancel.is_set():
        return ProcessResult(None, b"", b"", cancelled=True)
    tree = ProcessTree.create()
    spawning = asyncio.ensure_future(
        _spawn(
            tree.wrap(argv),
            cwd=str(cwd),
            env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    )
    try:
        # Shielded: asyncio waits forever for the pipes of a process whose start was cancelled
        # while a child of it holds them (Esc at the wrong millisecond hung the turn).
        child = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            child = await asyncio.shield(spawning)
            tree.started(child.pid)
            await asyncio.shield(kill_tree(tree, child, kill_grace))
            child.close()
        tree.release()
        raise
    except (OSError, ValueError) as exc:
        tree.release()
        reason = getattr(exc, "strerror", None) or str(exc)
        where = f" in {cwd}" if isinstance(exc, FileNotFoundError) and not Path(cwd).is_dir() else ""
        return ProcessResult(
            None,
            b"",
            b"",
            start_error=f"could not start {argv[0]}{where}: {reason}",
            duration_s=time.monotonic() - started,
        )

    tree.started(child.pid)
    tracking = tree.method  # before `release` drops the cgroup
    proc = child.proc
    out, err = _Capture(max_capture_bytes), _Capture(max_capture_bytes)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [asyncio.ensure_future(out.pump(proc.stdout)), asyncio.ensure_future(err.pump(proc.stderr))]
    feeder = (
        asyncio.ensure_future(_feed(proc.stdin, input))
        if proc.stdin is not None and input is not None
        else None
    )
    waiter = asyncio.ensure_future(child.exited.wait())
    cancel_waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    watcher = asyncio.ensure_future(_watch(tree)) if tree.method == "proc" else None
    timed_out = cancelled = held_open = False
    survivors: list[ProcInfo] = []
    try:
        watched = {waiter} | ({cancel_waiter} if cancel_waiter else set())
        done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            cancelled = cancel_waiter in done
            timed_out = not cancelled
            survivors = await kill_tree(tree, child, kill_grace)
        _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE_SECONDS)
        if pending:
            held_open = True  # e.g. `server &`: a child outlives the command and keeps the pipe
            if kill_stragglers:
                survivors = await kill_tree(tree, child, kill_grace)
                await asyncio.wait(readers, timeout=DRAIN_GRACE_SECONDS)
    except BaseException:
        await asyncio.shield(kill_tree(tree, child, kill_grace))
        raise
    finally:
        for task in [*readers, waiter, *(t for t in (feeder, cancel_waiter, watcher) if t is not None)]:
            if not task.done():
                task.cancel()
        if held_open or not child.exited.is_set():
            child.close()  # stop holding our end of the pipes
        tree.release()  # what runs on purpose (`server &`) leaves the command's cgroup
    returncode = proc.returncode
    return ProcessResult(
        returncode=None if (timed_out or cancelled) else returncode,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - started,
        pid=proc.pid,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
        output_held_open=held_open,
        tracking=tracking,
        survivors=tuple(f"{p.pid} ({p.name})" for p in survivors),
    )


# -- the shell tool ----------------------------------------------------------------------------------
STARTUP_FILES = ("BASH_ENV", "ENV")  # read and run by a non-interactive bash / POSIX sh before `-c COMMAND`


def shell_env(passthrough: Iterable[str] = (), credential_names: Iterable[str] = ()) -> dict[str, str]:
    """The user's environment minus provider credentials, and minus what would make commands wait.

    Dropped: the `*_API_KEY` family, the AWS secret/session token (and key id), every route's
    `api_key_env` (`credential_names`) and any variable holding a key read from the keyring; and
    `STARTUP_FILES` (`BASH_ENV`, `ENV`), which make `bash -c` / `sh -c` run a file before the command, so
    that what runs is the command a rule or an approval saw — unless `passthrough` (the
    `shell_env_passthrough` setting) names it.
    """
    keep = set(passthrough)
    names = tuple(credential_names)
    keyring_values = {value for value, label in known_secrets().items() if label.startswith("keyring")}
    env = {
        name: value
        for name, value in os.environ.items()
        if name in keep
        or not (
            name in STARTUP_FILES or is_provider_credential(name, names) or value.strip() in keyring_values
        )
    }
    env.update(
        {
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
            "TERM": "dumb",
            "BULKHEAD_TOOL": "shell",
        }
    )
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _stream_text(data: bytes, name: str, dropped: int) -> str:
    """A stream as text for the model — or one line saying it was binary, as read_file does."""
    if looks_binary(data[:BINARY_SAMPLE_BYTES]):
        size = len(data) + dropped
        return (
            f"[{name}: {size:,} bytes of binary data ({format_size(size)}), not shown; redirect it to a file "
            f"and inspect it with `file`, `xxd FILE | head` or `strings FILE | head`]"
        )
    return data.decode("utf-8", "replace")


def _what_was_killed(result: ProcessResult, how: str) -> str:
    """The honest sentence about the kill: everything, or which processes survived, or what could not be seen."""
    if result.survivors:
        return (
            f"the command was stopped ({how}), but {len(result.survivors)} of its processes survived: "
            f"{', '.join(result.survivors[:5])}{' …' if len(result.survivors) > 5 else ''} — stop them by hand "
            f"(`kill -9 PID`)"
        )
    if result.tracking == "cgroup":
        return f"the command and every process it started were killed ({how})"
    if result.tracking == "proc":
        return (
            f"the command and every process bulkhead saw it start (setsid and orphaned ones included) were "
            f"killed ({how})"
        )
    return (
        f"the command's process group was killed ({how}); a process that left the group (setsid, daemons) "
        f"cannot be tracked on this system"
    )


def _render(result: ProcessResult, command: str, timeout: float) -> ToolOutcome:
    stdout = _stream_text(result.stdout, "stdout", result.stdout_dropped)
    stderr = _stream_text(result.stderr, "stderr", result.stderr_dropped)
    sections: list[str] = []
    if stdout:
        sections.append(stdout.rstrip("\n"))
    if stderr:
        sections.append(stderr if stderr.startswith("[stderr:") else "[stderr]\n" + stderr.rstrip("\n"))
    notes: list[str] = []
    if result.stdout_dropped or result.stderr_dropped:
        notes.append(
            f"output beyond {MAX_CAPTURE_BYTES // (1024 * 1024)} MB per stream was discarded "
            f"({result.stdout_dropped + result.stderr_dropped:,} bytes)"
        )
    if result.output_held_open:
        notes.append(
            "a background process kept the output open; what it printed after the command "
            "ended is not shown (redirect it, e.g. `cmd > cmd.log 2>&1 &`, to let it run)"
        )
    body = "\n".join(sections)

    def with_notes(head: str) -> str:
        parts = [head] if head else []
        if body:
            parts.append(body)
        parts.extend(f"[{note}]" for note in notes)
        return "\n".join(parts)

    if result.timed_out:
        killed = _what_was_killed(result, "SIGTERM, then SIGKILL")
        return error(
            with_notes(
                f"Timed out after {timeout:g} s: {killed}. Output so far:"
                if body
                else f"Timed out after {timeout:g} s: {killed}; it printed nothing."
            )
        )
    if result.cancelled:
        killed = _what_was_killed(result, "stopped")
        return error(
            with_notes(f"Cancelled by the user (Esc): {killed}." + (" Output so far:" if body else ""))
        )
    code = result.returncode
    if code == 0:
        return ok(with_notes("" if body else "(no output; exit code 0)"))
    if code is not None and code < 0:
        return error(with_notes(f"Killed by {_signal_name(code)}."))
    if code == 127:
        first_word = command.strip().split()[0] if command.strip() else command
        return error(
            with_notes(
                f"Command not found (exit 127): `{first_word}` or a command it runs is not "
                f"installed or not on PATH."
            )
        )
    if code == 126:
        return error(with_notes("Permission denied or not executable (exit 126)."))
    return error(with_notes(f"Exit code {code}."))


async def shell(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    command: str = args["command"]
    if not command.strip():
        return error("shell: command is empty")
    timeout = float(args.get("timeout") or ctx.shell_timeout_default)
    timeout = min(max(timeout, 0.1), MAX_SHELL_TIMEOUT)
    if ctx.cancel is not None and ctx.cancel.is_set():
        return error("Not run: the user cancelled (Esc) before the command started.")
    env = shell_env(ctx.shell_env_passthrough, ctx.credential_env_names)
    result = await run_command(
        shell_argv(command), cwd=Path(ctx.workspace), env=env, timeout=timeout, cancel=ctx.cancel
    )
    if result.start_error:
        return error(f"shell: {result.start_error}")
    return _render(result, command, timeout)


# -- what the model is told ---------------------------------------------------------------------------
TOOLS: tuple[ToolInfo, ...] = (
    ToolInfo(
        ToolSpec(
            "shell",
            "Run a shell command in the workspace (bash -c) and return its stdout, stderr and exit code. "
            "No terminal and no input: interactive programs get end-of-file. Killed, with every process "
            "it started, at the timeout or when the user cancels.",
            schema(
                {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout": {
                        "type": "number",
                        "minimum": 1,
                        "maximum": MAX_SHELL_TIMEOUT,
                        "description": f"Seconds before it is killed (default {DEFAULT_SHELL_TIMEOUT:g}).",
                    },
                },
                ["command"],
            ),
        ),
        "shell",
        shell,
    ),
)
