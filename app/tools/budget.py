"""Tool-result budgets (DESIGN.md §4): cut long results to head + tail, spill the full text.

A result longer than its budget keeps its head (¾) and tail (¼); the gap line says how
much is missing and names the file in `<session folder>/spill/` that holds the full
text, so the model can read ranges of it with read_file (the payload notice tells it
to). Spill files are 0600 in a 0700 folder; the name is the tool's plus a short hash of
the content, so the same output spilled twice is one file.

    outcome = apply_budget("read_file", outcome, ctx)     # run_tool does this for you
    budget = TurnBudget(settings.turn_budget_chars)       # per turn, in the turn loop
    ctx = with_result_limit(ctx, budget.limit(ctx.result_max_chars))
    outcome = await run_tool(name, args, ctx); budget.charge(outcome)
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from app.fsutil import atomic_write
from app.model.textcut import head_tail
from app.redact import redact_known
from app.tools.base import ToolContext, ToolOutcome

SPILL_DIR = "spill"
HEAD_RATIO = 0.75
SPILL_HASH_CHARS = 8
MIN_PREVIEW_CHARS = 1_000  # a preview never shrinks below this, however tight the budget
TURN_FLOOR_CHARS = 2_000  # what a result still gets once the turn budget is spent


def spill_folder(session_folder: Path) -> Path:
    return Path(session_folder) / SPILL_DIR


def _private_dir(path: Path) -> None:
    for folder in (path.parent, path):
        if not folder.exists():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(folder, 0o700)
    os.chmod(path, 0o700)


def spill_path_for(tool_name: str, text: str, session_folder: Path) -> Path:
    """Where `text` from `tool_name` is (or would be) spilled: `<folder>/spill/<tool>-<hash>.txt`."""
    folder = spill_folder(session_folder).expanduser().absolute()
    safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", tool_name) or "tool"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:SPILL_HASH_CHARS]
    return folder / f"{safe_name}-{digest}.txt"


def spill_text(tool_name: str, text: str, session_folder: Path) -> Path:
    """Write `text` to its spill file (0600, folder 0700) and return the file's absolute path."""
    path = spill_path_for(tool_name, text, session_folder)
    _private_dir(path.parent)
    atomic_write(path, redact_known(text).encode("utf-8", "surrogateescape"), 0o600)  # no key on disk
    return path


def spill_note(path: Path) -> str:
    return (
        f"full output saved to {path} — read ranges of it with read_file (offset/limit) "
        f"or grep it instead of repeating this call"
    )


def _gap_overhead(text: str, note: str) -> int:
    return len(f"\n[… {len(text):,} chars not shown; {note} …]\n")


def cut_to_budget(tool_name: str, text: str, max_chars: int, session_folder: Path) -> tuple[str, Path | None]:
    """(`text` itself, None) when it fits; else (head + gap + tail within `max_chars`, spill path).

    A text that a preview would not make shorter (tiny budgets) is left whole.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text, None
    planned = spill_note(spill_path_for(tool_name, text, session_folder))
    allowance = max(max_chars - _gap_overhead(text, planned), min(MIN_PREVIEW_CHARS, max_chars))
    if allowance + _gap_overhead(text, planned) >= len(text):
        return text, None
    spill_path: Path | None
    try:
        spill_path = spill_text(tool_name, text, session_folder)
        note = spill_note(spill_path)
    except OSError as exc:
        spill_path = None
        note = f"the full output could not be saved ({exc.strerror or exc}); narrow the call to see the rest"
    preview, _removed = head_tail(text, allowance, HEAD_RATIO, note)
    return preview, spill_path


def apply_budget(tool_name: str, outcome: ToolOutcome, ctx: ToolContext) -> ToolOutcome:
    """`outcome` within `ctx.result_max_chars`. Recall output (`preserve_verbatim`) is never cut."""
    if outcome.preserve_verbatim:
        return outcome
    preview, spill_path = cut_to_budget(tool_name, outcome.content, ctx.result_max_chars, ctx.session_folder)
    if spill_path is None and preview is outcome.content:
        return outcome
    return replace(outcome, content=preview, spill_path=spill_path, chars_total=len(outcome.content))


@dataclass
class TurnBudget:
    """The per-turn allowance for tool output (DESIGN §4: 200,000 chars per turn).

    Ask `limit()` for the budget of the next result, `charge()` what it used. Once the
    turn's allowance is spent, results still get a short preview (and their spill file).
    """

    total_chars: int = 200_000
    used_chars: int = 0
    floor_chars: int = TURN_FLOOR_CHARS

    @property
    def remaining_chars(self) -> int:
        return max(0, self.total_chars - self.used_chars)

    def limit(self, result_max_chars: int) -> int:
        return min(result_max_chars, max(self.remaining_chars, self.floor_chars))

    def charge(self, outcome: ToolOutcome | str) -> None:
        content = outcome if isinstance(outcome, str) else outcome.content
        self.used_chars += len(content)
