"""`/blocked` (issue 36): find the text a content-inspecting gateway refuses, then withhold it.

It says how many zero-cost probes it may send and that each carries conversation text to the gateway,
and asks first; the probes run as a worker in the "turn" group with their progress in the chat; the
finding is shown (sanitised) and a second question offers to withhold it — then the refused turn is
asked again. `/rewind compact` undoes the withholding. With the offline-waf extra installed, the local
OWASP Core Rule Set judges the request first (nothing sent, nothing to ask); the probes are offered only
when it finds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.textsafe import display_line
from app.ui.actions import Host, handles

if TYPE_CHECKING:
    from app.engine.api.blocked import BlockedReport, Finding

PROGRESS_EVERY = 5  # a progress line every this many probes (and the first)


@handles("blocked")
def blocked(app: Host, arg: str) -> None:
    from app.engine.api.blocked import offline_unavailable

    if offline_unavailable() or arg.strip() == "live":  # `/blocked live`: the gateway itself, asked first
        _ask_to_probe(app)
    else:
        app.run_worker(
            _offline(app), group="turn", exclusive=True, exit_on_error=False, name="blocked offline"
        )


async def _offline(app: Host) -> None:
    """The local Core Rule Set first: a finding is shown at once; none, and the live probes are offered."""
    chat = app.chat
    app.activity = "blocked"
    try:
        await chat.add_notice(
            "checking the refused request with the OWASP Core Rule Set here (paranoia levels 1-4; nothing is "
            "sent)…",
            code="blocked",
            title="blocked",
        )
        report = await app.session.find_offline()
    finally:
        app.activity = ""
    if report.finding is None:
        await chat.add_notice(display_line(report.message), code="blocked", title="blocked")
        _ask_to_probe(app)
        return
    await _show(app, report)


def _ask_to_probe(app: Host) -> None:
    from app.ui.screens.confirm import ConfirmScreen

    plan = app.session.blocked_plan()

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(_find(app), group="turn", exclusive=True, exit_on_error=False, name="blocked")

    app.push_screen(ConfirmScreen(plan.question, yes="Probe", no="Cancel"), callback=answered)


async def _find(app: Host) -> None:
    chat = app.chat
    app.activity = "blocked"
    lines: list[str] = []

    def on_probe(number: int, what: str, verdict: str) -> None:
        lines.append(f"probe {number}: {what} → {verdict}")

    try:
        await chat.add_notice("finding the refused text (zero-cost probes)…", code="blocked", title="blocked")
        report = await app.session.find_blocked(on_probe)
    finally:
        app.activity = ""
    await _show(app, report)


async def _show(app: Host, report: BlockedReport) -> None:
    """The finding (sanitised), then the question whether to withhold it."""
    chat = app.chat
    finding = report.finding
    await chat.add_notice(
        display_line(report.message),
        level="warn" if finding else "info",
        code="blocked",
        title="blocked",
    )
    if finding is None:
        return
    from app.engine.api.blocked import lines_words
    from app.ui.screens.confirm import ConfirmScreen

    where = (
        f"{display_line(finding.part.label)}, {lines_words(finding)}: “{display_line(finding.span[:120])}”"
    )
    yes = "Withhold"
    question = (
        f"Withhold it from the model? {where}. "
        "The original stays in the log and the local archive; /rewind compact undoes it."
    )
    if finding.part.newest_prompt:  # unanswered: taken back to edit (an answered one is withheld as above)
        yes = "Take back"
        question = (
            f"Your newest prompt holds it ({where}). Take the prompt back into the box to edit it and send "
            "it again? If it was answered, the refused lines are withheld instead. The log keeps the original."
        )

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(_withhold(app, finding), group="command", exit_on_error=False, name="withhold")

    app.push_screen(ConfirmScreen(question, yes=yes, no="Keep"), callback=answered)


async def _withhold(app: Host, finding: Finding) -> None:
    outcome = app.session.withhold(finding)
    await app.chat.add_notice(
        display_line(outcome.message),
        level="info" if outcome.applied else "warn",
        code="blocked",
        title="withheld" if outcome.applied else "blocked",
    )
    if outcome.applied:
        app.session.view_changed("withheld")
        app.start_turn("", retry=True)
    elif outcome.take_back is not None:  # the chat as it was before that prompt, the prompt back to edit
        from app.ui.turn_actions import rewind_before

        await rewind_before(app, outcome.take_back, files=False)
