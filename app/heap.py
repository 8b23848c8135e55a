"""Giving freed memory back to the system after a burst of work (opening a long session).

Opening a 10 MB session parses every message and measures the request once: tens of MB that are freed
right after, but glibc keeps freed heap pages for the process, so the resident size would stay as if
they were still in use (bench/resume.py: +40 MB instead of +22 MB for a 10 MB session). `release()` asks
glibc to return them (`malloc_trim`); elsewhere (macOS, musl) it does nothing.
"""

from __future__ import annotations

import functools


@functools.cache
def _malloc_trim():
    import ctypes  # only when a long session was opened: not on the start-up path

    try:
        # The process's own symbols (no `find_library`, which runs ldconfig): glibc has malloc_trim.
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def release() -> bool:
    """Return freed heap memory to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
