"""Giving freed memory back to the system after a burst of work (opening a long session).

Opening a 10 MB session parses every message and measures the request once: tens of MB that are freed
right after, but glibc keeps freed heap pages for the process, so the resident size would stay as if
they were still in use (bench/resume.py: +40 MB instead of +22 MB for a 10 MB session). `release()` asks
glibc to return them (`malloc_trim`); elsewhere (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None


def release() -> bool:
    """Return freed heap memory to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
