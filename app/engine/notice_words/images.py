"""The words of the image notices (facts in app.model.notice_facts.images)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.images import (
    ImageAttached,
    ImageDenied,
    ImageNotApproved,
    ImagesNotTaken,
    ImageUnreadable,
)
from app.sizes import format_size
from app.textsafe import display_line

NO_TERMINAL = (
    " — there is no terminal to ask. Run bulkhead in a terminal to be asked, pass --yes, "
    "or copy the file into the workspace"
)


@describe.register
def _not_taken(fact: ImagesNotTaken) -> Description:
    return Description(
        f"not attached: {', '.join(display_line(image) for image in fact.images)} — route "
        f"{fact.route} does not take images ({display_line(fact.why_not)})",
        level="warn",
        code=fact.code,
    )


@describe.register
def _denied(fact: ImageDenied) -> Description:
    return Description(
        f"not attached: {display_line(fact.image)} — {display_line(fact.reason)}",
        level="warn",
        code=fact.code,
    )


@describe.register
def _not_approved(fact: ImageNotApproved) -> Description:
    if fact.ask_rule is None:
        why = f"{fact.image} is outside the workspace ({fact.path})"
    else:
        why = f"{fact.image}: {fact.ask_rule}"
    advice = "" if fact.could_ask else NO_TERMINAL
    return Description(f"{display_line(why)}: not attached{advice}", level="warn", code=fact.code)


@describe.register
def _unreadable(fact: ImageUnreadable) -> Description:
    return Description(display_line(fact.problem), level="warn", code=fact.code)


@describe.register
def _attached(fact: ImageAttached) -> Description:
    return Description(
        f"attached {display_line(fact.image)} as an image ({fact.media_type}, "
        f"{format_size(fact.file_bytes)}; {format_size(fact.request_bytes)} as base64 in the request)",
        code=fact.code,
    )


__all__ = ["NO_TERMINAL"]
