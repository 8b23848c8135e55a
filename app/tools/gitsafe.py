"""Running git on a workspace bulkhead does not trust: nothing the repository configures may execute.

A repository's `.git/config` can name programs git runs on its own — `core.fsmonitor` runs on
every index read, hooks, pagers, external diff and text-conversion drivers — so an auto-approved
read (grep's fallback asks `git ls-files` what is ignored) would run code the repository chose.
`git_command` neutralises each of those with `-c` (command-line config wins over the repository's),
and `git_env` drops every `GIT_*` variable of the parent (which could point git at another
repository, index or config) and keeps git from taking optional locks or prompting.

    subprocess.run(git_command(git, "-C", root, "ls-files", …), env=git_env(), …)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

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
