"""What hooks decided: each run's output judged by Claude Code's contract (`judge`: exit codes, JSON decisions),
and the runs of one event merged into one `HookResult` (`merge`). Running them is `app.engine.hooks`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.config import HookSpec
from app.model.events import HookDecision, HookRun
from app.tools.shell import ProcessResult

OUTPUT_PREVIEW_CHARS = 500
FEEDBACK_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "Stop"})
_PERMISSION_RANK = {"allow": 1, "ask": 2, "deny": 3}


@dataclass(frozen=True)
class HookResult:
    """The merged outcome of every hook run for one event.

    - `blocked`/`reason`: the action must not happen (tool call, prompt, compaction);
      `reason` joins every blocking hook's reason. Only for events that can block.
    - `permission`: PreToolUse's strongest `permissionDecision` (deny > ask > allow), or None.
      `deny` also sets `blocked`; `ask` means ask the user even if the mode would not;
      `allow` may skip the prompt (never for a path outside the workspace).
    - `updated_input`: PreToolUse's `updatedInput`: the input the tool runs with instead.
    - `additional_context`: text hooks want the model to see (`additionalContext`, and
      `decision: block` reasons of events that cannot block).
    - `stop`/`stop_reason`: a hook returned `{"continue": false}`: end the turn, show the reason.
    - `system_messages`: `systemMessage` texts for the user.
    """

    blocked: bool = False
    reason: str = ""
    runs: list[HookRun] = field(default_factory=list)
    additional_context: str = ""
    permission: str | None = None
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str = ""
    system_messages: tuple[str, ...] = ()


@dataclass
class Verdict:
    """What one hook run decided (merged with the others' into a HookResult)."""

    run: HookRun
    block_reason: str | None = None
    permission: str | None = None
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    stop: bool = False
    stop_reason: str = ""
    system_message: str = ""


def _preview(text: str) -> str:
    text = text.strip()
    if len(text) <= OUTPUT_PREVIEW_CHARS:
        return text
    return text[: OUTPUT_PREVIEW_CHARS - 1] + "…"


def _parse_json(stdout: str) -> tuple[dict[str, Any] | None, str]:
    """(the JSON object stdout holds, "") — or (None, why it is not one) when stdout starts with `{`
    but is not a valid JSON object; (None, "") for plain text, which is no decision at all."""
    text = stdout.strip()
    if not text.startswith("{"):
        return None, ""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return (data, "") if isinstance(data, dict) else (None, "not a JSON object")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def hook_run(
    spec: HookSpec,
    event: str,
    started: float,
    exit_code: int | None,
    decision: HookDecision,
    output: str,
    duration_s: float | None = None,
) -> HookRun:
    duration = duration_s if duration_s is not None else time.monotonic() - started
    return HookRun(
        event=event,
        matcher=spec.matcher,
        command=spec.command,
        duration_ms=round(duration * 1000, 1),
        exit_code=exit_code,
        decision=decision,
        output=_preview(output),
    )


def judge(spec: HookSpec, event: str, result: ProcessResult, blockable: bool, timeout: float) -> Verdict:
    stdout, stderr = result.text("stdout"), result.text("stderr")

    def run(decision: HookDecision, output: str) -> HookRun:
        return hook_run(spec, event, 0.0, result.returncode, decision, output, result.duration_s)

    if result.start_error:
        return Verdict(run("error", result.start_error))
    if result.timed_out:
        return Verdict(
            run(
                "timeout",
                f"timed out after {timeout:g} s; the hook and its child processes "
                f"were killed" + (f"\n{stderr or stdout}" if stderr or stdout else ""),
            )
        )
    code = result.returncode
    if code == 2:
        reason = stderr.strip() or f"blocked by hook `{spec.command}` (exit 2, no reason given)"
        if blockable:
            return Verdict(run("block", reason), block_reason=reason)
        return Verdict(run("error", f"exit 2 (this event cannot be blocked): {reason}"))
    if code != 0:
        detail = stderr.strip() or stdout.strip()
        label = f"exit {code}" if code is not None and code >= 0 else f"killed by signal {-(code or 0)}"
        return Verdict(run("error", f"{label}: {detail}" if detail else label))
    data, invalid = _parse_json(stdout)
    if invalid:  # meant as a decision ({"decision": "block"…), but unreadable: never taken as ok
        problem = f"the hook printed invalid JSON on stdout ({invalid})"
        if event == "PreToolUse":
            reason = f"{problem}, so the call is blocked to be safe — fix the hook `{spec.command}`"
            return Verdict(
                run("block", f"{reason}\n{stdout.strip()}"), block_reason=reason, permission="deny"
            )
        return Verdict(
            run("error", f"{problem}; it was ignored — fix the hook `{spec.command}`\n{stdout.strip()}")
        )
    return _judge_json(spec, event, data, blockable, run, stdout, stderr)


def _judge_json(
    spec: HookSpec,
    event: str,
    data: dict[str, Any] | None,
    blockable: bool,
    run: Callable[[HookDecision, str], HookRun],
    stdout: str,
    stderr: str,
) -> Verdict:
    output = stdout if stdout.strip() else stderr
    if data is None:
        return Verdict(run("ok", output))
    verdict = Verdict(run("ok", output))
    decision: HookDecision = "ok"
    verdict.system_message = _text(data.get("systemMessage"))
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if specific.get("additionalContext"):
        verdict.context.append(_text(specific["additionalContext"]))

    if event == "PreToolUse":
        permission = str(specific.get("permissionDecision") or "").lower() or None
        permission_reason = _text(specific.get("permissionDecisionReason"))
        legacy = str(data.get("decision") or "").lower()
        if permission is None and legacy in ("approve", "allow"):
            permission = "allow"
        if permission is None and legacy == "block":
            permission, permission_reason = "deny", _text(data.get("reason"))
        if permission in _PERMISSION_RANK:
            verdict.permission = permission
            if permission == "deny":
                verdict.block_reason = permission_reason or f"denied by hook `{spec.command}`"
                decision = "block"
        updated = specific.get("updatedInput")
        if isinstance(updated, dict):
            verdict.updated_input = updated
        elif updated is not None:
            verdict.run = run(
                "error",
                f"updatedInput ignored: it must be a JSON object, not {type(updated).__name__}\n{output}",
            )
    elif str(data.get("decision") or "").lower() == "block":
        reason = _text(data.get("reason"))
        if blockable:
            verdict.block_reason = reason or f"blocked by hook `{spec.command}`"
            decision = "block"
        elif event in FEEDBACK_EVENTS and reason:
            verdict.context.append(reason)

    if data.get("continue") is False:
        verdict.stop = True
        verdict.stop_reason = _text(data.get("stopReason"))
        if blockable and verdict.block_reason is None:
            verdict.block_reason = verdict.stop_reason or f"stopped by hook `{spec.command}`"
        decision = "block"
    if decision != "ok":
        verdict.run = run(decision, verdict.block_reason or verdict.stop_reason or output)
    return verdict


def merge(verdicts: list[Verdict]) -> HookResult:
    reasons = [v.block_reason for v in verdicts if v.block_reason is not None]
    permissions = [v.permission for v in verdicts if v.permission]
    permission = max(permissions, key=_PERMISSION_RANK.__getitem__) if permissions else None
    stops = [v for v in verdicts if v.stop]
    updates = [v.updated_input for v in verdicts if v.updated_input is not None]
    return HookResult(
        blocked=bool(reasons),
        reason="\n".join(r for r in reasons if r),
        runs=[v.run for v in verdicts],
        additional_context="\n".join(text for v in verdicts for text in v.context if text),
        permission=permission,
        updated_input=updates[-1] if updates else None,
        stop=bool(stops),
        stop_reason="\n".join(v.stop_reason for v in stops if v.stop_reason),
        system_messages=tuple(v.system_message for v in verdicts if v.system_message),
    )
