"""A full disk never destroys a file (issue 14, item 3).

`write_file`/`edit_file`, exports (`-o FILE`) and state.toml are written to a temporary file in
the same folder and renamed over the target: when the disk fills mid-write the original is
byte-for-byte what it was, the error says so, and no temporary file is left behind.

Three ways to make the write fail, from the most real to the most precise:
- a 64 KB tmpfs mounted for the test (needs root and `mount`; skipped with the reason otherwise);
- RLIMIT_FSIZE in a child process, so the kernel refuses the write call itself (EFBIG);
- `os.write` patched in `app.fsutil` to fail half-way (the helper's own clean-up).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from app import fsutil
from app.fsutil import WriteFailed, atomic_write
from app.tools.base import ToolContext
from app.tools.registry import run_tool

REPO = Path(__file__).resolve().parents[2]
LINES = 6000


def numbered_lines(count: int) -> str:
    return "".join(f"line {i:05d}: some source text that is long enough to matter\n" for i in range(count))


def mounted_tmpfs(mount_point: Path, size: str):
    """A tmpfs of our own (root only); the test is skipped, with the reason, where it cannot be made."""
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip(
            "mounting a tmpfs needs root; the RLIMIT_FSIZE and SQLite page-limit tests cover the same failure"
        )
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """64 KB: a file tool's write does not fit."""
    yield from mounted_tmpfs(tmp_path / "tiny", "64k")


@pytest.fixture
def small_disk(tmp_path: Path):
    """2 MB: room for a database, then filled up."""
    yield from mounted_tmpfs(tmp_path / "small", "2m")


def fill(folder: Path, leave_bytes: int) -> None:
    """Fill the filesystem of `folder` until about `leave_bytes` remain."""
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    if free > leave_bytes:
        with open(folder / "ballast", "wb") as handle:
            handle.write(b"\0" * (free - leave_bytes))


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)]


async def test_edit_file_on_a_full_disk_keeps_the_whole_original(tiny_disk: Path) -> None:
    source = tiny_disk / "big.py"
    original = numbered_lines(400)  # ~24 KB
    source.write_text(original)
    source.chmod(0o640)
    fill(tiny_disk, 8 * 1024)
    ctx = ToolContext(workspace=tiny_disk, session_folder=tiny_disk / ".session", result_max_chars=10_000_000)

    outcome = await run_tool(
        "edit_file",
        {
            "path": "big.py",
            "old_string": "some source text",
            "new_string": "some much longer replacement text, twice as wide",
            "replace_all": True,
        },
        ctx,
    )

    assert outcome.is_error
    assert "no space left" in outcome.content and "the original file is unchanged" in outcome.content
    assert source.read_text() == original  # not one line lost, not cut mid-line
    assert stat.S_IMODE(source.stat().st_mode) == 0o640
    assert leftovers(tiny_disk) == []


async def test_write_file_creating_a_file_on_a_full_disk_creates_nothing(tiny_disk: Path) -> None:
    fill(tiny_disk, 4 * 1024)
    ctx = ToolContext(workspace=tiny_disk, session_folder=tiny_disk / ".session", result_max_chars=10_000_000)

    outcome = await run_tool("write_file", {"path": "new.txt", "content": numbered_lines(500)}, ctx)

    assert outcome.is_error and "no file was created" in outcome.content
    assert not (tiny_disk / "new.txt").exists()
    assert leftovers(tiny_disk) == []


def test_export_to_a_full_disk_keeps_the_previous_export(tiny_disk: Path, tmp_path: Path, capsys) -> None:
    from app.cli import main
    from app.engine.session import Session
    from app.model.messages import Message
    from app.store import Store

    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "x" * 40_000, turn=1))
    store.close()
    target = tiny_disk / "export.md"
    target.write_text("the export of yesterday\n")
    fill(tiny_disk, 4 * 1024)

    code = main(["sessions", "export", session.id, "--format", "md", "-o", str(target)])

    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot write {target}" in err and "the original file is unchanged" in err
    assert target.read_text() == "the export of yesterday\n"
    assert leftovers(tiny_disk) == []


def test_state_toml_on_a_full_disk_keeps_what_was_learned(tiny_disk: Path) -> None:
    from app.state import State

    state = State(tiny_disk / "state.toml")
    state.learn_cap(
        "anthropic https://gw", 100_000, rejected_bytes=133_334, kind="payload_too_large", reason="413"
    )
    before = (tiny_disk / "state.toml").read_bytes()
    fill(tiny_disk, 0)

    with pytest.raises(OSError):
        state.set("notes", "n" * 64 * 1024)

    assert (tiny_disk / "state.toml").read_bytes() == before
    assert state.learned_cap("anthropic https://gw").cap_bytes == 100_000


CHILD = """
import asyncio, json, resource, signal, sys
from pathlib import Path
from app.tools.base import ToolContext
from app.tools.registry import run_tool
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)           # the write call fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
ws = Path(sys.argv[1])
ctx = ToolContext(workspace=ws, session_folder=ws / ".session", result_max_chars=10_000_000)
outcome = asyncio.run(run_tool(sys.argv[2], json.loads(sys.argv[3]), ctx))
print(json.dumps({"is_error": outcome.is_error, "content": outcome.content[:500]}))
"""


def run_limited(ws: Path, tool: str, args: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ws), tool, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_edit_file_refused_at_the_write_call_keeps_a_6000_line_file(tmp_path: Path) -> None:
    """The kernel refuses the write mid-file (RLIMIT_FSIZE): before the fix the file was cut to 16 KB."""
    ws = tmp_path / "ws"
    ws.mkdir()
    source = ws / "module.py"
    original = numbered_lines(LINES)  # ~370 KB, far above the 16 KB the child may write
    source.write_text(original)

    result = run_limited(
        ws,
        "edit_file",
        {"path": "module.py", "old_string": "line 03000:", "new_string": "line 03000 (edited):"},
    )

    assert result["is_error"], result
    assert "the original file is unchanged" in result["content"]
    assert source.read_text() == original
    assert leftovers(ws) == []


def test_write_file_refused_at_the_write_call_keeps_the_original(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("keep me\n")

    result = run_limited(ws, "write_file", {"path": "notes.txt", "content": "y" * 64 * 1024})

    assert result["is_error"] and "the original file is unchanged" in result["content"]
    assert (ws / "notes.txt").read_text() == "keep me\n"
    assert leftovers(ws) == []


# -- the helper itself -----------------------------------------------------------------------------
def test_a_write_failing_half_way_leaves_the_original_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "file.txt"
    target.write_text("original\n")
    real_write = os.write
    calls = []

    def failing_write(fd: int, data) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data[:10]))  # a short write first, as a filling disk does

    monkeypatch.setattr(fsutil.os, "write", failing_write)
    with pytest.raises(WriteFailed) as caught:
        atomic_write(target, "new content that will not fit\n" * 100)

    assert caught.value.errno == errno.ENOSPC
    assert (
        str(caught.value)
        == f"cannot write {target}: No space left on device — the original file is unchanged"
    )
    assert target.read_text() == "original\n"
    assert leftovers(tmp_path) == []


def test_keeps_the_mode_and_follows_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.sh"
    real.write_text("#!/bin/sh\necho old\n")
    real.chmod(0o751)
    link = tmp_path / "link.sh"
    link.symlink_to(real)

    atomic_write(link, "#!/bin/sh\necho new\n")

    assert link.is_symlink() and real.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o751
    fresh = atomic_write(tmp_path / "private", b"x", 0o600)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_concurrent_readers_see_the_old_or_the_new_file_never_a_mix(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    old, new = "a" * 200_000, "b" * 200_000
    target.write_text(old)

    async def main() -> set[str]:
        seen: set[str] = set()
        writer = asyncio.create_task(
            asyncio.to_thread(lambda: [atomic_write(target, t) for t in (new, old, new)])
        )
        while not writer.done():
            text = target.read_text()
            seen.add(text[:1] + text[-1:] + str(len(text)))
            await asyncio.sleep(0)
        await writer
        return seen

    assert asyncio.run(main()) <= {"aa200000", "bb200000"}


def test_the_error_names_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    with pytest.raises(WriteFailed, match="it is a directory"):
        atomic_write(folder, "x")


# -- the database: a full disk, damaged pages, a read-only home (issue 14, item 9) ---------------------------
def empty_config() -> Path:
    """An empty config.toml outside the (full or read-only) home: a BULKHEAD_CONFIG naming no file is an error."""
    path = Path(tempfile.mkdtemp(prefix="bulkhead-cfg-")) / "config.toml"
    path.touch()
    return path


def run_app(home: Path, *argv: str, config: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BULKHEAD_", "ANTHROPIC", "OPENAI"))}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "BULKHEAD_HOME": str(home),
            "BULKHEAD_CONFIG": str(config or empty_config()),
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "app", *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def make_session(home: Path, messages: int = 3, size: int = 200) -> str:
    from app.engine.session import Session
    from app.model.messages import Message
    from app.store import Store

    store = Store(home / "bulkhead.db")
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    for i in range(messages):
        session.append(Message.create("user", f"message {i} " + "x" * size, turn=i + 1))
    store.close()
    return session.id


def test_a_full_disk_during_a_write_is_one_clear_sentence(tmp_path: Path) -> None:
    from app.engine.session import Session
    from app.model.messages import Message
    from app.store import DiskFull, Store

    store = Store(tmp_path / "bulkhead.db")
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "kept", turn=1))
    pages = store.query("PRAGMA page_count")[0][0]
    store.query(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own SQLITE_FULL, at the write call

    with pytest.raises(DiskFull) as caught:
        session.append(Message.create("user", "y" * 200_000, turn=2))

    message = str(caught.value)
    assert message.startswith(f"the disk holding {tmp_path / 'bulkhead.db'} is full")
    assert "Nothing saved before is lost" in message and "Free some space" in message
    assert [m.text for m in Session.load(store, session.id).master] == ["kept"]


def test_a_full_disk_under_bulkhead_p_says_so_without_a_traceback(small_disk: Path) -> None:
    home = small_disk / "home"
    make_session(home)
    fill(small_disk, 0)

    done = run_app(home, "-p", "hello " * 4000)

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "sqlite3." not in done.stderr
    assert "is full" in done.stderr and "Free some space" in done.stderr


def test_damaged_database_pages_give_a_recovery_hint_not_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_session(home, messages=200, size=2000)
    database = home / "bulkhead.db"
    data = bytearray(database.read_bytes())
    page = 4096
    for start in range(page * 2, len(data) - page, page * 3):  # scribble over every third page
        data[start : start + page] = os.urandom(page)
    database.write_bytes(bytes(data))

    listing = run_app(home, "sessions", "list")
    opened = run_app(home, "-c", "-p", "hello")

    for done in (listing, opened):
        assert done.returncode in (1, 2), done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "is damaged" in done.stderr and ".recover" in done.stderr and "Do not delete it" in done.stderr


@pytest.fixture
def read_only_home(small_disk: Path) -> Path:
    home = small_disk / "home"
    make_session(home)
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(small_disk)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot remount the tmpfs read-only ({done.stderr.strip()})")
    return home


def test_a_read_only_home_says_read_only_and_still_shows_sessions(read_only_home: Path) -> None:
    listing = run_app(read_only_home, "sessions", "list")
    assert listing.returncode == 0, listing.stderr
    assert "msgs" in listing.stdout

    asked = run_app(read_only_home, "-p", "hello")

    assert asked.returncode == 1
    assert "is read-only" in asked.stderr and "The database itself is fine" in asked.stderr
    assert "Move it away" not in asked.stderr and "Traceback" not in asked.stderr


def test_resuming_on_a_read_only_home_opens_the_session_read_only(read_only_home: Path) -> None:
    code = (
        "from app.config import load_settings; from app.engine.bootstrap import open_engine; "
        "from app.store import Store; sid = Store().list_sessions()[0]['id']; "
        "engine, _, _ = open_engine(load_settings(), route_name='lab', resume=sid); "
        "print(engine.session.read_only, len(engine.session.master))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BULKHEAD_")}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "BULKHEAD_HOME": str(read_only_home),
            "BULKHEAD_CONFIG": str(empty_config()),
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "3"]
