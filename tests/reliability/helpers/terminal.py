"""Run `python3 -m app …` as a user does: with or without a controlling terminal.

`run_bulkhead(args, stdin=…, answers=…)` starts the process in a session of its own. With
`answers` it gets a pseudo-terminal as its controlling terminal (what /dev/tty opens) while
stdin, stdout and stderr stay pipes — `printf … | bulkhead -p … > out` typed in a terminal.
Each answer is typed when the terminal shows the next `allow? [y/N]` question (or the question
about the workspace's rule files or `.mcp.json`, ending `[Enter] not now: `); everything
written to the terminal is returned as `tty`. Without `answers` there is no controlling
terminal at all (a cron job, CI). Reads wait on `select`; the deadline only guards a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

DEADLINE_S = 120.0
QUESTION = b"allow? [y/N"  # then ", or type why not …]"
TRUST_QUESTION = b"[Enter] not now: "  # the workspace's rule files and .mcp.json servers


@dataclass
class Run:
    returncode: int
    stdout: bytes
    stderr: bytes
    tty: bytes = b""
    questions: int = 0

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def run_bulkhead(
    args: list[str],
    *,
    stdin: bytes = b"",
    answers: list[str] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    environment = {**os.environ, **(env or {})}
    command = [sys.executable, "-m", "app", *args]
    if answers is None:
        done = subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            env=environment,
            cwd=cwd,
            start_new_session=True,
            timeout=DEADLINE_S,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    master, slave = os.openpty()

    def take_the_terminal() -> None:  # in the child, after setsid: the pty becomes its controlling terminal
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(slave,),
            preexec_fn=take_the_terminal,
        )
    finally:
        os.close(slave)
    outputs: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:
        outputs[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=(name, stream), daemon=True)
        for name, stream in (("stdout", child.stdout), ("stderr", child.stderr))
    ]
    for reader in readers:
        reader.start()
    assert child.stdin is not None
    child.stdin.write(stdin)
    child.stdin.close()
    tty = b""
    questions = 0
    pending = list(answers)
    try:
        while True:
            ready, _, _ = select.select([master], [], [], DEADLINE_S)
            if not ready:
                raise TimeoutError(f"bulkhead said nothing on the terminal for {DEADLINE_S:.0f} s: {tty!r}")
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every holder of the terminal closed it (the child ended)
                break
            if not chunk:
                break
            tty += chunk
            while tty.count(QUESTION) + tty.count(TRUST_QUESTION) > questions:
                questions += 1
                os.write(master, (pending.pop(0) if pending else "").encode() + b"\n")
    finally:
        os.close(master)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=DEADLINE_S)
        if child.poll() is None:
            child.kill()
            child.wait()
    for reader in readers:
        reader.join(DEADLINE_S)
    return Run(child.returncode, outputs.get("stdout", b""), outputs.get("stderr", b""), tty, questions)
