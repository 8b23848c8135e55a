"""A real forward proxy for the tests: Squid (Debian's `squid`), started in a temp folder on a free port.

`start_squid(tmp, rules)` writes a squid.conf whose `http_access` lines are `rules` (plus, with
`credentials`, a basic-auth helper over an htpasswd file), starts `squid -N` and waits until it listens.
Squid and its helpers drop their privileges to the `proxy` user when started as root, so its folder is one of
its own under the system temp folder (pytest's are private to their owner), removed again by `stop()`.
A missing squid is a skip that names the package (`.ci/run` installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engine.real_gateways import Gateway, _start, binary, free_port

HELPER = "/usr/lib/squid/basic_ncsa_auth"


@dataclass
class Squid(Gateway):
    folder: Path | None = None

    def stop(self) -> None:
        super().stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_squid(rules: str = "http_access allow all", credentials: str | None = None) -> Squid:
    exe = binary("squid", "/usr/sbin/squid", package="squid")
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="bulkhead-squid-"))
    os.chmod(tmp, 0o777)  # squid and its helpers run as `proxy` once started by root
    auth = ""
    if credentials is not None:
        if not os.access(HELPER, os.X_OK) or shutil.which("openssl") is None:
            pytest.skip(
                f"Squid's basic_ncsa_auth or openssl is missing (install squid and openssl) for {HELPER}"
            )
        user, password = credentials.split(":", 1)
        hashed = subprocess.run(
            ["openssl", "passwd", "-1", password], capture_output=True, text=True, check=True
        ).stdout.strip()
        passwd = tmp / "passwd"
        passwd.write_text(f"{user}:{hashed}\n", encoding="utf-8")
        os.chmod(passwd, 0o644)
        auth = (
            f"auth_param basic program {HELPER} {passwd}\n"
            "auth_param basic realm bulkhead-test\n"
            "acl authenticated proxy_auth REQUIRED\n"
            "http_access deny !authenticated\n"
        )
    conf = tmp / "squid.conf"
    conf.write_text(
        f"""http_port 127.0.0.1:{port}
pid_filename {tmp}/squid.pid
cache_log {tmp}/cache.log
access_log none
cache_store_log none
cache deny all
cache_mem 4 MB
coredump_dir {tmp}
pinger_enable off
shutdown_lifetime 0 seconds
netdb_filename none
dns_timeout 5 seconds
connect_timeout 5 seconds
{auth}{rules}
""",
        encoding="utf-8",
    )
    try:
        started = _start("squid", [exe, "-N", "-f", str(conf)], port)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Squid(started.name, started.port, started.process, tmp)
