"""A provider refusing an image in the conversation: the image is replaced by a stub, once (issue 37, item 12).

An image the provider cannot read (damaged data, a format it refuses) stays in the conversation, so
every later request fails with the same 400 and `-c` can never go on. When a 400 names an image and
the view holds images, they are replaced by a short text stub in a new view (the master log keeps the
originals), the user is told, and the request is sent again once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.model.messages import Image, Message, Text

IMAGE_WORDS_RE = re.compile(r"\bimage", re.I)
STUB = "[image removed: the provider could not read it (bulkhead replaced it to keep the session going)]"


def names_an_image(status: int | None, said: str) -> bool:
    """A 400 whose message is about an image (`Could not process image`, `image_parse_error`, …)."""
    return status == 400 and bool(IMAGE_WORDS_RE.search(said or ""))


def stub_images(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """The messages with every image part replaced by `STUB`, and how many were replaced."""
    out: list[Message] = []
    count = 0
    for message in messages:
        if not any(isinstance(part, Image) for part in message.parts):
            out.append(message)
            continue
        parts = [Text(STUB) if isinstance(part, Image) else part for part in message.parts]
        count += sum(isinstance(part, Image) for part in message.parts)
        out.append(message.derive(parts))
    return out, count
