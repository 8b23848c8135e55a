"""shell: exit codes, stderr, command not found, timeouts and Esc kill the whole process group."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tools import shell as shell_module
from app.tools.base import ToolContext
from app.tools.registry import run_tool


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
    assert outcome.content.startswith(
        "Timed out after 1 s: the command and every process it started were killed"
    )
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
    task = asyncio.ensure_future(
        run_tool("shell", {"command": "sleep 1000 & echo $! > child.pid; wait"}, ctx)
    )
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
    result = await shell_module.run_command(
        shell_module.shell_argv("head -c 5000 /dev/zero | tr '\\0' a"),
        cwd=ctx.workspace,
        max_capture_bytes=1000,
    )
    assert len(result.stdout) == 1000 and result.stdout_dropped == 4000 and result.returncode == 0


# -- the environment: provider credentials stay out (issue 14, item 7) -----------------------------------
CREDENTIALS = {
    "ANTHROPIC_API_KEY": "sk-ant-FAKE-shell-env-0001",
    "OPENAI_API_KEY": "sk-proj-FAKE-shell-env-0002",
    "AZURE_OPENAI_API_KEY": "FAKE-azure-shell-env-0003",
    "AWS_SECRET_ACCESS_KEY": "FAKE/aws+secret0004",
    "AWS_SESSION_TOKEN": "FAKE-aws-session-token-0005",
    "AWS_ACCESS_KEY_ID": "AKIAFAKESHELLENV0006",
    "MY_GATEWAY_SECRET": "FAKE-named-by-api-key-env-0007",
}


async def test_shell_commands_do_not_see_provider_credentials(ctx: ToolContext, monkeypatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GH_TOKEN", "FAKE-kept-for-gh-0008")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    scrubbed = ToolContext(
        workspace=ctx.workspace,
        session_folder=ctx.session_folder,
        credential_env_names=("MY_GATEWAY_SECRET",),
    )

    outcome = await run_tool("shell", {"command": "env"}, scrubbed)

    assert not outcome.is_error
    for name, value in CREDENTIALS.items():
        assert f"{name}=" not in outcome.content and value not in outcome.content, name
    assert "GH_TOKEN=FAKE-kept-for-gh-0008" in outcome.content  # not a provider credential: kept
    assert "HTTPS_PROXY=http://proxy.example:3128" in outcome.content  # commands still reach the network
    assert "PATH=" in outcome.content and "BULKHEAD_TOOL=shell" in outcome.content


async def test_shell_env_passthrough_lets_named_credentials_through(ctx: ToolContext, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEPASSTHROUGH1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-FAKE-stays-out-0009")
    allowed = ToolContext(
        workspace=ctx.workspace,
        session_folder=ctx.session_folder,
        shell_env_passthrough=("AWS_ACCESS_KEY_ID",),
    )

    outcome = await run_tool(
        "shell", {"command": "echo id=$AWS_ACCESS_KEY_ID openai=$OPENAI_API_KEY"}, allowed
    )

    assert outcome.content == "id=AKIAFAKEPASSTHROUGH1 openai="


async def test_a_startup_file_in_the_environment_runs_nothing_before_the_command(
    ctx: ToolContext, monkeypatch, tmp_path
) -> None:
    """`BASH_ENV` (and `ENV` for sh) make a non-interactive shell run a file before `-c COMMAND`: what ran
    would not be the command the rule or the approval saw. They are left out unless passed through."""
    startup = tmp_path / "startup.sh"
    startup.write_text(f"touch {tmp_path / 'ran'}\n")
    monkeypatch.setenv("BASH_ENV", str(startup))
    monkeypatch.setenv("ENV", str(startup))

    outcome = await run_tool("shell", {"command": "echo only=this"}, ctx)
    passed = ToolContext(
        workspace=ctx.workspace, session_folder=ctx.session_folder, shell_env_passthrough=("BASH_ENV",)
    )
    await run_tool("shell", {"command": "true"}, passed)

    assert outcome.content == "only=this"
    assert (tmp_path / "ran").exists()  # named in shell_env_passthrough: the user asked for it
    (tmp_path / "ran").unlink()
    await run_tool("shell", {"command": "true"}, ctx)
    assert not (tmp_path / "ran").exists()


async def test_a_keyring_key_exported_under_another_name_stays_out(ctx: ToolContext, monkeypatch) -> None:
    from app.redact import register_secret

    register_secret("sk-ant-FAKE-keyring-value-0010", "keyring anthropic")
    monkeypatch.setenv("WHATEVER", "sk-ant-FAKE-keyring-value-0010")

    outcome = await run_tool("shell", {"command": "echo [$WHATEVER]"}, ctx)

    assert outcome.content == "[]"


async def test_what_the_model_reads_is_exact_and_only_the_stored_copy_is_redacted(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    """A .env the model reads and may write back keeps its bytes; the database and spill files never hold
    the key (`app.store` and `app.tools.budget` redact by value)."""
    from app.model.messages import Message, ToolResult
    from app.redact import register_secret
    from app.store import Store

    register_secret("sk-proj-FAKE-in-a-dotenv-0011", "env OPENAI_API_KEY")
    (ws / ".env").write_text("OPENAI_API_KEY=sk-proj-FAKE-in-a-dotenv-0011\nDB=postgres://app:hunter2@db/x\n")
    small = ToolContext(workspace=ws, session_folder=tmp_path / "session", result_max_chars=1_000)

    outcome = await run_tool("shell", {"command": "cat .env; seq 1 2000"}, small)

    assert (
        "OPENAI_API_KEY=sk-proj-FAKE-in-a-dotenv-0011" in outcome.content
    )  # the model sees the file as it is
    assert outcome.spill_path is not None
    spilled = outcome.spill_path.read_text()
    assert "OPENAI_API_KEY=[redacted]" in spilled and "postgres://app:hunter2@db/x" in spilled
    store = Store(tmp_path / "db.sqlite")
    from app.engine.session import Session

    session = Session.create(store, route="r", provider="lab", model="m")
    session.append(Message.create("tool", [ToolResult("c1", outcome.content)], turn=1, origin="tool"))
    store.close()
    assert b"sk-proj-FAKE-in-a-dotenv-0011" not in (tmp_path / "db.sqlite").read_bytes() + b"".join(
        p.read_bytes() for p in (tmp_path / "session").rglob("*") if p.is_file()
    )


# -- the whole tree: setsid children, orphans (issue 14, item 9) ------------------------------------------
@pytest.fixture(params=["cgroup", "proc"])
def tracking(request, monkeypatch):
    """Each tree test runs with the cgroup (where this machine allows one) and with the /proc walk."""
    from app.tools import proctree

    if request.param == "cgroup":
        if proctree.cgroup_base() is None:
            pytest.skip("no cgroup v2 this user may create children in (the /proc walk variant still runs)")
    else:
        monkeypatch.setattr(proctree, "USE_CGROUPS", False)
    return request.param


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


async def test_a_timeout_kills_setsid_children_too(ws: Path, tmp_path: Path, tracking: str) -> None:
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "s", shell_timeout_default=1)
    command = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & sleep 300"
    try:
        outcome = await run_tool("shell", {"command": command}, ctx)
        escaped = read_pid(ws / "escaped.pid")
        assert escaped is not None
        assert outcome.is_error and outcome.content.startswith("Timed out after 1 s")
        assert not pid_alive(escaped), f"the setsid child {escaped} survived ({tracking})"
        assert "survived" not in outcome.content
    finally:
        if (pid := read_pid(ws / "escaped.pid")) and pid_alive(pid):
            os.kill(pid, 9)


async def test_esc_kills_a_detached_grandchild_whose_parent_already_left(
    ws: Path, tmp_path: Path, tracking: str
) -> None:
    """A double fork: the subshell exits at once and its setsid child is re-parented away from the command.
    A cgroup still holds it; the /proc walk cannot see it, and the result says only what it can vouch for."""
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "s", cancel=asyncio.Event())
    command = "(setsid sh -c 'echo $$ > orphan.pid; exec sleep 300' &); echo started; sleep 300"
    task = asyncio.ensure_future(run_tool("shell", {"command": command}, ctx))
    try:
        await wait_until(lambda: read_pid(ws / "orphan.pid") is not None)
        orphan = read_pid(ws / "orphan.pid")
        assert orphan is not None and pid_alive(orphan)
        assert ctx.cancel is not None
        ctx.cancel.set()
        outcome = await task
        assert outcome.content.startswith("Cancelled by the user (Esc)")
        if tracking == "cgroup":
            assert not pid_alive(orphan), outcome.content
            assert "every process it started were killed" in outcome.content
        else:
            assert "every process bulkhead saw it start" in outcome.content
    finally:
        if (pid := read_pid(ws / "orphan.pid")) and pid_alive(pid):
            os.kill(pid, 9)


async def test_a_survivor_is_named_instead_of_claiming_everything_was_killed(
    ws: Path, tmp_path: Path, monkeypatch
) -> None:
    """A process that cannot be killed (here: signals to it are swallowed) is reported, not hidden."""
    from app.tools import proctree

    real_kill = os.kill
    protected: list[int] = []

    def kill(pid: int, sig: int) -> None:
        if pid not in protected:
            real_kill(pid, sig)

    monkeypatch.setattr(proctree.os, "kill", kill)
    monkeypatch.setattr(shell_module, "GROUP_GONE_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(proctree, "USE_CGROUPS", False)
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "s", shell_timeout_default=2)
    command = "setsid sh -c 'echo $$ > stubborn.pid; exec sleep 300' & sleep 300"
    try:
        task = asyncio.ensure_future(run_tool("shell", {"command": command}, ctx))
        await wait_until(lambda: read_pid(ws / "stubborn.pid") is not None)
        protected.append(read_pid(ws / "stubborn.pid"))
        outcome = await task
        assert f"survived: {protected[0]} (sleep)" in outcome.content, outcome.content
        assert "every process" not in outcome.content
    finally:
        if (pid := read_pid(ws / "stubborn.pid")) and pid_alive(pid):
            real_kill(pid, 9)


async def test_cancelling_while_the_command_starts_kills_it_and_returns(ws: Path, tmp_path: Path) -> None:
    """Esc in the millisecond the process is being started: asyncio then waited forever for pipes a
    child still held (a hang seen under load); now the start finishes, the tree is killed, the task ends."""
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "s")
    started = asyncio.Event()
    real_spawn = shell_module._spawn

    async def slow_spawn(argv, **kwargs):
        child = await real_spawn(argv, **kwargs)
        started.set()
        await asyncio.sleep(0)  # the cancellation lands here, as if the pipes were still connecting
        await wait_until(lambda: read_pid(ws / "child.pid") is not None)
        return child

    shell_module._spawn, restore = slow_spawn, real_spawn
    try:
        task = asyncio.ensure_future(
            run_tool("shell", {"command": "sleep 300 & echo $! > child.pid; wait"}, ctx)
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)
        child = read_pid(ws / "child.pid")
        assert child is not None and not pid_alive(child)
    finally:
        shell_module._spawn = restore
        if (pid := read_pid(ws / "child.pid")) and pid_alive(pid):
            os.kill(pid, 9)


# -- binary output (issue 14, item 9) ----------------------------------------------------------------------
async def test_binary_output_is_summarised_not_sent_as_garbage(ctx: ToolContext) -> None:
    outcome = await run_tool(
        "shell", {"command": "head -c 3000 /dev/urandom; printf '\\0\\1\\2' >&2; echo hi >&2"}, ctx
    )
    assert not outcome.is_error
    first, second = outcome.content.splitlines()[:2]
    assert first.startswith("[stdout: 3,000 bytes of binary data (2.9 KB), not shown; redirect it to a file")
    assert second.startswith("[stderr: 6 bytes of binary data")
    assert "\ufffd" not in outcome.content


async def test_text_with_a_few_odd_bytes_is_still_text(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "printf 'caf\\xe9 au lait\\n'"}, ctx)
    assert outcome.content == "caf\ufffd au lait"
