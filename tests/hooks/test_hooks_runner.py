"""Hooks with real scripts: stdin JSON per event, exit codes, JSON decisions, timeouts, matchers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from app.config import HOOK_EVENTS, HookSpec
from app.engine.hooks import EVENT_FIELDS, HookRunner, can_block, expand_command, matcher_matches
from app.model.events import HookRun
from app.tools.approval import denied_outcome


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


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    folder = tmp_path / "hooks"
    folder.mkdir()
    return folder


def script(folder: Path, name: str, body: str, interpreter: str = "/usr/bin/env bash") -> str:
    """Write an executable hook script and return its path."""
    path = folder / name
    path.write_text(f"#!{interpreter}\n{body}")
    path.chmod(0o755)
    return str(path)


def python_script(folder: Path, name: str, body: str) -> str:
    return script(folder, name, body, interpreter=sys.executable)


def runner(specs: list[HookSpec], ws: Path, runs: list[HookRun] | None = None) -> HookRunner:
    return HookRunner(
        specs,
        session_id="sess-123",
        transcript_path=ws.parent / "transcript.jsonl",
        cwd=ws,
        on_run=runs.append if runs is not None else None,
    )


# Every event's payload, as the turn loop sends it (through the per-event helpers).
EVENT_CALLS: dict[str, tuple[str, tuple[Any, ...], dict[str, Any]]] = {
    "PreToolUse": (
        "pre_tool_use",
        ("shell", {"command": "ls"}),
        {"tool_name": "shell", "tool_input": {"command": "ls"}},
    ),
    "PostToolUse": (
        "post_tool_use",
        ("read_file", {"path": "a"}, "1\thello"),
        {"tool_name": "read_file", "tool_input": {"path": "a"}, "tool_response": "1\thello"},
    ),
    "PostToolUseFailure": (
        "post_tool_use_failure",
        ("shell", {"command": "x"}, "Exit code 1.", "exit 1"),
        {
            "tool_name": "shell",
            "tool_input": {"command": "x"},
            "tool_response": "Exit code 1.",
            "error": "exit 1",
        },
    ),
    "UserPromptSubmit": ("user_prompt_submit", ("fix the bug",), {"prompt": "fix the bug"}),
    "PreCompact": (
        "pre_compact",
        ("manual", "keep the API notes"),
        {"trigger": "manual", "custom_instructions": "keep the API notes"},
    ),
    "PostCompact": (
        "post_compact",
        ("auto", "applied", {"bytes_before": 10, "bytes_after": 5}, ["abcd"]),
        {
            "trigger": "auto",
            "outcome": "applied",
            "sizes": {"bytes_before": 10, "bytes_after": 5},
            "keys": ["abcd"],
        },
    ),
    "SessionStart": ("session_start", ("resume",), {"source": "resume"}),
    "SessionEnd": ("session_end", ("exit",), {"reason": "exit"}),
    "Stop": ("stop", (True,), {"stop_hook_active": True}),
    "Notification": ("notification", ("approval needed",), {"message": "approval needed"}),
    "RequestRejected": (
        "request_rejected",
        ("payload_too_large", ["status 413"], 5_000_000, 3_750_000),
        {
            "kind": "payload_too_large",
            "evidence": ["status 413"],
            "bytes": 5_000_000,
            "learned_cap": 3_750_000,
        },
    ),
}


def test_every_event_has_a_helper_and_fields() -> None:
    assert set(EVENT_CALLS) == set(HOOK_EVENTS) == set(EVENT_FIELDS)
    for event, (_method, _args, fields) in EVENT_CALLS.items():
        assert tuple(fields) == EVENT_FIELDS[event]


@pytest.mark.parametrize("event", list(EVENT_CALLS))
async def test_stdin_json_and_environment_per_event(event: str, ws: Path, scripts: Path) -> None:
    command = script(scripts, "dump.sh", "cat > stdin.json\nenv > env.txt\npwd > pwd.txt\n")
    runs: list[HookRun] = []
    hooks = runner([HookSpec(event, command)], ws, runs)
    method, args, fields = EVENT_CALLS[event]
    result = await getattr(hooks, method)(*args)
    assert not result.blocked and [run.decision for run in runs] == ["ok"]
    data = json.loads((ws / "stdin.json").read_text())
    assert data == {
        "session_id": "sess-123",
        "transcript_path": str(ws.parent / "transcript.jsonl"),
        "cwd": str(ws),
        "hook_event_name": event,
        **fields,
    }
    env = dict(line.split("=", 1) for line in (ws / "env.txt").read_text().splitlines() if "=" in line)
    assert env["BULKHEAD_SESSION_ID"] == "sess-123" and env["CLAUDE_PROJECT_DIR"] == str(ws)
    assert env["BULKHEAD_HOOK_EVENT"] == event
    assert (ws / "pwd.txt").read_text().strip() == str(ws)


async def test_hook_run_events_carry_the_details(ws: Path, scripts: Path) -> None:
    command = script(scripts, "hello.sh", 'echo "hello from the hook"\n')
    runs: list[HookRun] = []
    result = await runner([HookSpec("Notification", command, matcher="")], ws, runs).notification("hi")
    assert result.runs == runs
    (run,) = runs
    assert (run.event, run.command, run.exit_code, run.decision, run.output) == (
        "Notification",
        command,
        0,
        "ok",
        "hello from the hook",
    )
    assert run.duration_ms >= 0


# -- exit codes --------------------------------------------------------------------------------------
async def test_exit_2_blocks_a_tool_call_and_the_reason_comes_back(ws: Path, scripts: Path) -> None:
    command = script(scripts, "guard.sh", 'echo "rm is not allowed in this repo" >&2\nexit 2\n')
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command, matcher="shell")], ws, runs).pre_tool_use(
        "shell", {"command": "rm -rf /"}
    )
    assert result.blocked and result.reason == "rm is not allowed in this repo"
    assert runs[0].decision == "block" and runs[0].exit_code == 2
    for_model = denied_outcome("shell", result.reason, by="hook")
    assert for_model.is_error and "rm is not allowed in this repo" in for_model.content


@pytest.mark.parametrize(
    "event, call",
    [
        ("UserPromptSubmit", ("user_prompt_submit", ("secret stuff",))),
        ("PreCompact", ("pre_compact", ("auto",))),
        ("PreCompact", ("pre_compact", ("manual",))),
    ],
)
async def test_exit_2_blocks_the_blockable_events(ws: Path, scripts: Path, event: str, call: tuple) -> None:
    command = script(scripts, "no.sh", 'echo "not now" >&2\nexit 2\n')
    result = await getattr(runner([HookSpec(event, command)], ws), call[0])(*call[1])
    assert result.blocked and result.reason == "not now"


async def test_exit_2_on_precompact_recovery_does_not_block(ws: Path, scripts: Path) -> None:
    command = script(scripts, "no.sh", 'echo "not now" >&2\nexit 2\n')
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreCompact", command)], ws, runs).pre_compact("recovery")
    assert not result.blocked and result.reason == ""
    assert (
        runs[0].decision == "error" and "cannot be blocked" in runs[0].output and "not now" in runs[0].output
    )
    assert can_block("PreCompact", {"trigger": "manual"}) and not can_block(
        "PreCompact", {"trigger": "recovery"}
    )


@pytest.mark.parametrize("event", ["PostToolUse", "Stop", "SessionStart", "Notification", "RequestRejected"])
async def test_exit_2_on_other_events_is_an_error_not_a_block(ws: Path, scripts: Path, event: str) -> None:
    command = script(scripts, "no.sh", 'echo "nope" >&2\nexit 2\n')
    runs: list[HookRun] = []
    method, args, _fields = EVENT_CALLS[event]
    result = await getattr(runner([HookSpec(event, command)], ws, runs), method)(*args)
    assert not result.blocked and runs[0].decision == "error"


async def test_exit_2_without_stderr_still_gives_a_reason(ws: Path, scripts: Path) -> None:
    command = script(scripts, "quiet.sh", "exit 2\n")
    result = await runner([HookSpec("PreToolUse", command)], ws).pre_tool_use("shell", {})
    assert result.blocked and "exit 2, no reason given" in result.reason


# -- JSON output -------------------------------------------------------------------------------------
async def test_json_decision_block(ws: Path, scripts: Path) -> None:
    command = python_script(
        scripts,
        "policy.py",
        (
            "import json, sys\n"
            "data = json.load(sys.stdin)\n"
            "if 'password' in data['prompt']:\n"
            "    print(json.dumps({'decision': 'block', 'reason': 'prompt contains a password'}))\n"
        ),
    )
    hooks = runner([HookSpec("UserPromptSubmit", command)], ws)
    blocked = await hooks.user_prompt_submit("my password is hunter2")
    assert blocked.blocked and blocked.reason == "prompt contains a password"
    assert blocked.runs[0].decision == "block" and blocked.runs[0].exit_code == 0
    fine = await hooks.user_prompt_submit("hello")
    assert not fine.blocked and fine.runs[0].decision == "ok"


TRUNCATED_BLOCK = '{"decision": "block", "reason": "no deploys on friday"'  # the closing brace never came


async def test_invalid_json_from_a_pretooluse_hook_blocks_and_says_why(ws: Path, scripts: Path) -> None:
    command = script(scripts, "broken.sh", f"cat > /dev/null\necho '{TRUNCATED_BLOCK}'\n")
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command)], ws, runs).pre_tool_use(
        "shell", {"command": "deploy"}
    )
    assert result.blocked and result.permission == "deny"
    assert (
        "invalid JSON" in result.reason and "blocked to be safe" in result.reason and command in result.reason
    )
    assert runs[0].decision == "block" and runs[0].exit_code == 0
    assert "invalid JSON" in runs[0].output and TRUNCATED_BLOCK in runs[0].output


@pytest.mark.parametrize("body", [TRUNCATED_BLOCK, '{"decision": "block"} trailing words', '{"a": 1,}'])
async def test_invalid_json_from_other_hooks_is_an_error_not_ok(ws: Path, scripts: Path, body: str) -> None:
    command = script(scripts, "broken.sh", f"cat > /dev/null\necho '{body}'\n")
    runs: list[HookRun] = []
    result = await runner([HookSpec("UserPromptSubmit", command)], ws, runs).user_prompt_submit("hello")
    assert not result.blocked  # only PreToolUse blocks on it
    assert (
        runs[0].decision == "error" and "invalid JSON" in runs[0].output and "fix the hook" in runs[0].output
    )


async def test_plain_text_on_stdout_is_still_no_decision(ws: Path, scripts: Path) -> None:
    command = script(scripts, "chatty.sh", "cat > /dev/null\necho 'checked 3 files, all fine'\n")
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command)], ws, runs).pre_tool_use(
        "shell", {"command": "ls"}
    )
    assert not result.blocked and runs[0].decision == "ok"


async def test_permission_decision_deny(ws: Path, scripts: Path) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "writes to generated files are forbidden",
        }
    }
    command = script(scripts, "deny.sh", f"cat > /dev/null\necho '{json.dumps(output)}'\n")
    runs: list[HookRun] = []
    result = await runner(
        [HookSpec("PreToolUse", command, matcher="write_file|edit_file")], ws, runs
    ).pre_tool_use("write_file", {"path": "gen.py", "content": ""})
    assert result.blocked and result.permission == "deny"
    assert result.reason == "writes to generated files are forbidden"
    assert runs[0].decision == "block"


@pytest.mark.parametrize("decision", ["ask", "allow"])
async def test_permission_decision_ask_and_allow_do_not_block(ws: Path, scripts: Path, decision: str) -> None:
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision}}
    command = script(scripts, "perm.sh", f"echo '{json.dumps(output)}'\n")
    result = await runner([HookSpec("PreToolUse", command)], ws).pre_tool_use("shell", {"command": "ls"})
    assert not result.blocked and result.permission == decision


async def test_strongest_permission_wins(ws: Path, scripts: Path) -> None:
    allow = script(
        scripts, "allow.sh", """echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'\n"""
    )
    ask = script(scripts, "ask.sh", """echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'\n""")
    result = await runner([HookSpec("PreToolUse", allow), HookSpec("PreToolUse", ask)], ws).pre_tool_use(
        "shell", {}
    )
    assert result.permission == "ask" and not result.blocked


async def test_updated_input_replaces_the_tool_input(ws: Path, scripts: Path) -> None:
    first = script(
        scripts, "first.sh", """echo '{"hookSpecificOutput": {"updatedInput": {"command": "ls -a"}}}'\n"""
    )
    last = python_script(
        scripts,
        "last.py",
        """import json, sys
data = json.load(sys.stdin)
command = data["tool_input"]["command"]
print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow",
                                         "updatedInput": {"command": command + " --dry-run"}}}))
""",
    )
    result = await runner([HookSpec("PreToolUse", first), HookSpec("PreToolUse", last)], ws).pre_tool_use(
        "shell", {"command": "make clean"}
    )
    assert result.updated_input == {"command": "make clean --dry-run"}  # the last configured hook wins
    assert result.permission == "allow" and not result.blocked


async def test_updated_input_that_is_not_an_object_is_ignored_and_said(ws: Path, scripts: Path) -> None:
    command = script(scripts, "bad.sh", """echo '{"hookSpecificOutput": {"updatedInput": "rm -rf /"}}'\n""")
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command)], ws, runs).pre_tool_use(
        "shell", {"command": "ls"}
    )
    assert result.updated_input is None and not result.blocked
    assert runs[0].decision == "error" and "updatedInput ignored" in runs[0].output


async def test_continue_false_stops_with_a_reason(ws: Path, scripts: Path) -> None:
    command = script(scripts, "stop.sh", """echo '{"continue": false, "stopReason": "quota reached"}'\n""")
    tool = await runner([HookSpec("PreToolUse", command)], ws).pre_tool_use("shell", {})
    assert tool.stop and tool.stop_reason == "quota reached" and tool.blocked
    post = await runner([HookSpec("PostToolUse", command)], ws).post_tool_use("shell", {}, "ok")
    assert post.stop and post.stop_reason == "quota reached" and not post.blocked


async def test_additional_context_and_system_messages(ws: Path, scripts: Path) -> None:
    context = script(
        scripts,
        "ctx.sh",
        """echo '{"hookSpecificOutput": {"additionalContext": "branch: main"},
"systemMessage": "lint ran"}'\n""",
    )
    feedback = script(scripts, "fb.sh", """echo '{"decision": "block", "reason": "tests now fail"}'\n""")
    result = await runner(
        [HookSpec("PostToolUse", context), HookSpec("PostToolUse", feedback)], ws
    ).post_tool_use("edit_file", {"path": "a"}, "Edited a")
    assert not result.blocked
    assert result.additional_context == "branch: main\ntests now fail"
    assert result.system_messages == ("lint ran",)


# -- hooks that misbehave ----------------------------------------------------------------------------
async def test_a_hanging_hook_and_its_child_are_killed_at_the_timeout(ws: Path, scripts: Path) -> None:
    command = script(scripts, "hang.sh", "sleep 1000 &\necho $! > child.pid\nsleep 1000\n")
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command, timeout=1)], ws, runs).pre_tool_use("shell", {})
    assert not result.blocked
    (run,) = runs
    assert run.decision == "timeout" and run.exit_code is None and "timed out after 1 s" in run.output
    child = int((ws / "child.pid").read_text())
    assert not pid_alive(child)


async def test_a_hook_leaving_a_child_behind_does_not_hang_the_runner(ws: Path, scripts: Path) -> None:
    command = script(scripts, "straggler.sh", "sleep 1000 &\necho $! > child.pid\nexit 0\n")
    result = await runner([HookSpec("Notification", command, timeout=30)], ws).notification("x")
    assert result.runs[0].decision == "ok"
    assert not pid_alive(int((ws / "child.pid").read_text()))


@pytest.mark.parametrize(
    "body, decision",
    [
        (
            "printf 'x'\nhead -c 3000 /dev/urandom\necho '{not json'\n",
            "ok",
        ),  # garbage on stdout (not JSON-looking)
        ("echo '[1, 2, 3]'\n", "ok"),  # JSON but not an object
        ('echo "something went wrong" >&2\nexit 1\n', "error"),
        ("kill -9 $$\n", "error"),  # crashes
        ("exec 0<&-\nexit 0\n", "ok"),  # closes stdin before reading it
    ],
)
async def test_misbehaving_hooks_never_break_the_run(
    ws: Path, scripts: Path, body: str, decision: str
) -> None:
    command = script(scripts, "bad.sh", body)
    runs: list[HookRun] = []
    result = await runner([HookSpec("UserPromptSubmit", command)], ws, runs).user_prompt_submit("x" * 500_000)
    assert not result.blocked and runs[0].decision == decision
    assert len(runs[0].output) <= 500


async def test_a_python_hook_that_raises(ws: Path, scripts: Path) -> None:
    command = python_script(scripts, "crash.py", "raise RuntimeError('hook bug')\n")
    runs: list[HookRun] = []
    result = await runner([HookSpec("PreToolUse", command)], ws, runs).pre_tool_use("shell", {})
    assert not result.blocked and runs[0].decision == "error" and runs[0].exit_code == 1
    assert "RuntimeError: hook bug" in runs[0].output


async def test_a_missing_command(ws: Path, scripts: Path) -> None:
    runs: list[HookRun] = []
    result = await runner(
        [HookSpec("PreToolUse", str(scripts / "does-not-exist.sh"))], ws, runs
    ).pre_tool_use("shell", {})
    assert not result.blocked and runs[0].decision == "error" and runs[0].exit_code == 127


async def test_a_missing_workspace_is_an_error_run(tmp_path: Path) -> None:
    runs: list[HookRun] = []
    hooks = HookRunner(
        [HookSpec("Stop", "true")],
        session_id="s",
        transcript_path=tmp_path / "t",
        cwd=tmp_path / "gone",
        on_run=runs.append,
    )
    result = await hooks.stop()
    assert not result.blocked and runs[0].decision == "error" and "could not start" in runs[0].output


async def test_a_broken_listener_does_not_break_hooks(ws: Path) -> None:
    def listener(run: HookRun) -> None:
        raise RuntimeError("ui is gone")

    hooks = HookRunner(
        [HookSpec("Stop", "true")], session_id="s", transcript_path=ws / "t", cwd=ws, on_run=listener
    )
    assert (await hooks.stop()).runs[0].decision == "ok"


async def test_output_preview_is_capped(ws: Path, scripts: Path) -> None:
    command = script(scripts, "loud.sh", "seq 1 10000\n")
    runs: list[HookRun] = []
    await runner([HookSpec("Stop", command)], ws, runs).stop()
    assert len(runs[0].output) == 500 and runs[0].output.startswith("1\n2\n3\n")


# -- parallel runs, merging ----------------------------------------------------------------------
async def test_matching_hooks_run_in_parallel_and_any_block_wins(ws: Path, scripts: Path) -> None:
    # `waiter` only succeeds if `maker` runs while it waits: sequential runs would fail it.
    waiter = script(
        scripts, "waiter.sh", "for i in $(seq 1 3000); do [ -f made ] && exit 0; sleep 0.01; done\nexit 1\n"
    )
    maker = script(scripts, "maker.sh", "touch made\necho 'second opinion: no' >&2\nexit 2\n")
    runs: list[HookRun] = []
    result = await runner(
        [HookSpec("PreToolUse", waiter), HookSpec("PreToolUse", maker)], ws, runs
    ).pre_tool_use("shell", {})
    assert [run.decision for run in result.runs] == ["ok", "block"]
    assert result.blocked and result.reason == "second opinion: no"
    assert len(runs) == 2


async def test_no_configured_hooks_is_free(ws: Path) -> None:
    result = await runner([], ws).pre_tool_use("shell", {})
    assert result.runs == [] and not result.blocked


async def test_unknown_event_is_a_programming_error(ws: Path) -> None:
    with pytest.raises(ValueError, match="unknown hook event"):
        await runner([], ws).run("BeforeLunch", {})


async def test_tilde_in_the_command_is_expanded(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home dir"
    (home / ".config").mkdir(parents=True)
    script(home / ".config", "hook.sh", "echo ran > ran.txt\n")
    monkeypatch.setenv("HOME", str(home))
    assert expand_command("~/.config/hook.sh --flag") == f"'{home}'/.config/hook.sh --flag"
    assert expand_command("echo a~b") == "echo a~b"
    result = await runner([HookSpec("Stop", "~/.config/hook.sh")], ws).stop()
    assert result.runs[0].decision == "ok" and (ws / "ran.txt").read_text() == "ran\n"


# -- matchers ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "matcher, value, expected",
    [
        ("shell", "shell", True),
        ("shell", "shell_x", False),
        ("write_file|edit_file", "edit_file", True),
        ("write_file|edit_file", "read_file", False),
        (".*_file", "read_file", True),
        ("read_.*", "grep", False),
        ("file", "read_file", False),  # regexes match the whole name
        ("*", "anything", True),
        ("", "anything", True),
        ("Bash", "shell", True),  # Claude Code's tool names work for ours
        ("Write|Edit", "edit_file", True),
        ("manual", "auto", False),
        ("(unclosed", "x", False),
    ],
)
def test_matcher_rules(matcher: str, value: str, expected: bool) -> None:
    assert matcher_matches(matcher, value) is expected


async def test_matchers_select_which_hooks_run(ws: Path, scripts: Path) -> None:
    def marker(name: str) -> str:
        return script(scripts, f"{name}.sh", f"touch ran-{name}\n")

    specs = [
        HookSpec("PreToolUse", marker("exact"), matcher="shell"),
        HookSpec("PreToolUse", marker("either"), matcher="write_file|shell"),
        HookSpec("PreToolUse", marker("regex"), matcher=".*_file"),
        HookSpec("PreToolUse", marker("star"), matcher="*"),
        HookSpec("PreToolUse", marker("empty"), matcher=""),
        HookSpec("PostToolUse", marker("other_event"), matcher="*"),
    ]
    result = await runner(specs, ws).pre_tool_use("shell", {"command": "ls"})
    ran = sorted(path.name for path in ws.glob("ran-*"))
    assert ran == ["ran-either", "ran-empty", "ran-exact", "ran-star"]
    assert [run.matcher for run in result.runs] == ["shell", "write_file|shell", "*", ""]


async def test_compaction_and_session_matchers(ws: Path, scripts: Path) -> None:
    command = script(scripts, "m.sh", "true\n")
    hooks = runner(
        [
            HookSpec("PreCompact", command, matcher="manual"),
            HookSpec("SessionStart", command, matcher="resume"),
        ],
        ws,
    )
    assert len((await hooks.pre_compact("manual")).runs) == 1
    assert len((await hooks.pre_compact("auto")).runs) == 0
    assert len((await hooks.session_start("resume")).runs) == 1
    assert len((await hooks.session_start("startup")).runs) == 0


async def test_events_without_matchers_run_every_hook(ws: Path, scripts: Path) -> None:
    command = script(scripts, "m.sh", "true\n")
    result = await runner([HookSpec("UserPromptSubmit", command, matcher="shell")], ws).user_prompt_submit(
        "x"
    )
    assert len(result.runs) == 1
