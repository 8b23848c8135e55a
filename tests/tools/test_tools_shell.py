"""shell: exit codes, stderr, command not found, timeouts and Esc kill the whole process group."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tools import shell as shell_module
from app.tools.base import ToolContext, run_tool


def pid_alive(pid: int) -> bool:
    """True while `pid` is a live (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat[stat.rfind(")") + 2] not in "ZX"


async def wait_until(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Poll `condition` (a polling helper, not a bare sleep); fail after `limit` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def ctx(ws: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=ws, session_folder=tmp_path / "session", cancel=asyncio.Event())


async def test_stdout_of_a_successful_command(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "echo hello; echo world"}, ctx)
    assert not outcome.is_error and outcome.content == "hello\nworld"


async def test_runs_in_the_workspace_with_stdin_closed(ctx: ToolContext, ws: Path) -> None:
    outcome = await run_tool("shell", {"command": "pwd; cat; echo done"}, ctx)
    assert outcome.content == f"{ws}\ndone"


async def test_no_output(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "true"}, ctx)
    assert not outcome.is_error and outcome.content == "(no output; exit code 0)"


async def test_stderr_of_a_successful_command_is_shown(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "echo out; echo warn >&2"}, ctx)
    assert not outcome.is_error and outcome.content == "out\n[stderr]\nwarn"


async def test_non_zero_exit_is_an_error_with_code_and_stderr(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "echo partial; echo 'it broke' >&2; exit 3"}, ctx)
    assert outcome.is_error
    assert outcome.content == "Exit code 3.\npartial\n[stderr]\nit broke"


async def test_command_not_found_is_said_plainly(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "definitely-not-a-command-xyz --flag"}, ctx)
    assert outcome.is_error
    assert outcome.content.startswith("Command not found (exit 127): `definitely-not-a-command-xyz`")
    assert "not found" in outcome.content.split("[stderr]")[1]


async def test_killed_by_a_signal(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "kill -SEGV $$"}, ctx)
    assert outcome.is_error and "SIGSEGV" in outcome.content


async def test_timeout_kills_the_whole_group_including_children(ctx: ToolContext, ws: Path) -> None:
    command = "echo started; sleep 1000 & echo $! > child.pid; wait"
    outcome = await run_tool("shell", {"command": command, "timeout": 1}, ctx)
    assert outcome.is_error
    assert outcome.content.startswith("Timed out after 1 s: the command and every process it started were killed")
    assert "started" in outcome.content
    child = int((ws / "child.pid").read_text())
    assert not pid_alive(child)


async def test_default_timeout_comes_from_the_context(ws: Path, tmp_path: Path) -> None:
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "s", shell_timeout_default=1)
    outcome = await run_tool("shell", {"command": "sleep 1000"}, ctx)
    assert outcome.is_error and "Timed out after 1 s" in outcome.content


async def test_cancel_event_kills_the_group(ctx: ToolContext, ws: Path) -> None:
    assert ctx.cancel is not None
    command = "sh -c 'sleep 1000' & echo $! > child.pid; echo waiting; wait"
    task = asyncio.ensure_future(run_tool("shell", {"command": command}, ctx))
    await wait_until(lambda: (ws / "child.pid").exists() and (ws / "child.pid").read_text().strip() != "")
    child = int((ws / "child.pid").read_text())
    assert pid_alive(child)
    ctx.cancel.set()
    outcome = await task
    assert outcome.is_error and outcome.content.startswith("Cancelled by the user (Esc)")
    assert "waiting" in outcome.content
    assert not pid_alive(child)


async def test_cancelled_before_start_runs_nothing(ctx: ToolContext, ws: Path) -> None:
    assert ctx.cancel is not None
    ctx.cancel.set()
    outcome = await run_tool("shell", {"command": "touch ran"}, ctx)
    assert outcome.is_error and "Not run" in outcome.content
    assert not (ws / "ran").exists()


async def test_cancelling_the_task_kills_the_group(ctx: ToolContext, ws: Path) -> None:
    task = asyncio.ensure_future(run_tool("shell", {"command": "sleep 1000 & echo $! > child.pid; wait"}, ctx))
    await wait_until(lambda: (ws / "child.pid").exists() and (ws / "child.pid").read_text().strip() != "")
    child = int((ws / "child.pid").read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not pid_alive(child)


async def test_the_event_loop_is_not_blocked(ctx: ToolContext, ws: Path) -> None:
    # The command waits for a file that only this coroutine creates while the command runs.
    command = "for i in $(seq 1 2000); do [ -f go ] && echo saw-go && exit 0; sleep 0.01; done; exit 1"
    task = asyncio.ensure_future(run_tool("shell", {"command": command, "timeout": 60}, ctx))
    await asyncio.sleep(0)
    (ws / "go").write_text("")
    outcome = await task
    assert outcome.content == "saw-go"


async def test_background_child_holding_the_output_does_not_hang(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "sleep 1000 & echo $!"}, ctx)
    child = int(outcome.content.splitlines()[0])
    try:
        assert not outcome.is_error
        assert "a background process kept the output open" in outcome.content
    finally:
        os.kill(child, 9)


async def test_missing_workspace_is_an_error(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path / "gone", session_folder=tmp_path / "s")
    outcome = await run_tool("shell", {"command": "echo hi"}, ctx)
    assert outcome.is_error and "could not start" in outcome.content


async def test_long_output_is_budget_cut_and_spilled(ws: Path, tmp_path: Path) -> None:
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "session", result_max_chars=2_000)
    outcome = await run_tool("shell", {"command": "seq 1 20000"}, ctx)
    assert not outcome.is_error and len(outcome.content) <= 2_000
    assert outcome.spill_path is not None
    assert outcome.spill_path.read_text() == "\n".join(str(n) for n in range(1, 20001))
    assert outcome.chars_total == len(outcome.spill_path.read_text())


async def test_capture_limit(ctx: ToolContext) -> None:
    result = await shell_module.run_command(shell_module.shell_argv("head -c 5000 /dev/zero | tr '\\0' a"),
                                            cwd=ctx.workspace, max_capture_bytes=1000)
    assert len(result.stdout) == 1000 and result.stdout_dropped == 4000 and result.returncode == 0
