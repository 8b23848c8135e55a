"""A workspace's committed `.bulkhead/gateways.toml`: the team's gateway profiles, read on trust.

At each session's start the file is looked at: never answered for (or changed since), a notice says how to
read it (`bulkhead gateway trust`); allowed, its content is imported once (source: the workspace file);
denied, it is left alone. The answer is remembered per workspace and per content (`app.workspace_trust`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.gateway_share import GatewayFileError, import_profiles
from app.state import State
from app.workspace_trust import workspace_file_trust

WORKSPACE_FILE = ".bulkhead/gateways.toml"
MAX_FILE_BYTES = 1024 * 1024
SYNCED = "workspace_gateways"  # state.toml: {workspace: fingerprint of the content last imported}


def workspace_file(workspace: Path) -> Path:
    return Path(workspace).expanduser().resolve() / WORKSPACE_FILE


def read_workspace_file(workspace: Path) -> bytes | None:
    path = workspace_file(workspace)
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def import_workspace_file(state: State, workspace: Path, content: bytes) -> list[str]:
    """Import the file's content (already trusted) and remember that this content was imported."""
    path = workspace_file(workspace)
    trust = workspace_file_trust(state, path.parent.parent, WORKSPACE_FILE, content)
    report = import_profiles(state, content.decode("utf-8", errors="replace"), source=f"workspace {path}")

    def change(data: dict[str, Any]) -> None:
        synced = data.get(SYNCED)
        if not isinstance(synced, dict):
            synced = data[SYNCED] = {}
        synced[str(path.parent.parent)] = trust.fingerprint

    state.update(change)
    return report.imported + [f"skipped {line}" for line in report.skipped]


def sync_workspace_gateways(state: State, workspace: Path) -> list[tuple[str, str]]:
    """Notices (level, text) about the workspace's gateways file; imports it when trusted and new."""
    content = read_workspace_file(workspace)
    if content is None:
        return []
    root = workspace_file(workspace).parent.parent
    trust = workspace_file_trust(state, root, WORKSPACE_FILE, content)
    decision = trust.decision()
    if decision == "deny":
        return []
    if decision is None:
        return [
            (
                "warn",
                f"this workspace has {WORKSPACE_FILE} (gateway profiles shared with the repository) — not "
                f"read until you trust it: `bulkhead gateway trust` shows it and reads it (asked again when "
                f"it changes; `bulkhead gateway trust --deny` leaves it alone)",
            )
        ]
    synced = state.read().get(SYNCED)
    if isinstance(synced, dict) and synced.get(str(root)) == trust.fingerprint:
        return []
    try:
        lines = import_workspace_file(state, root, content)
    except GatewayFileError as exc:
        return [("warn", str(exc))]
    return [("info", f"gateway profiles read from {WORKSPACE_FILE}: " + "; ".join(lines))]
