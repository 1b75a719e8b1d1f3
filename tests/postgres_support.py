"""A real PostgreSQL server for the tests: one throwaway cluster per test session, in a temporary
folder, on a free port of 127.0.0.1, stopped at the end even when tests fail.

Its role ``jc`` logs in over TCP with a password (SCRAM), so the tests that check the password is
never shown hold a real credential. ``initdb`` refuses root: as root, the server runs as the
``postgres`` user (Debian's package creates it). Missing binaries fail the tests, naming the package.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROLE = "jc"
PASSWORD = "Pw-9qz7Secret-Kx"  # unique text, so any leak of it is found by a plain substring search
INSTALL = ("the PostgreSQL tests need the server binaries initdb and pg_ctl: install Debian's `postgresql` package "
           "(`apt-get install postgresql`; `make test` does it as root or with password-less sudo), or put "
           "PostgreSQL's bin folder on PATH")


def _binaries() -> tuple[str, str]:
    """initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin (not on PATH)."""
    found = [(shutil.which("initdb"), shutil.which("pg_ctl"))]
    found += [(f"{d}/initdb", f"{d}/pg_ctl") for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for initdb, pg_ctl in found:
        if initdb and pg_ctl and os.access(initdb, os.X_OK) and os.access(pg_ctl, os.X_OK):
            return initdb, pg_ctl
    pytest.fail(INSTALL, pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PostgresServer:
    port: int
    folder: Path

    def url(self, database: str, password: bool = True) -> str:
        """A URL for the password-protected role (its password in the URL unless ``password=False``)."""
        user = f"{ROLE}:{PASSWORD}" if password else ROLE
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str = "postgres"):
        """A superuser connection over the unix socket (trust), for setting tests up."""
        import psycopg

        return psycopg.connect(host=str(self.folder), port=self.port, user="postgres", dbname=database,
                               autocommit=True)

    def new_database(self) -> str:
        """A fresh, empty database owned by the role; its name."""
        name = "t" + uuid.uuid4().hex[:12]
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name} OWNER {ROLE}")
        return name


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (initdb + start + stop take about a second)."""
    initdb, pg_ctl = _binaries()
    folder = Path(tempfile.mkdtemp(prefix="jaxcompare-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    run = lambda argv: subprocess.run(_as_server_user(argv), cwd=folder, capture_output=True, text=True, timeout=60)
    started = False
    try:
        made = run([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
        assert made.returncode == 0, f"initdb failed: {made.stderr.strip()}"
        # Password logins over TCP (the role under test), trust on the socket (the fixture's superuser).
        (data / "pg_hba.conf").write_text("local all postgres trust\n"
                                          "host all all 127.0.0.1/32 scram-sha-256\n")
        for _attempt in range(3):
            port = _free_port()
            # Durability is not under test here: fsync off makes CREATE DATABASE per test cheap.
            options = f"-k {folder} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
            start = run([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start"])
            if start.returncode == 0:
                started = True
                break
            time.sleep(0.1)  # the port was taken between probing and binding; try another
        assert started, f"pg_ctl start failed: {start.stderr.strip()} {(folder / 'server.log').read_text()[-500:]}"
        server = PostgresServer(port, folder)
        with server.admin() as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
        yield server
    finally:
        if started:
            run([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(postgres) -> str:
    """A URL (password inside) of a fresh, empty database on the session's server."""
    return postgres.url(postgres.new_database())
