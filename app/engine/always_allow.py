"""Whether an approval may offer "always allow" (a / p), and the rule it would keep.

"Always" writes an allow rule — for the session, or the project's `.bulkhead/settings.toml`. It is offered
only when that rule would let the same call through next time; otherwise the card says why not:

- an explicit `ask` rule matches the call: ask wins over allow, so a new allow rule changes nothing;
- a PreToolUse hook asked: a rule does not silence a hook;
- an `@` attachment outside the workspace: asked about each time (nothing is remembered for mentions);
- the allow rule would not match the call (a compound shell command, `$(…)`: a pattern never allows those),
  or not outside the workspace — checked by matching the rule with the permissions' own code.

    offer = always_offer(engine.permissions, "shell", {"command": "make test"}, workspace, asked_by="mode")
    offer.rule      # "Bash(make test)"
    offer.why_not   # "" — or the sentence the card shows instead of a / p
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from app.engine.permissions import SESSION, Permissions, Rule, RuleError, suggest_rule

AskedBy = Literal["mode", "rule", "hook", "mention"]


@dataclass(frozen=True)
class AlwaysOffer:
    rule: str = ""  # the allow rule "always" keeps ("" when it is not offered)
    why_not: str = ""  # why it is not offered ("" when it is)


def rule_for(name: str, args: Mapping[str, Any], workspace: Path) -> str:
    """The allow rule for this call: the exact command or path (`suggest_rule`); a fetch: its domain."""
    if name == "web_fetch":
        host = (urlsplit(str(args.get("url", ""))).hostname or "").lower()
        return f"WebFetch(domain:{host})" if host else ""
    return suggest_rule(name, args, workspace)


def always_offer(
    permissions: Permissions,
    name: str,
    args: Mapping[str, Any],
    workspace: Path,
    *,
    asked_by: AskedBy,
    outside: bool = False,
    ask_rule: Rule | None = None,
    forced: str = "",
) -> AlwaysOffer:
    """What the approval of this call may offer (see the module's doc). `ask_rule`: the ask rule that asked;
    `forced`: why the call asks whatever the rules say (`app.tools.approval.always_asks`)."""
    if forced:
        return AlwaysOffer(why_not=f"{forced} — no allow rule changes that")
    if asked_by == "mention":
        return AlwaysOffer(why_not="a file you attach with @ outside the workspace is asked about each time")
    if asked_by == "hook":
        return AlwaysOffer(
            why_not="a PreToolUse hook asked for this call: an allow rule does not silence a hook (change the "
            "hook to stop being asked)"
        )
    if asked_by == "rule":
        where = f"{ask_rule.text} ({ask_rule.source})" if ask_rule is not None else "an ask rule"
        return AlwaysOffer(
            why_not=f"the ask rule {where} asks every time, and ask wins over allow — edit or remove it to stop "
            f"being asked"
        )
    rule = rule_for(name, args, workspace)
    try:
        candidate = Rule(rule, "allow", SESSION, Path(workspace))
    except RuleError:
        return AlwaysOffer(why_not="no allow rule can name this call")
    verdict = Permissions(Path(workspace), [*permissions.rules, candidate]).check(name, args)
    takes_effect = verdict.kind == "allow" and (
        not outside or (verdict.rule is not None and verdict.rule.names_paths)
    )
    if takes_effect:
        return AlwaysOffer(rule=rule)
    if name == "shell":
        return AlwaysOffer(
            why_not="no allow rule can cover this command (command substitution, $(…) or `…`, or text "
            "bulkhead cannot parse for sure is never allowed by a pattern) — approve it each time"
        )
    if verdict.kind == "ask" and verdict.rule is not None:
        return always_offer(permissions, name, args, workspace, asked_by="rule", ask_rule=verdict.rule)
    return AlwaysOffer(why_not=f"an allow rule ({rule}) would not let this call through next time")
