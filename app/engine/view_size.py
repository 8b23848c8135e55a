"""The view's exact request size, kept with the session so that a resume can report it without measuring again.

    key = size_key(provider, system, tools, max_tokens, ids)    # everything the size is a function of
    session.set_flag(SIZE_FLAG, {"key": key, "bytes": predicted})
    stored_size(session.flags, key)                            # the bytes, or None when anything differs

Measuring a view translates every message of it for the route (a resumed 4,000-message session: ~27 ms, a
10 MB one: ~15 ms) before the session can say how big its next request is. The size is a pure function of
the request's envelope (model, system prompt, tools, max_tokens, the route's options — all in the body of
a request built with no messages), of the messages (immutable: an id names its content), and of the
adapter's code. The key hashes all three, so a figure is only ever reused for exactly the view it was
measured for; anything else — another route, a changed prompt or tool, a crash after the last kept size,
another bulkhead version — measures as before.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.providers.base import dumps

if TYPE_CHECKING:
    from app.model.tools import ToolSpec
    from app.providers.base import Provider

SIZE_FLAG = "view_bytes"  # the session flag: {"key": size_key(...), "bytes": exact body bytes}
_SHARED_MODULES = ("app.providers.base", "app.providers.wire", "app.model.messages")


@functools.cache
def _code_digest(provider_class: type[Provider]) -> bytes:
    """bulkhead's version and the source of the code that turns messages into this adapter's bodies."""
    from app import __version__

    digest = hashlib.sha256(__version__.encode())
    modules = {c.__module__ for c in provider_class.__mro__ if c.__module__.startswith("app.")}
    for name in sorted(modules.union(_SHARED_MODULES)):
        digest.update(name.encode())
        path = getattr(sys.modules.get(name), "__file__", None)
        try:
            with open(path or "", "rb") as source:
                digest.update(source.read())
        except OSError:  # no source to read (a frozen build): its version stands for it
            pass
    return digest.digest()


def size_key(
    provider: Provider, system: str, tools: Sequence[ToolSpec], max_tokens: int, message_ids: Sequence[str]
) -> str:
    """What a view's size depends on, as one hash (see the module's doc); the view by its messages' ids
    (a session opened from its end knows them before its messages are decoded)."""
    envelope = provider.build((), system, tools, max_tokens=max_tokens)
    digest = hashlib.sha256(_code_digest(type(provider)))
    digest.update(f"{provider.kind}\0".encode() + dumps(envelope.body) + b"\0")
    digest.update("\0".join(message_ids).encode())
    return digest.hexdigest()


def stored_size(flags: Mapping[str, Any], key: str) -> int | None:
    """The size kept under `key`, or None (none kept, kept for another view, or not a size)."""
    kept = flags.get(SIZE_FLAG)
    if not isinstance(kept, dict) or kept.get("key") != key:
        return None
    size = kept.get("bytes")
    return size if type(size) is int and size >= 0 else None
