"""Handlers of the actions that work on the conversation: compact, retry, cancel, rewind, recall, undo,
the cap, the project's instructions, the reports (`/cost`, `/context`, `/mcp`) and the probe.

Each is `handler(app, arg)` registered in `app.ui.actions`; what runs long runs as a worker in the
"turn" group and sets `app.activity` for as long as it runs (the busy guard of the other actions).
"""

from __future__ import annotations

import asyncio
import contextlib

from textual.actions import SkipAction

from app.sizes import SizeError, format_size, parse_size
from app.ui.actions import Host, handles
from app.ui.reports import context_report, cost_report, memory_report, probe_report


@handles("compact")
def compact(app: Host, instructions: str) -> None:
    cancel = asyncio.Event()
    app.compact_cancel = cancel
    app.activity = "compact"

    async def run() -> None:
        try:
            result = await app.session.compact(instructions or None, cancel=cancel)
        finally:
            app.activity = ""
        if cancel.is_set():
            await app.chat.add_notice(
                "compaction cancelled — the view is unchanged", level="warn", code="compaction"
            )
        elif not result.ran:
            app.notify("compaction did not run (blocked by a hook)", severity="warning")

    app.run_worker(run(), group="turn", exclusive=True, exit_on_error=False, name="compact")


@handles("retry")
def retry(app: Host, _arg: str) -> None:
    app.start_turn("", retry=True)


@handles("cancel")
def cancel(app: Host, _arg: str) -> None:
    with contextlib.suppress(SkipAction):
        app.action_cancel()


@handles("init")
def init(app: Host, _arg: str) -> None:
    from app.engine.api.ui_text import init_prompt

    app.send(init_prompt(app.workspace))


@handles("rewind")
def rewind_compact(app: Host, _arg: str) -> None:
    app.session.undo_compaction()


@handles("recall")
def recall(app: Host, key: str) -> None:
    app.session.recall(key)


@handles("undo")
async def undo(app: Host, _arg: str) -> None:
    await app.session.undo()  # its notice says which files came back


@handles("rewind_to")
def rewind_to(app: Host, _arg: str) -> None:
    from app.ui.screens.rewind import RewindScreen

    def chosen(choice: tuple[str, bool] | None) -> None:
        if choice is not None:
            app.run_worker(rewind_before(app, *choice), group="command", exit_on_error=False, name="rewind")

    app.push_screen(RewindScreen(app.session.rewind_choices(), now=app.clock), callback=chosen)


async def rewind_before(app: Host, message_id: str, files: bool) -> None:
    """Back to just before a prompt: the chat shows the conversation as it was, the prompt holds that
    prompt again (edit and send it), and the files come back too when asked."""
    session = app.session
    kept = session.view_before(message_id)
    await app.chat.clear_all()
    await app.chat.render_history(kept)
    result = await session.rewind_to(message_id, files=files)
    app.prefill_prompt(result.prompt)


@handles("cap_reset")
def cap_reset(app: Host, _arg: str) -> None:
    app.session.reset_cap()


@handles("cap_set")
async def cap_set(app: Host, size: str) -> None:
    try:
        cap = parse_size(size)
    except (SizeError, ValueError) as exc:
        app.notify(f"/cap {size}: {exc}", severity="warning")
        return
    app.session.set_cap(cap)
    await app.chat.add_notice(
        f"request body cap set to {format_size(cap)} for this session (not saved: put "
        f"max_payload in config.toml to keep it)",
        code="cap",
        title="cap",
    )
    app.session.view_changed("cap")


@handles("memory")
async def memory(app: Host, text: str) -> None:
    session = app.session
    if text.strip().lower() == "review":  # the memory worker's suggestions (app.ui.engine_questions)
        from app.ui.engine_questions import open_memory_review

        said = open_memory_review(app)
        if said:
            await app.chat.add_notice(said, code="memory", title="memory")
        return
    if text:
        try:
            session.remember(text)  # one short append
        except OSError as exc:
            await app.chat.add_notice(
                f"could not add it to the instructions: {exc}", level="error", code="memory"
            )
        return
    await app.chat.add_report(*memory_report(*session.memory_report()))


@handles("permissions")
def permissions(app: Host, _arg: str) -> None:
    from app.ui.screens.permissions import PermissionsScreen

    session = app.session
    view = session.permissions()
    app.push_screen(
        PermissionsScreen(
            [(rule.kind, rule.rule, rule.source) for rule in view.rules],
            list(view.problems),
            mode=app.settings.approval,
            workspace=session.info().workspace,
        )
    )


@handles("cost")
async def cost(app: Host, _arg: str) -> None:
    await app.chat.add_report(*cost_report(app.session.counters()))


@handles("context")
async def context(app: Host, _arg: str) -> None:
    await app.chat.add_report(
        *context_report(app.session.report(), no_cap_warn_bytes=app.settings.no_cap_warn_bytes)
    )


@handles("mcp")
async def mcp(app: Host, arg: str) -> None:
    """`/mcp`: each server's state, tools and the bytes their definitions add; `/mcp restart NAME`."""
    session = app.session
    words = arg.split()
    if words and words[0] == "restart":
        servers = session.mcp_servers()
        if len(words) != 2 or words[1] not in servers:
            known = ", ".join(servers) if session.has_mcp() else "none configured"
            await app.chat.add_notice(
                f"usage: /mcp restart NAME (servers: {known})", level="warn", code="mcp"
            )
            return
        await app.chat.add_notice(f"restarting MCP server {words[1]}…", code="mcp", title="mcp")
        status = await session.restart_mcp(words[1])
        if status.state == "ready":
            await app.chat.add_notice(
                f"MCP server {words[1]} is ready: {len(status.tools)} tools", code="mcp", title="mcp"
            )
        return
    if words:
        await app.chat.add_notice(
            "usage: /mcp (servers, tools, bytes) or /mcp restart NAME", level="warn", code="mcp"
        )
        return
    await app.chat.add_report(*session.mcp_report())


PROBE_LOW, PROBE_HIGH, PROBE_PRECISION = 1024, 32 * 1024 * 1024, 1024  # the defaults of `bulkhead probe`
PROBE_MAX_REQUESTS = 40


@handles("probe")
def probe(app: Host, _arg: str) -> None:
    app.activity = "probe"
    app.run_worker(_probe(app), group="turn", exclusive=True, exit_on_error=False, name="probe")


async def _probe(app: Host) -> None:
    """`bulkhead probe` for the session's route, with the defaults of the command (1 KB … 32 MB, 1 KB)."""
    from app.engine.api.probe import retry_policy, user_rules
    from app.probe import Probe, ProbeAnswer, Prober, max_probes_for, timed
    from app.probe_floor import measure_floor, probe_with_floor

    target = app.session.probe_target()
    provider = target.provider
    low, high, precision = PROBE_LOW, PROBE_HIGH, PROBE_PRECISION
    # every probe carries the session's floor (system prompt, instructions, tools with MCP, headers)
    floor = measure_floor(
        provider, target.base_system, target.system, target.tools, max_tokens=target.max_tokens
    )
    try:
        await app.chat.add_notice(
            f"probing route {target.route} from {format_size(low)} to "
            f"{format_size(high)} (≈{max_probes_for(low, high, precision)} requests) "
            f"using {provider.probe_method or 'the provider'}",
            code="probe",
            title="probe",
        )

        async def send(size: int) -> ProbeAnswer:
            async def call() -> tuple[int, int | None]:
                reply = await provider.probe(size, floor.floor)
                return reply.status, reply.actual_bytes

            return await timed(call, size)

        def on_probe(probe: Probe) -> None:
            app.prompt_box.busy_text = f"probe {probe.number}: {format_size(probe.size)} → {probe.verdict}"

        prober = Prober(
            send,
            drop_threshold=app.settings.drop_payload_min_bytes,
            retry_policy=retry_policy(app.settings),
            on_probe=on_probe,
            max_requests=PROBE_MAX_REQUESTS,
            user_rules=user_rules(app.settings),
        )
        result, floor_outcome = await probe_with_floor(prober, floor, low, high, precision)
    finally:
        app.activity = ""
    await app.chat.add_report(*probe_report(target.route, result))
    level = "info" if floor_outcome.passed else "warn"
    await app.chat.add_notice(floor_outcome.line, level=level, code="probe", title="probe")
