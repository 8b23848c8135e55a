"""What a notice tells, as facts: one frozen record per kind of notice, worded in one place.

    emit(notice(RewindNothing()))                      # app.engine.notice_words words it (app.engine.describe)
    event.fact                                         # on the `Notice` a front end receives: the facts, typed
    event.fact.kind, event.fact.to_json()              # "rewind_nothing", {"kind": "rewind_nothing", …}

An engine part never writes the sentence a user reads: it says what happened (which file, how many messages,
which server) in a fact, and `describe` words it — the same words for the chat, `bulkhead -p`, the logs and a
front end yet to come, which may also word the facts its own way (an ACP agent, a proxy). The `Notice` event
keeps its text, level and code, so what is stored and printed is unchanged; `--json` carries `fact` beside them.

Facts hold plain values (str, int, float, bool, tuples of them): they are stored and printed as JSON. Outside
text in a fact (a path, a provider's reason) is kept as it came; the words make it one safe line.

One module per area, named as the engine's parts are: history, turn, tools, session, images, budget, recovery,
memory, mcp, compaction, gateways, routes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class NoticeFact:
    """The facts of one kind of notice. `kind` names it (stable: stored, printed by `--json`); `code` is the
    notice's code (the chat's label and colour group, `-p`'s filter), shared by the kinds of one area."""

    kind: ClassVar[str] = "notice"
    code: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


__all__ = ["NoticeFact"]
