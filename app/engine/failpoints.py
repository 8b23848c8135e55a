"""Named crash points for the reliability tests: `BULKHEAD_FAILPOINTS=memory.queued` kills the process there.

    reached("memory.queued")      # a no-op unless BULKHEAD_FAILPOINTS names it: then SIGKILL, at once

A test that must crash a real `bulkhead -p` between two durable writes (the memory queue and the view commit) sets
the variable; nothing else reads it. SIGKILL, not an exception: no `finally`, no flush — exactly a crash.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "BULKHEAD_FAILPOINTS"


def reached(name: str) -> None:
    wanted = os.environ.get(VARIABLE)
    if wanted and name in (part.strip() for part in wanted.split(",")):
        os.kill(os.getpid(), signal.SIGKILL)
