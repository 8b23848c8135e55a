"""A long session opened from its end: its older messages (the head) decoded after the session is on screen.

    later = plan_head_later(store, session_id)   # None: decode the whole log now
    later.tail                                   # the last messages, decoded (from a prompt of the user's)
    later.start                                  # master positions [0, start) wait (`Session.complete`)

Resuming a session of thousands of messages spent most of what it cost over an empty one decoding them
(~10 µs a message: rows, JSON, message objects), though the screen shows the last few dozen and the engine's
start needs only counts and ids. A session whose master log holds `HEAD_LATER_FROM` messages or more, and
whose active view ends with its last `TAIL_MESSAGES` (an uncompacted log, or one with that many messages
since its last compaction), opens with that tail decoded; `Session.complete()` decodes the rest — the TUI
does in a thread once the session is drawn, and anything that reads the whole log or the view
(`Session.master`, `Session.views`) does first. A compacted session's short view, a read-only or forked
session and the command line decode everything at once, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.model.messages import Message
from app.store import Store

HEAD_LATER_FROM = 500  # master messages from which a session's head is decoded after it is on screen
TAIL_MESSAGES = 200  # the last messages decoded at once (back to a prompt): the screen and its window


@dataclass(frozen=True, slots=True)
class HeadLater:
    """What a session opened from its end knows before its head is decoded."""

    start: int  # master positions [0, start) are not decoded yet
    tail: list[Message]  # master[start:], decoded; it starts with a prompt of the user's
    ids: list[str]  # every master message's id, in order
    view_id: str  # the active view's
    view_ids: list[str]  # the active view's message ids, in order (it ends with the tail)
    views: int  # views on the stack, the active one included


def plan_head_later(store: Store, session_id: str) -> HeadLater | None:
    """The tail decoded and what the rest is, or None when the whole log is better decoded now (short,
    a view that does not end with the last `TAIL_MESSAGES`, no prompt of the user's among them)."""
    ids = store.master_ids(session_id)
    if len(ids) < max(HEAD_LATER_FROM, TAIL_MESSAGES + 1):
        return None
    index = store.view_index(session_id)
    if index is None:
        return None
    view_id, view_ids, views = index
    first = len(ids) - TAIL_MESSAGES
    if view_ids[-TAIL_MESSAGES:] != ids[first:]:  # e.g. a short view since a compaction
        return None  # (checked on the ids: such a session decodes it all, and nothing twice)
    decoded = store.load_master(session_id, first)
    if [m.id for m in decoded] != ids[first:]:  # written meanwhile: decode it all, as before
        return None
    # From a prompt: a tool call and its result are never split between the tail and the head.
    prompt = next((i for i, m in enumerate(decoded) if m.role == "user" and m.meta.origin == "user"), None)
    if prompt is None:
        return None
    return HeadLater(first + prompt, decoded[prompt:], ids, view_id, view_ids, views)
