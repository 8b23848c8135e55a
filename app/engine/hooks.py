"""Hooks: user commands run at engine events, with Claude Code's contract (DESIGN.md §8).

Configured in config.toml (`Settings.hooks`, one `HookSpec` each):

    [[hooks.PreToolUse]]
    matcher = "shell|write_file"
    command = "~/.config/bulkhead/hooks/guard.sh"
    timeout = 60

**Input.** Each matching command runs through the shell (`~` expanded) in the workspace,
in its own process group, with JSON on stdin: `session_id`, `transcript_path`, `cwd`,
`hook_event_name` plus the event's fields (see `EVENT_FIELDS`). The environment adds
`BULKHEAD_SESSION_ID`, `BULKHEAD_HOOK_EVENT` and `CLAUDE_PROJECT_DIR` (= cwd).

**Output.**
- exit 0: ok. Stdout may be JSON in Claude Code's shapes — `{"decision": "block",
  "reason": …}`, `{"continue": false, "stopReason": …}`, `{"systemMessage": …}`,
  `{"hookSpecificOutput": {"permissionDecision": "deny"|"ask"|"allow",
  "permissionDecisionReason": …, "updatedInput": {…}, "additionalContext": …}}`.
  PreToolUse's `updatedInput` replaces the tool's input (an object, else it is ignored and
  the run says so; of several hooks, the last configured one wins). Other stdout is ignored
  (it is only shown as the run's output preview). Stdout that starts with `{` but is not a
  valid JSON object is an error shown to the user; for PreToolUse it blocks the call.
- exit 2: block, stderr is the reason — only for events that can block (PreToolUse,
  UserPromptSubmit, PreCompact unless its trigger is `recovery`); for the others it is
  an error shown to the user and nothing is blocked.
- any other exit, a crash, a missing command, garbage output: a non-blocking error.
- timeout (per spec, default 60 s): the whole process group is killed.

For PostToolUse, PostToolUseFailure and Stop, which cannot block, a `decision: block`
reason is feedback for the model and lands in `additional_context`.

**Matchers** select hooks by the tool name (tool events; Claude Code's names `Bash`,
`Read`, `Write`, `Edit`, `Glob`, `Grep`, `LS` match ours too), the trigger (PreCompact,
PostCompact) or the source (SessionStart): exact, `A|B`, a regex (full match), `*` or
empty for all. Other events run every configured hook.

Matching hooks of one event run in parallel; results merge (any block wins). Each run
is reported to `on_run` as a `HookRun` event. Nothing a hook does makes `run()` raise.

    hooks = HookRunner(settings.hooks, session_id=session.id, transcript_path=session.transcript_path,
                       cwd=workspace, on_run=session.emit)
    result = await hooks.pre_tool_use("shell", {"command": "rm -rf build"})
    if result.blocked:
        outcome = denied_outcome("shell", result.reason, by="hook")
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from app.config import HOOK_EVENTS, HookSpec
from app.engine.hook_verdicts import (
    HookResult,
    Verdict,
    hook_run,
    judge,
    merge,
)
from app.model.events import HookRun, HookStarted
from app.tools.shell import run_command, shell_argv

DEFAULT_TIMEOUT = 60.0
HOOK_KILL_GRACE = 1.0
MAX_HOOK_OUTPUT_BYTES = 1024 * 1024

BLOCKING_EVENTS = frozenset({"PreToolUse", "UserPromptSubmit", "PreCompact"})
# The payload field a matcher is tested against, per event; events not listed ignore matchers.
MATCH_FIELDS: Mapping[str, str] = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "SessionStart": "source",
}
# The fields each event's payload carries (beyond session_id, transcript_path, cwd, hook_event_name).
EVENT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "PreToolUse": ("tool_name", "tool_input"),
    "PostToolUse": ("tool_name", "tool_input", "tool_response"),
    "PostToolUseFailure": ("tool_name", "tool_input", "tool_response", "error"),
    "UserPromptSubmit": ("prompt",),
    "PreCompact": ("trigger", "custom_instructions"),
    "PostCompact": ("trigger", "outcome", "sizes", "keys"),
    "SessionStart": ("source",),
    "SessionEnd": ("reason",),
    "Stop": ("stop_hook_active",),
    "Notification": ("message",),
    "RequestRejected": ("kind", "evidence", "bytes", "learned_cap"),
}
# Claude Code's tool names, so matchers written for it keep working.
CLAUDE_TOOL_NAMES: Mapping[str, str] = {
    "shell": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "list_dir": "LS",
}


def can_block(event: str, payload: Mapping[str, Any] | None = None) -> bool:
    """Whether `event` can be blocked by a hook (PreCompact not when its trigger is `recovery`)."""
    if event not in BLOCKING_EVENTS:
        return False
    return not (event == "PreCompact" and (payload or {}).get("trigger") == "recovery")


def matcher_matches(matcher: str | None, value: str | None) -> bool:
    """Claude Code's matcher rules: `*`/empty → all; exact; `A|B`; else a regex that must match whole."""
    matcher = (matcher or "").strip()
    if matcher in ("", "*") or value is None:
        return True
    candidates = [value]
    if value in CLAUDE_TOOL_NAMES:
        candidates.append(CLAUDE_TOOL_NAMES[value])
    if matcher in candidates:
        return True
    if re.fullmatch(r"[\w.-]+(\|[\w.-]+)+", matcher):
        return any(name in candidates for name in matcher.split("|"))
    try:
        regex = re.compile(matcher)
    except re.error:
        return False
    return any(regex.fullmatch(name) for name in candidates)


def matcher_problem(matcher: str) -> str | None:
    """Why `matcher` can never work (an invalid regex), for `bulkhead config check`; None if fine."""
    try:
        re.compile(matcher or "")
    except re.error as exc:
        return f"matcher {matcher!r} is not a valid regular expression: {exc}"
    return None


def expand_command(command: str) -> str:
    """`~` and `~/…` at the start of a word become the home folder (quoted if it needs it)."""
    home = os.path.expanduser("~")
    quoted = shlex.quote(home)
    return re.sub(r"(?<![^\s=:;&|(])~(?=/|\s|$|;|&|\|)", lambda _m: quoted, command)


class HookRunner:
    """Runs the configured hooks of a session. Cheap when no hook is configured."""

    def __init__(
        self,
        specs: Sequence[HookSpec],
        *,
        session_id: str,
        transcript_path: Path,
        cwd: Path,
        on_run: Callable[[HookRun], None] | None = None,
        on_start: Callable[[HookStarted], None] | None = None,
        env: Mapping[str, str] | None = None,
        before_run: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self.session_id = session_id
        self.transcript_path = Path(transcript_path)
        self.cwd = Path(cwd)
        self.on_run = on_run
        self.on_start = on_start
        self.before_run = before_run  # awaited before hooks run (the session's writes reach transcript_path)
        self.base_env = dict(os.environ if env is None else env)

    # -- what runs ------------------------------------------------------------------------------
    def has_hooks(self, event: str) -> bool:
        return any(spec.event == event for spec in self.specs)

    def specs_for(self, event: str, match: str | None = None) -> list[HookSpec]:
        """The hooks that run for `event` (and `match`, for events that have matchers)."""
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r} (known: {', '.join(HOOK_EVENTS)})")
        uses_matcher = event in MATCH_FIELDS
        return [
            spec
            for spec in self.specs
            if spec.event == event and (not uses_matcher or matcher_matches(spec.matcher, match))
        ]

    def stdin_payload(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON object a hook reads on stdin for `event`."""
        base = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.cwd),
            "hook_event_name": event,
        }
        return {**base, **{k: v for k, v in payload.items() if k not in base}}

    def environment(self, event: str) -> dict[str, str]:
        env = dict(self.base_env)
        env.update(
            {
                "BULKHEAD_SESSION_ID": self.session_id,
                "BULKHEAD_HOOK_EVENT": event,
                "BULKHEAD_PROJECT_DIR": str(self.cwd),
                "CLAUDE_PROJECT_DIR": str(self.cwd),
            }
        )
        return env

    # -- running --------------------------------------------------------------------------------
    async def run(
        self, event: str, payload: Mapping[str, Any] | None = None, *, match: str | None = None
    ) -> HookResult:
        """Run every hook configured for `event` whose matcher accepts `match`, in parallel.

        `match` defaults to the payload's matcher field (tool_name, trigger or source).
        Raises only ValueError for an unknown event name (a programming error).
        """
        payload = dict(payload or {})
        if match is None and event in MATCH_FIELDS:
            value = payload.get(MATCH_FIELDS[event])
            match = None if value is None else str(value)
        specs = self.specs_for(event, match)
        if not specs:
            return HookResult()
        if self.before_run is not None:
            await self.before_run()
        try:
            stdin = json.dumps(self.stdin_payload(event, payload), ensure_ascii=False, default=str).encode()
        except (TypeError, ValueError) as exc:  # a payload that cannot be JSON: the hooks still run
            stdin = json.dumps({**self.stdin_payload(event, {}), "payload_error": str(exc)}).encode()
        blockable = can_block(event, payload)
        env = self.environment(event)
        verdicts = await asyncio.gather(
            *(self._run_one(spec, event, stdin, env, blockable) for spec in specs)
        )
        return merge(list(verdicts))

    async def _run_one(
        self, spec: HookSpec, event: str, stdin: bytes, env: dict[str, str], blockable: bool
    ) -> Verdict:
        started = time.monotonic()
        timeout = spec.timeout if spec.timeout and spec.timeout > 0 else DEFAULT_TIMEOUT
        if self.on_start is not None:  # seen while it runs (the status line, the Hooks panel)
            with contextlib.suppress(Exception):
                self.on_start(HookStarted(event=event, matcher=spec.matcher, command=spec.command))
        try:
            result = await run_command(
                shell_argv(expand_command(spec.command)),
                cwd=self.cwd,
                env=env,
                input=stdin,
                timeout=timeout,
                kill_grace=HOOK_KILL_GRACE,
                max_capture_bytes=MAX_HOOK_OUTPUT_BYTES,
                kill_stragglers=True,
            )
            verdict = judge(spec, event, result, blockable, timeout)
        except asyncio.CancelledError:
            self._report(
                hook_run(
                    spec,
                    event,
                    started,
                    None,
                    "cancelled",
                    "cancelled (Esc): the hook and its child processes were stopped"
                    + ("; the prompt was not sent" if event == "UserPromptSubmit" else ""),
                )
            )
            raise
        except Exception as exc:  # a hook must never break the engine
            verdict = Verdict(
                hook_run(
                    spec, event, started, None, "error", f"hook runner error: {type(exc).__name__}: {exc}"
                )
            )
        self._report(verdict.run)
        return verdict

    def _report(self, run: HookRun) -> None:
        if self.on_run is None:
            return
        try:
            self.on_run(run)
        except Exception:  # a broken listener must not break hooks
            pass

    # -- one method per event, so the fields are always the right ones ----------------------------
    async def pre_tool_use(self, tool_name: str, tool_input: Mapping[str, Any]) -> HookResult:
        return await self.run("PreToolUse", {"tool_name": tool_name, "tool_input": dict(tool_input)})

    async def post_tool_use(
        self, tool_name: str, tool_input: Mapping[str, Any], tool_response: Any
    ) -> HookResult:
        return await self.run(
            "PostToolUse",
            {"tool_name": tool_name, "tool_input": dict(tool_input), "tool_response": tool_response},
        )

    async def post_tool_use_failure(
        self, tool_name: str, tool_input: Mapping[str, Any], tool_response: Any, error: str
    ) -> HookResult:
        return await self.run(
            "PostToolUseFailure",
            {
                "tool_name": tool_name,
                "tool_input": dict(tool_input),
                "tool_response": tool_response,
                "error": error,
            },
        )

    async def user_prompt_submit(self, prompt: str) -> HookResult:
        return await self.run("UserPromptSubmit", {"prompt": prompt})

    async def pre_compact(self, trigger: str, custom_instructions: str = "") -> HookResult:
        return await self.run("PreCompact", {"trigger": trigger, "custom_instructions": custom_instructions})

    async def post_compact(
        self, trigger: str, outcome: str, sizes: Mapping[str, Any], keys: Sequence[str]
    ) -> HookResult:
        return await self.run(
            "PostCompact", {"trigger": trigger, "outcome": outcome, "sizes": dict(sizes), "keys": list(keys)}
        )

    async def session_start(self, source: str) -> HookResult:
        return await self.run("SessionStart", {"source": source})

    async def session_end(self, reason: str) -> HookResult:
        return await self.run("SessionEnd", {"reason": reason})

    async def stop(self, stop_hook_active: bool = False) -> HookResult:
        return await self.run("Stop", {"stop_hook_active": stop_hook_active})

    async def notification(self, message: str) -> HookResult:
        return await self.run("Notification", {"message": message})

    async def request_rejected(
        self, kind: str, evidence: Sequence[str], bytes: int | None, learned_cap: int | None
    ) -> HookResult:
        return await self.run(
            "RequestRejected",
            {"kind": kind, "evidence": list(evidence), "bytes": bytes, "learned_cap": learned_cap},
        )
