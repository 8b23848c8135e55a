"""`bulkhead -p` as a user runs it: a real process, nothing configured, the embedded lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _run(*args: str, stdin: str | None = None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_fresh_machine_hello_uses_the_lab_and_says_so():
    done = _run("-p", "hello")

    assert done.returncode == 0, done.stderr
    assert "Lab model" in done.stdout and "hello" in done.stdout
    assert "built-in lab model" in done.stderr
    assert "Traceback" not in done.stderr


def test_json_stream_ends_with_the_result_and_piped_stdin_is_appended():
    done = _run("-p", "summarise this", "--json", stdin="a line from a pipe\n")

    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "notice" and "request" in types and types[-1] == "result"
    result = events[-1]
    assert "a line from a pipe" in result["text"] and result["session_id"].startswith("s_")
    request = next(e for e in events if e["type"] == "request")
    assert {"bytes", "status", "kind"} <= request.keys()


def test_continue_resumes_the_latest_session():
    first = _run("-p", "remember the word pineapple", "--json")
    session = json.loads(first.stdout.splitlines()[-1])["session_id"]

    second = _run("-c", "-p", "what now?", "--json")

    result = json.loads(second.stdout.splitlines()[-1])
    assert result["session_id"] == session
    assert "turn 2" in result["text"]


def test_a_broken_config_names_the_file_and_line(tmp_path):
    config = tmp_path / "broken.toml"
    config.write_text('default_route = "x"\nmax_payload = "5XB"\n')

    done = _run("-p", "hi", env_extra={"BULKHEAD_CONFIG": str(config)})

    assert done.returncode == 2
    assert f"{config}:2" in done.stderr and "5XB" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_failed_turn_says_how_to_pick_the_session_up(lab, tmp_path):
    lab.configure(faults="500:1")
    config = tmp_path / "config.toml"
    config.write_text(f'default_route = "gw"\n[routes.gw]\nprovider = "lab"\nbase_url = "{lab.url}"\n')

    done = _run(
        "-p",
        "hi",
        env_extra={
            "BULKHEAD_CONFIG": str(config),
            "BULKHEAD_RETRY_MAX_ATTEMPTS": "1",
            "BULKHEAD_RETRY_BASE_DELAY": "0.01",
        },
    )

    assert done.returncode == 1 and done.stdout == ""
    assert "still failing after 1 retry: the provider or gateway keeps failing" in done.stderr
    resume = done.stderr.splitlines()[-1]
    assert resume.strip().startswith("the session is kept: `bulkhead --resume s_")
    assert "Traceback" not in done.stderr
