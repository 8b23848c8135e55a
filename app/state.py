"""`state.toml`: what bulkhead learns and remembers — learned caps per endpoint, the model chosen per
route (`[models]`, by /model), last route, theme.

Machine-written with tomli-w, atomically (temp file + rename), under a file lock so two
bulkhead processes never lose each other's updates. The user's config.toml is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tomllib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tomli_w

from app.config import data_home
from app.fsutil import atomic_write


@dataclass(frozen=True)
class LearnedCap:
    """A body cap learned from a rejection: ¾ of the bytes the gateway refused."""

    cap_bytes: int
    rejected_bytes: int | None
    learned_at: str
    kind: str
    reason: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearnedCap:
        return cls(
            cap_bytes=int(data["cap_bytes"]),
            rejected_bytes=int(data["rejected_bytes"]) if data.get("rejected_bytes") is not None else None,
            learned_at=str(data.get("learned_at", "")),
            kind=str(data.get("kind", "")),
            reason=str(data.get("reason", "")),
        )


_DAMAGED: list[str] = []  # sentences about damaged state files, said once (`take_damage_notices`)
MAX_DAMAGED_COPIES = 20


def _free_damaged_name(path: Path) -> Path:
    """`state.toml.damaged`, else `.damaged.1`, `.2`, …: the first name not taken (the oldest is reused past
    MAX_DAMAGED_COPIES, so a file that keeps breaking cannot fill the disk)."""
    first = path.with_name(path.name + ".damaged")
    if not first.exists():
        return first
    for number in range(1, MAX_DAMAGED_COPIES):
        candidate = path.with_name(f"{path.name}.damaged.{number}")
        if not candidate.exists():
            return candidate
    return path.with_name(f"{path.name}.damaged.{MAX_DAMAGED_COPIES}")


def take_damage_notices() -> list[str]:
    """What happened to damaged state files since the last call (each said once)."""
    said = list(_DAMAGED)
    _DAMAGED.clear()
    return said


STATE_VERSION = 3  # 2: caps learned from a 431 (a header-size answer, never a body cap) are dropped;
# 3: the content blocks kept in a `[content_blocks]` table of their own move into the endpoints' profiles


def state_path() -> Path:
    return data_home() / "state.toml"


def _from_header_rejection(entry: Any) -> bool:
    """A cap learned before bulkhead told header-size rejections (431, "Request Header Or Cookie Too
    Large") from body-size ones: no body size can satisfy it, so it must not survive the upgrade."""
    if not isinstance(entry, dict):
        return False
    if entry.get("kind") == "headers_too_large":
        return True
    reason = str(entry.get("reason", "")).lower()
    return "431" in reason or "header fields too large" in reason or "header or cookie too large" in reason


def migrate(data: dict[str, Any]) -> bool:
    """Bring `data` (state.toml's contents) to STATE_VERSION in place; True when anything changed."""
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version >= STATE_VERSION:
        return False
    caps = data.get("caps")
    if isinstance(caps, dict):
        for endpoint in [name for name, entry in caps.items() if _from_header_rejection(entry)]:
            del caps[endpoint]
    _move_content_blocks(data)
    data["version"] = STATE_VERSION
    return True


def _move_content_blocks(data: dict[str, Any]) -> None:
    """`[content_blocks."ENDPOINT"]` (one entry per endpoint, written by a bulkhead of early December 2026)
    becomes an entry of `[profiles."ENDPOINT"].content_blocks`, where the gateway profile keeps them."""
    old = data.pop("content_blocks", None)
    if not isinstance(old, dict):
        return
    profiles = data.get("profiles")
    if not isinstance(profiles, dict):
        profiles = data["profiles"] = {}
    for endpoint, entry in old.items():
        if not isinstance(entry, dict):
            continue
        table = profiles.get(endpoint)
        if not isinstance(table, dict):
            table = profiles[endpoint] = {}
        blocks = table.get("content_blocks")
        if not isinstance(blocks, list):
            blocks = table["content_blocks"] = []
        moved = {
            "cause": "content",
            "kind": "waf_block",
            "status": entry.get("status"),
            "gateway": entry.get("gateway"),
            "incident_id": entry.get("incident_id"),
            "rejected_bytes": entry.get("rejected_bytes"),
            "at": entry.get("seen_at"),
            "why": "judged content by an earlier bulkhead",
            "count": 1,
        }
        blocks.append({k: v for k, v in moved.items() if v not in (None, "", 0)})


def _caps(data: dict[str, Any]) -> dict[str, Any]:
    """The `caps` table, replaced by an empty one if a hand edit left something else there."""
    caps = data.get("caps")
    if not isinstance(caps, dict):
        caps = data["caps"] = {}
    return caps


def _cap_entry(caps: dict[str, Any], endpoint: str) -> LearnedCap | None:
    """A remembered cap, or None when the entry is missing or not a cap (never an exception)."""
    entry = caps.get(endpoint)
    if not isinstance(entry, dict):
        return None
    try:
        return LearnedCap.from_dict(entry)
    except (KeyError, TypeError, ValueError):
        return None


class State:
    """Read-modify-write access to state.toml. Every write re-reads under the lock first."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_path()

    # -- low level ---------------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as handle:
                seen = os.fstat(handle.fileno())
                data = handle.read()
            contents = tomllib.loads(data.decode("utf-8"))
            migrate(contents)  # in memory; the next write (or `migrate()`) saves it
            return contents
        except FileNotFoundError:
            return {}
        except OSError:  # unreadable (a folder, no permission): nothing remembered, never fatal
            return {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            # A damaged state file only costs remembered preferences; keep it for inspection, each damaged
            # copy under its own number (a second corruption never overwrites the first), and say so once.
            # Only the file we read: another process may have replaced it with a good one since.
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == seen.st_ino:
                    kept = _free_damaged_name(self.path)
                    self.path.replace(kept)
                    _DAMAGED.append(
                        f"{self.path} could not be read ({type(exc).__name__}: {str(exc)[:120]}); it was kept as "
                        f"{kept} and bulkhead starts over with what it remembers (learned caps, chosen models, "
                        f"approvals of workspace files) — copy anything you need from that file back by hand"
                    )
            return {}

    @contextlib.contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = self.path.with_suffix(".lock")
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def update(self, change) -> dict[str, Any]:
        """Apply `change(data)` to the current contents and write the result atomically."""
        with self._locked():
            data = self.read()
            change(data)
            data["version"] = STATE_VERSION
            atomic_write(self.path, tomli_w.dumps(data), 0o600)
            return data

    def migrate(self) -> bool:
        """Rewrite state.toml at the current version when it is older (True when it was rewritten)."""
        try:
            with open(self.path, "rb") as handle:
                raw = tomllib.loads(handle.read().decode("utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return False
        if not migrate(raw):
            return False
        self.update(lambda data: None)  # read() migrates under the lock; update() writes it back
        return True

    # -- learned caps ----------------------------------------------------------------------
    def learned_cap(self, endpoint: str) -> LearnedCap | None:
        return _cap_entry(_caps(self.read()), endpoint)

    def learn_cap(
        self,
        endpoint: str,
        cap_bytes: int,
        *,
        rejected_bytes: int | None,
        kind: str,
        reason: str,
        now: datetime | None = None,
    ) -> LearnedCap:
        """Remember a cap for `endpoint`. It only tightens: a larger cap than the known one is ignored."""
        learned = LearnedCap(
            cap_bytes=int(cap_bytes),
            rejected_bytes=rejected_bytes,
            learned_at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            kind=kind,
            reason=reason,
        )
        result: list[LearnedCap] = []

        def change(data: dict[str, Any]) -> None:
            caps = _caps(data)
            existing = _cap_entry(caps, endpoint)
            if existing and existing.cap_bytes <= learned.cap_bytes:
                result.append(existing)
                return
            caps[endpoint] = {k: v for k, v in asdict(learned).items() if v is not None}
            result.append(learned)

        self.update(change)
        return result[0]

    def forget_cap(self, endpoint: str) -> bool:
        removed: list[bool] = []

        def change(data: dict[str, Any]) -> None:
            removed.append(_caps(data).pop(endpoint, None) is not None)

        self.update(change)
        return removed[0]

    # -- the model chosen per route (/model) ----------------------------------------------------
    def chosen_model(self, route: str) -> str | None:
        models = self.read().get("models")
        value = models.get(route) if isinstance(models, dict) else None
        return value if isinstance(value, str) and value else None

    def choose_model(self, route: str, model: str | None) -> None:
        """Remember `model` for `route` (None forgets it: the route's configured model again)."""

        def change(data: dict[str, Any]) -> None:
            models = data.get("models")
            if not isinstance(models, dict):
                models = data["models"] = {}
            if model:
                models[route] = model
            else:
                models.pop(route, None)

        self.update(change)

    # -- preferences ---------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        return self.read().get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Remember `value` under `key`; None forgets the key (TOML has no null)."""

        def change(data: dict[str, Any]) -> None:
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value

        self.update(change)
