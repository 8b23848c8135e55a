"""A content block in words: what the gateway refused, who, the ID for the network team, and only the
actions that help (find the part, withhold it, edit the prompt) — never /compact or max_payload, since
neither size nor history length is the problem."""

from __future__ import annotations

from app.engine.failure_record import Failure

FIND_HINT = "/blocked finds the part it refuses"
CLI_FIND_HINT = "/blocked (or `bulkhead probe --content --session {session}`) finds the part it refuses"


def content_action(failure: Failure) -> str:
    """What bulkhead does about a content block (the inspector's action line, `bulkhead classify`)."""
    return (
        "fail: no cap is learned and nothing is compacted (the gateway refused the content, not the size); "
        "find the refused part and withhold it, or edit the prompt"
    )


def content_block_message(failure: Failure, *, session_id: str | None = None, part: str | None = None) -> str:
    """The turn's error for a content block: reason, incident ID, the part when known, what to do."""
    incident = f" ({failure.incident_id}: quote it to your network team)" if failure.incident_id else ""
    where = f" The refused text is in {part}." if part else ""
    find = CLI_FIND_HINT.format(session=session_id) if session_id else FIND_HINT
    return (
        f"{failure.reason}{incident}.{where} No size limit was learned and nothing was cut. "
        f"{find} (it asks first: each probe sends conversation text to the gateway) and can withhold it "
        f"from the model so the conversation goes on; /rewind goes back to before it. If the prompt you just "
        f"sent holds the refused text, edit it and send again."
    )
