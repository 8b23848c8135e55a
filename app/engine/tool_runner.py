"""The tool runner: a turn's tool calls through the PreToolUse hook, the permission rules, the approval mode and
the user's answer (asked by tool call id), checkpoints before a file changes, the PostToolUse hook; the prompt's
`@mentions` and images; "always" answers kept as allow rules.

It sees the engine only through `ToolHost` (app.engine.host).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine.hooks import HookResult
from app.engine.instructions import INSTRUCTION_NAMES
from app.engine.notice_words import notice
from app.engine.records import ApprovalRequest
from app.model.events import ToolApproval, ToolCallFinished, ToolCallStarted
from app.model.messages import Image, Message, ToolCall, ToolResult, new_id
from app.model.notice_facts.tools import (
    CheckpointFailed,
    HookChangedInput,
    MentionNotAttached,
    MentionsLeftOut,
    RuleAllowedForProject,
    RuleAllowedForSession,
    RuleNotSaved,
)

if TYPE_CHECKING:
    from app.engine.always_allow import AlwaysOffer, AskedBy
    from app.engine.checkpoints import Snapshot
    from app.engine.host import Call, ToolHost
    from app.tools.base import ToolContext, ToolOutcome
    from app.tools.budget import TurnBudget

# (tool name, args, why it asks) -> True / "once", "session", "project" (allow; the last two remember
# an allow rule) or False / "deny", or an app.tools.approval.Denial (no, and what to tell the model)
Approver = Callable[[str, dict[str, Any], str], Awaitable[Any]]
Args = dict[str, Any]


class ToolRunner:
    def __init__(self, host: ToolHost, approver: Approver | None = None) -> None:
        self.host = host
        self.approver = approver
        # set by `app.engine.api.EngineSession`: approvals asked by call id (wins over `approver`)
        self.ask_call: Callable[[ApprovalRequest], Awaitable[Any]] | None = None
        self.always: AlwaysOffer | None = None  # while an approval waits: what "always" may keep

    def mentions(self, prompt: str) -> list[ToolCall]:
        """The prompt's `@paths` as the read_file / list_dir calls that attach them."""
        from app.engine.images import is_image_file
        from app.engine.mentions import find_mentions

        limit = self.host.settings.max_mentions
        if limit <= 0 or "@" not in prompt:  # 0 turns mentions off
            return []
        found, extra = find_mentions(prompt, self.host.workspace, limit)
        found = [
            m
            for m in found
            if m.is_dir or not is_image_file(self.host.workspace / os.path.expanduser(m.path))
        ]
        if extra:
            self.host.emit(notice(MentionsLeftOut(limit=limit, left_out=extra)))
        return [ToolCall(new_id("tm"), mention.tool, {"path": mention.path}) for mention in found]

    async def prompt_images(self, typed: str) -> list[Image]:
        """The images the typed prompt names, through the read gate (`app.engine.prompt_images`)."""
        from app.engine.prompt_images import attach_prompt_images

        async def ask(name: str, args: Args, why: str) -> str:
            return (await self.ask(name, args, why))[0]  # an outside image: asked each time, no "always"

        return await attach_prompt_images(self.host, typed, ask, can_ask=self.can_ask)

    async def run_tools(
        self, calls: Sequence[Call], turn: int, budget: TurnBudget, *, by_user: bool = False
    ) -> None:
        """Run the model's tool calls in order: PreToolUse hook, approval, the tool, PostToolUse hook.

        `by_user`: the user's own `@mentions` — no hooks, and no approval prompt inside the workspace.
        """
        from app.engine.fetch_context import fetch_settings
        from app.engine.withhold import WITHHELD_REASON, WITHHELD_RECALL
        from app.tools.base import ToolContext
        from app.tools.budget import spill_folder

        store, session = self.host.session.store, self.host.session

        def recall(key: str) -> str | None:  # the model recalls this session's archive only
            entry = store.archive_get(key, session.id, strict=True)
            if (
                entry is not None and entry.reason == WITHHELD_REASON
            ):  # local-only: never re-sent by the model
                return WITHHELD_RECALL
            return entry.content if entry else None

        scale = float(session.flags.get("budget_scale", 1.0))
        result_max = max(1, int(self.host.settings.result_max_chars * scale))
        read_roots = [spill_folder(session.folder)]  # the payload notice sends the model back to spill files
        credential_names = tuple(r.api_key_env for r in self.host.settings.routes.values() if r.api_key_env)
        fetch = fetch_settings(self.host.settings, self.host.permissions)
        for call in calls:
            args = dict(call.args)
            ctx = ToolContext(
                workspace=self.host.workspace,
                session_folder=session.folder,
                result_max_chars=budget.limit(result_max),
                recall=recall,
                cancel=self.host.tool_cancel,
                shell_env_passthrough=self.host.settings.shell_env_passthrough,
                credential_env_names=credential_names,
                read_denied=self.host.permissions.denies_read,
                **fetch,
            )
            self.host.emit(ToolCallStarted(call_id=call.id, name=call.name, args=args))
            if by_user:
                outcome = await self._attach_mention(call, args, ctx)
                after = HookResult()
            else:
                outcome, args = await self._run_guarded(call, args, ctx, read_roots)
                if outcome.is_error:
                    after = await self.host.hooks.post_tool_use_failure(
                        call.name, args, outcome.content[:2000], outcome.content[:500]
                    )
                else:
                    after = await self.host.hooks.post_tool_use(call.name, args, outcome.content[:2000])
            budget.charge(outcome)
            content = outcome.content
            if after.additional_context:  # Claude Code feeds a PostToolUse hook's reason back to the model
                content += f"\n\n[hook] {after.additional_context}"
            origin = "recall" if call.name == "recall" and not outcome.is_error else "tool"
            result = ToolResult(call.id, content, outcome.is_error, outcome.references)
            self.host.session.append(
                Message.create(
                    "tool",
                    [result, *outcome.images],
                    turn=turn,
                    origin=origin,
                    preserve_verbatim=outcome.preserve_verbatim and not outcome.is_error,
                )
            )
            self.host.emit(
                ToolCallFinished(
                    call_id=call.id,
                    name=call.name,
                    is_error=outcome.is_error,
                    preview=content[:500],
                    chars=outcome.chars_total,
                    spill_path=str(outcome.spill_path) if outcome.spill_path else None,
                )
            )

    async def _attach_mention(self, call: Call, args: Args, ctx: ToolContext) -> ToolOutcome:
        """The user's `@path`: attached without asking inside the workspace; a path outside it asks,
        like any read there (refused, and said so, when there is nobody to ask)."""
        from app.tools.approval import denied_outcome, outside_workspace
        from app.tools.registry import run_tool

        ruling = self.host.permissions.check(call.name, args)
        if ruling.kind == "deny":  # your own Read deny rule holds for your own @mention too
            self.host.emit(
                ToolApproval(call_id=call.id, name=call.name, decision="denied", reason=ruling.reason)
            )
            return denied_outcome(call.name, ruling.reason, by="rule")
        outside = outside_workspace(call.name, args, self.host.workspace)
        if not outside:
            self.host.emit(
                ToolApproval(
                    call_id=call.id, name=call.name, decision="auto", reason="attached by you with @"
                )
            )
            return await run_tool(call.name, args, ctx)
        written = str(args.get("path", ""))
        why = f"@{written} is outside the workspace ({outside[0]})"
        offer = self.offer(call.name, args, "mention")
        answer, _said = await self.ask(call.name, args, f"{why}: attach it?", offer, call_id=call.id)
        approved = answer != "deny"
        self.host.emit(
            ToolApproval(
                call_id=call.id, name=call.name, decision="approved" if approved else "denied", reason=why
            )
        )
        if approved:
            return await run_tool(call.name, args, ctx)
        if not self.can_ask:
            self.host.emit(notice(MentionNotAttached(path=written, outside=str(outside[0]))))
            return denied_outcome(call.name, why, by="no_terminal")
        return denied_outcome(call.name, why)

    async def _run_guarded(
        self, call: Call, args: Args, ctx: ToolContext, read_roots: Sequence[Path]
    ) -> tuple[ToolOutcome, Args]:
        """One model tool call through the PreToolUse hook, the permission rules and the approval mode:
        (outcome, the input it ran with — a hook's `updatedInput` may have replaced it).

        Order: a deny rule wins; then a hook's or a rule's "ask"; then a hook's or a rule's "allow"
        (for a path outside the workspace only a rule that names it); then the approval mode."""
        from app.tools.approval import (
            always_asks,
            denied_outcome,
            describe_call,
            landing_places,
            needs_approval,
            outside_workspace,
        )

        verdict = await self.host.hooks.pre_tool_use(call.name, args)
        if verdict.blocked:
            self.host.emit(
                ToolApproval(
                    call_id=call.id,
                    name=call.name,
                    decision="denied",
                    reason=f"blocked by hook: {verdict.reason}",
                )
            )
            return denied_outcome(call.name, verdict.reason, by="hook"), args
        if verdict.updated_input is not None and verdict.updated_input != args:
            args = dict(verdict.updated_input)
            self.host.emit(
                notice(
                    HookChangedInput(tool=call.name, call=describe_call(call.name, args, self.host.workspace))
                )
            )
        ruling = self.host.permissions.check(call.name, args)
        if ruling.kind == "deny":
            self.host.emit(
                ToolApproval(call_id=call.id, name=call.name, decision="denied", reason=ruling.reason)
            )
            return denied_outcome(call.name, ruling.reason, by="rule"), args
        if self.host.mcp_tools is not None and self.host.mcp_tools.handles(call.name):
            ask, why = self.host.mcp_tools.needs_approval(call.name, self.host.settings.approval)
        else:
            ask, why = needs_approval(
                call.name, args, self.host.settings.approval, self.host.workspace, extra_read_roots=read_roots
            )
        outside = bool(outside_workspace(call.name, args, self.host.workspace, read_roots))
        asked_by: AskedBy = "mode"
        forced = always_asks(
            call.name, args, self.host.workspace
        )  # protected files, redirections it cannot name
        if verdict.permission == "ask":
            asked_by = "hook"
            ask, why = True, why or "a PreToolUse hook asked for confirmation"
        elif ruling.kind == "ask":
            ask, why, asked_by = True, ruling.reason, "rule"
        elif verdict.permission == "allow" and not outside and not forced:
            ask, why = False, "allowed by a PreToolUse hook"
        elif (
            ruling.kind == "allow"
            and not forced
            and (not outside or (ruling.rule is not None and ruling.rule.names_paths))
        ):
            ask, why = False, ruling.reason
        if ask and ruling.held is not None:  # say what would have allowed it, and how to make it so
            why += (
                f" — {ruling.held.source} allows it ({ruling.held.text}), but its allow rules are not "
                f"approved: `bulkhead permissions approve` puts them in force"
            )
        if not ask:
            self.host.emit(ToolApproval(call_id=call.id, name=call.name, decision="auto", reason=why))
            return await self._run_tool(call.id, call.name, args, ctx), args
        offer = self.offer(call.name, args, asked_by, outside=outside, ask_rule=ruling.rule, forced=forced)
        where_before = landing_places(call.name, args, self.host.workspace)
        answer, said = await self.ask(
            call.name,
            args,
            f"{why}: {describe_call(call.name, args, self.host.workspace)}",
            offer,
            call_id=call.id,
        )
        moved = where_before != landing_places(call.name, args, self.host.workspace) and answer != "deny"
        # a link was swapped in while the user was deciding: what was approved is not what would run
        if moved:
            answer = "deny"
            why = (
                f"{why} — the path now resolves somewhere else than when it was approved (a link changed); "
                f"not run"
            )
        if answer in ("session", "project") and offer.rule:
            self.remember_rule(offer.rule, answer)
        approved = answer != "deny"
        self.host.emit(
            ToolApproval(
                call_id=call.id,
                name=call.name,
                decision="approved" if approved else "denied",
                reason=f"{why} — you told the model: {said}" if said else why,
            )
        )
        if approved:
            return await self._run_tool(call.id, call.name, args, ctx), args
        return denied_outcome(call.name, why, by="user" if self.can_ask else "no_terminal", said=said), args

    async def _run_tool(self, call_id: str, name: str, args: Args, ctx: ToolContext) -> ToolOutcome:
        """Run a tool the user (or a rule) let through. Before a file tool changes a file, its bytes
        and mode are checkpointed (a separate step before the write: `/undo`, `/rewind`)."""
        from app.engine.checkpoints import CheckpointError
        from app.engine.tool_choice import not_offered
        from app.tools.approval import target_paths
        from app.tools.base import ToolOutcome
        from app.tools.registry import EDIT_TOOLS, run_tool

        snapshot = None
        paths = target_paths(name, args, self.host.workspace) if name in EDIT_TOOLS else []
        if paths:
            try:
                snapshot = await asyncio.to_thread(
                    self.host.checkpoints.snapshot, paths[0], turn=self.host.turn_running, call_id=call_id
                )
            except CheckpointError as exc:
                self.host.emit(notice(CheckpointFailed(path=str(paths[0]), problem=str(exc))))
        if self.host.mcp_tools is not None and self.host.mcp_tools.handles(name):
            outcome = await self.host.mcp_tools.run(
                name, args, ctx
            )  # an MCP tool (or tool_search), through its server
        elif (refusal := not_offered(name, self.host.settings, self.host.route)) is not None:
            outcome = ToolOutcome(content=refusal, is_error=True)
        else:
            outcome = await run_tool(name, args, ctx)
        if snapshot is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.host.checkpoints.forget_if_unchanged, snapshot)
        if paths and paths[0].name in INSTRUCTION_NAMES and not outcome.is_error:
            self.host.mark_instructions_changed()  # reloaded when the turn ends (/init writes AGENTS.md)
        return outcome

    def offer(
        self,
        name: str,
        args: Args,
        asked_by: AskedBy,
        *,
        outside: bool = False,
        ask_rule: Any = None,
        forced: str = "",
    ) -> AlwaysOffer:
        """What this approval may offer as "always" (`app.engine.always_allow`): the rule, or why not."""
        from app.engine.always_allow import always_offer

        return always_offer(
            self.host.permissions,
            name,
            args,
            self.host.workspace,
            asked_by=asked_by,
            outside=outside,
            ask_rule=ask_rule,
            forced=forced,
        )

    def remember_rule(self, rule: str, scope: str) -> None:
        """ "Always" in an approval: the allow rule it offered, for the session or the project."""
        if scope == "session":
            self.host.permissions.add_session_rule(rule)
            self.host.emit(notice(RuleAllowedForSession(rule=rule)))
            return
        try:
            path = self.host.permissions.save_project_rule(rule)
        except OSError as exc:
            self.host.permissions.add_session_rule(rule)
            self.host.emit(notice(RuleNotSaved(rule=rule, problem=str(exc))))
            return
        self.host.emit(notice(RuleAllowedForProject(rule=rule, path=str(path))))

    @property
    def can_ask(self) -> bool:
        """Someone can answer an approval (a front end on `app.engine.api`, or an approver callback)."""
        return self.ask_call is not None or self.approver is not None

    async def ask(
        self, name: str, args: Args, why: str, offer: AlwaysOffer | None = None, *, call_id: str = ""
    ) -> tuple[str, str]:
        """(the user's answer, what they told the model): "once", "session", "project" (allow) or "deny",
        and the reason of a denial given one (`app.tools.approval.Denial`, else ""). An approver may answer
        True / False (yes / no), one of those words, or a Denial. `offer` (`always_allow.AlwaysOffer`) is
        what "always" may keep — an approver reads it as `engine.always` while it asks; "session" or
        "project" without one is a plain yes. `call_id`: the tool call asked about (a question that is not
        about a tool call gets an id of its own)."""
        from app.tools.approval import Denial

        if not self.can_ask:
            return "deny", ""
        self.always = offer
        try:
            if self.ask_call is not None:
                request = ApprovalRequest(
                    call_id or new_id("ask"),
                    name,
                    dict(args),
                    why,
                    offer.rule if offer is not None else "",
                    offer.why_not if offer is not None else "",
                )
                answer: Any = await self.ask_call(request)
            else:
                assert self.approver is not None
                answer = await self.approver(name, args, why)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken prompt means "no"
            return "deny", ""
        finally:
            self.always = None
        if isinstance(answer, Denial):
            return "deny", answer.said
        if answer in ("session", "project") and (offer is None or not offer.rule):
            return "once", ""
        if answer in ("once", "session", "project", "deny"):
            return str(answer), ""
        return ("once" if answer is True else "deny"), ""

    async def approve_restores(self, snapshots: Sequence[Snapshot], command: str) -> set[str]:
        """The files a restore would now write (or remove) outside the workspace — a link put in their place
        since — each asked about like a write there; the paths the user allowed."""
        escaping = await asyncio.to_thread(self.host.checkpoints.escaping, snapshots, self.host.workspace)
        approved: set[str] = set()
        for path, real in escaping.items():
            why = f"{command} would restore {path}, which now leads outside the workspace ({real})"
            if (await self.ask("write_file", {"path": str(real), "content": ""}, why))[0] != "deny":
                approved.add(path)
        return approved
