"""The words of the session notices (facts in app.model.notice_facts.session)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.session import (
    CrashPartialKept,
    InstructionsLoaded,
    InstructionsProblem,
    PermissionsProblem,
    RuleFileChanged,
    RuleFileEmptied,
    RuleFileInForce,
    RuleFileRemoved,
    RuleFilesApproved,
    RuleFilesRefused,
    RuleFileUnreadable,
    StaleCapForgotten,
    StateFileSetAside,
    WorkspaceGatewaysRead,
)
from app.sizes import format_size
from app.textsafe import display_line


@describe.register
def _state_set_aside(fact: StateFileSetAside) -> Description:
    return Description(display_line(fact.explanation), level="warn", code=fact.code)


@describe.register
def _crash_partial(fact: CrashPartialKept) -> Description:
    return Description(
        "The previous answer was cut off by a crash; what arrived is kept, marked partial.",
        level="warn",
        code=fact.code,
    )


@describe.register
def _permissions_problem(fact: PermissionsProblem) -> Description:
    return Description(display_line(fact.problem), level="warn", code=fact.code)


@describe.register
def _workspace_gateways(fact: WorkspaceGatewaysRead) -> Description:
    return Description(
        display_line(fact.explanation), level="warn" if fact.problem else "info", code=fact.code
    )


@describe.register
def _stale_cap(fact: StaleCapForgotten) -> Description:
    return Description(fact.explanation, code=fact.code)


@describe.register
def _instructions(fact: InstructionsLoaded) -> Description:
    def name(shown: str, scope: str) -> str:
        shown = display_line(shown)
        return {"global": f"global {shown}", "import": f"{shown} (imported)"}.get(scope, shown)

    listed = ", ".join(
        f"{name(shown, scope)} {format_size(size)}"
        for shown, scope, size in zip(fact.files, fact.scopes, fact.file_bytes, strict=True)
    )
    return Description(
        f"project instructions in the system prompt: {listed} — {format_size(fact.request_bytes)} of every request",
        code=fact.code,
    )


@describe.register
def _instructions_problem(fact: InstructionsProblem) -> Description:
    return Description(display_line(fact.problem), level="warn", code=fact.code)


@describe.register
def _rule_file_at_start(fact: RuleFileInForce) -> Description:
    return Description(display_line(fact.summary), level="warn" if fact.held else "info", code=fact.code)


@describe.register
def _rule_files_approved(fact: RuleFilesApproved) -> Description:
    return Description(
        f"allow rules of {display_line(', '.join(fact.files))} are in force (approved)", code=fact.code
    )


@describe.register
def _rule_files_refused(fact: RuleFilesRefused) -> Description:
    return Description(
        f"allow rules of {display_line(', '.join(fact.files))} stay off (remembered; `bulkhead permissions "
        f"approve` changes it); their deny and ask rules are in force",
        code=fact.code,
    )


@describe.register
def _rule_file_changed(fact: RuleFileChanged) -> Description:
    return Description(
        display_line(f"{fact.file} changed — {fact.summary}"),
        level="warn" if fact.held else "info",
        code=fact.code,
    )


@describe.register
def _rule_file_unreadable(fact: RuleFileUnreadable) -> Description:
    many = fact.kept != 1
    return Description(
        display_line(
            f"{fact.file} changed and cannot be read now ({fact.problem}): its {fact.kept} deny/ask "
            f"rule{'s' if many else ''} from before {'stay' if many else 'stays'} in force, its allow rules "
            f"are off until it reads again"
        ),
        level="warn",
        code=fact.code,
    )


@describe.register
def _rule_file_removed(fact: RuleFileRemoved) -> Description:
    return Description(
        display_line(f"{fact.file} was removed: its rules are no longer in force"), code=fact.code
    )


@describe.register
def _rule_file_emptied(fact: RuleFileEmptied) -> Description:
    return Description(display_line(f"{fact.file} changed; it holds no permission rules now"), code=fact.code)


__all__: list[str] = []
