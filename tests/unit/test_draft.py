"""The append-only draft: O(n) bytes for a long answer, read back exactly, secrets never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.draft import DRAFT_FLUSH_CHARS, DraftWriter, leftover_drafts
from app.redact import REDACTED, register_secret


def wchar() -> int:
    """Bytes this process has written through write(2) and friends (/proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def stream(writer: DraftWriter, text: str, delta: int = 16) -> list[str]:
    parts: list[str] = []
    chars = 0
    for i in range(0, len(text), delta):
        parts.append(text[i : i + delta])
        chars += len(parts[-1])
        writer.update(parts, chars)
    return parts


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io to count written bytes")
def test_a_200000_character_answer_writes_about_its_own_size(tmp_path):
    writer = DraftWriter(tmp_path)
    writer.begin()
    text = "".join(f"line {i}: the answer goes on — ✓\n" for i in range(6_000))[:200_000]
    before = wchar()
    stream(writer, text)
    written = wchar() - before
    size = len(text.encode())
    # Rewriting the whole answer every 2,000 characters wrote ~50× its size; appending writes it once.
    assert written <= size * 1.2, f"{written:,} bytes written for a {size:,}-byte answer"
    assert writer.bytes_written <= size
    on_disk = writer.path.read_text(encoding="utf-8")
    assert text.startswith(on_disk)
    assert len(text) - len(on_disk) < DRAFT_FLUSH_CHARS  # at most the unflushed tail is missing


def test_the_draft_reads_back_exactly_what_streamed_and_is_found_after_a_crash(tmp_path):
    writer = DraftWriter(tmp_path)
    message_id = writer.begin()
    text = "ünïcødé ✓ " * 1_000
    stream(writer, text, delta=7)
    found = leftover_drafts(tmp_path)
    assert [m for m, _ in found] == [message_id]
    assert text.startswith(found[0][1].read_text(encoding="utf-8"))
    assert (found[0][1].stat().st_mode & 0o777) == 0o600
    writer.clear()
    assert leftover_drafts(tmp_path) == []


def test_a_known_secret_cut_by_a_flush_boundary_is_still_redacted(tmp_path):
    secret = "sk-draft-test-" + "x" * 30
    register_secret(secret, "test key")
    writer = DraftWriter(tmp_path)
    writer.begin()
    # The secret straddles every plausible flush point.
    text = "".join("a" * (DRAFT_FLUSH_CHARS - 10) + secret for _ in range(5))
    stream(writer, text, delta=13)
    on_disk = writer.path.read_text(encoding="utf-8")
    assert secret[:10] not in on_disk.replace(REDACTED, "")
    assert on_disk.count(REDACTED) >= 3
