"""The lab's settings: which gateway, which cap, which window, which faults — validated in one place."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from app.lab import gateway
from app.lab.faults import FaultRule, describe_faults, parse_faults
from app.sizes import format_size, parse_size

DEFAULT_WINDOW = 200_000
NO_CAP = -1  # `cap = "none"`: no body cap at all, not even the profile's default
NO_WINDOW = -1  # `window = "none"`: no context window, so no overflow
UNLIMITED_WINDOW = 2**31 - 1  # the window a lab without one reports (tokens)
_NONE_WORDS = ("none", "off")


def _cap_bytes(value: Any) -> int | None:
    """A cap from the CLI, the API or JSON: None (the profile's default), "none" (no cap), an int (bytes)
    or a size string ("128KB"; "5" = 5 MiB)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().lower() in _NONE_WORDS:
        return NO_CAP
    if value == NO_CAP:
        return NO_CAP
    if isinstance(value, bool):
        raise ValueError(f"cap {value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"cap {value} is negative")
        return value
    if isinstance(value, float):
        raise ValueError(f"cap {value!r}: give bytes as an integer or a size like '128KB'")
    try:
        return parse_size(str(value))
    except ValueError as exc:
        raise ValueError(f"cap: {exc}") from None


def _window(value: Any) -> int | None:
    """A window from the CLI, the API or JSON: None (the default), "none" (no overflow) or tokens ≥ 1."""
    if value is None or value == "":
        return None
    if value == NO_WINDOW or (isinstance(value, str) and value.strip().lower() in _NONE_WORDS):
        return NO_WINDOW
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"window {value!r} must be a positive number of tokens (or none: no overflow)")
    return value


@dataclass(frozen=True)
class LabConfig:
    """Settings of a running lab. `cap` is in bytes (None: the profile's default; NO_CAP: none at all),
    `window` in tokens (None: DEFAULT_WINDOW; NO_WINDOW: none, so nothing overflows)."""

    gateway: str = "none"
    cap: int | None = None
    window: int | None = None
    faults: str | None = None
    seed: int = 0
    slow_pause: float = 0.25  # seconds between stream events under the `slow` fault

    def __post_init__(self) -> None:
        gateway.profile(self.gateway)
        object.__setattr__(self, "cap", _cap_bytes(self.cap))
        object.__setattr__(self, "window", _window(self.window))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed {self.seed!r} must be an integer")
        if not isinstance(self.slow_pause, int | float) or self.slow_pause < 0:
            raise ValueError(f"slow_pause {self.slow_pause!r} must be a number of seconds ≥ 0")
        parse_faults(self.faults)

    @property
    def effective_cap(self) -> int | None:
        return None if self.cap == NO_CAP else gateway.effective_cap(self.gateway, self.cap)

    @property
    def effective_window(self) -> int:
        if self.window == NO_WINDOW:
            return UNLIMITED_WINDOW
        return self.window if self.window is not None else DEFAULT_WINDOW

    @property
    def fault_rules(self) -> tuple[FaultRule, ...]:
        return parse_faults(self.faults)

    def changed(self, **changes: Any) -> LabConfig:
        """A copy with `changes` applied (and validated); unknown names are an error."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(
                f"unknown lab setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.cap == NO_CAP:
            data["cap"] = "none"
        if self.window == NO_WINDOW:
            data["window"] = "none"
        data.update(effective_cap=self.effective_cap, effective_window=self.effective_window)
        return data

    def describe(self) -> str:
        """One line: `gateway nginx · cap 128.0 KB · window 200,000 tokens · faults 429:0.1 · seed 0`."""
        profile = gateway.profile(self.gateway)
        cap = self.effective_cap
        if cap is None:
            cap_text = "no cap"
        elif cap == 0:
            cap_text = "every request"
        else:
            cap_text = f"cap {format_size(cap)}" + (
                "" if self.cap is not None else f" ({profile.cap_origin})"
            )
        window_text = "no window" if self.window == NO_WINDOW else f"window {self.effective_window:,} tokens"
        return (
            f"gateway {self.gateway} · {cap_text} · {window_text} · "
            f"faults {describe_faults(self.fault_rules)} · seed {self.seed}"
        )
