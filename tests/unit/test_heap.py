"""`app.heap.release` gives freed heap memory back to the system (glibc), as resuming a long session needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app import heap

CHILD = """
import sys
from app import heap

def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

blocks = [bytearray(2000) for _ in range(40_000)]  # ~80 MB from malloc's heap (above pymalloc's 512 B)
pin = bytearray(2000)  # keeps the heap's top in use, so freeing the rest cannot shrink it by itself
peak = rss_kb()
del blocks
freed = rss_kb()
heap.release()
print(peak, freed, rss_kb())
"""


def test_release_returns_freed_heap_pages_to_the_system():
    if not heap.release():
        pytest.skip("not glibc: malloc_trim is not there (release does nothing, by design)")
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout
    peak, freed, released = map(int, out.split())
    assert freed > peak - 20_000  # freed, but still resident: glibc kept the pages
    assert released < freed - 50_000  # released: most of the 80 MB went back
