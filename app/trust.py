"""Trust on first use for what a workspace brings with it: asked once, remembered outside the workspace.

A cloned repository may carry files that would change what bulkhead does on your behalf — MCP
servers (`.mcp.json`), permission rules (`.claude/settings.json`, `.bulkhead/settings.toml`),
gateway settings. None of them takes effect until you said yes to it once. The answer is kept in
state.toml (the repository cannot pre-fill it), per workspace and per item, with a fingerprint of
what was approved: when the item changes, the old answer no longer applies and you are asked again.

    trust = WorkspaceTrust(State(), workspace, table="workspace_rule_files")
    if trust.decision(".claude/settings.json", fingerprint(allow_rules)) != "allow":
        ...                                   # not in force: ask (or say how to allow it)
    trust.remember({".claude/settings.json": fingerprint(allow_rules)}, "allow")
    trust.forget()                            # every answer for this workspace: asked again

One table per kind of item (`mcp_project_servers`, `workspace_rule_files`, …); within it one table
per workspace (its resolved path), one entry per item: `{fingerprint, decision, at}`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

Decision = Literal["allow", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "deny")


def fingerprint(value: Any) -> str:
    """A short, stable digest of `value` (JSON with sorted keys): equal definitions, equal fingerprints."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class WorkspaceTrust:
    """The user's answers for one kind of workspace item, in state.toml (never in the workspace).

    `state` is an `app.state.State` (anything with `read()` and `update(change)`)."""

    def __init__(self, state: Any, workspace: Path, *, table: str) -> None:
        self.state = state
        self.table = table
        self.workspace = str(Path(workspace).expanduser().resolve())

    def _entries(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        table = data.get(self.table)
        entries = table.get(self.workspace) if isinstance(table, Mapping) else None
        return entries if isinstance(entries, Mapping) else {}

    def decision(self, name: str, digest: str) -> Decision | None:
        """ "allow" or "deny" when the user answered for this very fingerprint; None when never asked
        (or the item changed since). An unreadable state file means "not asked yet"."""
        try:
            entry = self._entries(self.state.read()).get(name)
        except Exception:  # unreadable state: nothing was approved
            return None
        if not isinstance(entry, Mapping) or entry.get("fingerprint") != digest:
            return None
        decision = entry.get("decision")
        return decision if decision in DECISIONS else None

    def answers(self) -> dict[str, Mapping[str, Any]]:
        """Every remembered answer of this workspace: name → {fingerprint, decision, at}."""
        try:
            return {str(k): v for k, v in self._entries(self.state.read()).items() if isinstance(v, Mapping)}
        except Exception:  # unreadable state: nothing remembered
            return {}

    def remember(self, items: Mapping[str, str], decision: Decision) -> None:
        """Remember `decision` for each name → fingerprint of `items`."""
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        def change(data: dict[str, Any]) -> None:
            table = data.get(self.table)
            if not isinstance(table, dict):
                table = data[self.table] = {}
            entries = table.get(self.workspace)
            if not isinstance(entries, dict):
                entries = table[self.workspace] = {}
            for name, digest in items.items():
                entries[name] = {"fingerprint": digest, "decision": decision, "at": when}

        self.state.update(change)

    def forget(self, names: Iterable[str] | None = None) -> int:
        """Forget the answers for `names` (all of this workspace's when None); they will be asked again.
        Returns how many were forgotten."""
        removed: list[int] = []
        wanted = None if names is None else set(names)

        def change(data: dict[str, Any]) -> None:
            table = data.get(self.table)
            if not isinstance(table, dict) or not isinstance(table.get(self.workspace), dict):
                removed.append(0)
                return
            if wanted is None:
                removed.append(len(table.pop(self.workspace)))
                return
            entries = table[self.workspace]
            gone = [name for name in list(entries) if name in wanted]
            for name in gone:
                del entries[name]
            removed.append(len(gone))

        self.state.update(change)
        return removed[0] if removed else 0
