"""Running git on a workspace bulkhead does not trust: nothing the repository configures may execute.

A repository's `.git/config` can name programs git runs on its own — `core.fsmonitor` runs on
every index read, hooks, pagers, external diff and text-conversion drivers — so an auto-approved
read (grep's fallback asks `git ls-files` what is ignored) would run code the repository chose.
`git_command` neutralises each of those with `-c` (command-line config wins over the repository's),
and `git_env` drops every `GIT_*` variable of the parent (which could point git at another
repository, index or config) and keeps git from taking optional locks or prompting.

    done = run_git(root, "ls-files", "-z", timeout=10)     # None: no git, too slow, or it failed to start

Every git call in bulkhead goes through `run_git` (a test fails on a raw one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

# Config keys whose value is a program git may run, set to something inert.
NEUTRAL_CONFIG = (
    "core.fsmonitor=false",  # the hook runs on index reads: the attack this module exists for
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=true",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",  # no fetch of any kind
)


def git_command(git: str, *args: str) -> list[str]:
    """`git --no-pager --no-optional-locks -c … ARGS`: git that runs nothing the repository configured."""
    command = [git, "--no-pager", "--no-optional-locks"]
    for setting in NEUTRAL_CONFIG:
        command += ["-c", setting]
    return command + list(args)


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without `GIT_*` variables, never prompting, never reading the system config."""
    env = {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if not name.startswith("GIT_")
    }
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PAGER": "cat",
            "LC_ALL": "C",
        }
    )
    return env


def run_git(root: str | Path, *args: str, timeout: float) -> subprocess.CompletedProcess[bytes] | None:
    """`git -C ROOT ARGS` with nothing the repository configured allowed to run, no stdin, output captured;
    None when git is not installed, did not start, or took longer than `timeout` seconds."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run(
            git_command(git, "-C", str(root), *args),
            capture_output=True,
            timeout=timeout,
            check=False,
            env=git_env(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
