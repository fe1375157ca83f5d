"""A PostgreSQL server a test owns: its own cluster on a spare port, to stop and start at will."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.services import missing

SERVER_USER = "postgres"  # initdb refuses to run as root: root runs it as this user


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


def _spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """One cluster: `url` names its `escalate` database; stop() and start() keep the data."""

    bin_dir: Path
    data_dir: Path
    port: int
    as_root: bool

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{SERVER_USER}@127.0.0.1:{self.port}/escalate"

    def tool(self, tool: str, *args: str, check: bool = True) -> None:
        command = [str(self.bin_dir / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        subprocess.run(command, check=check, capture_output=True, timeout=60)

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data_dir} -c fsync=off"
            " -c max_connections=60"
        )
        log = str(self.data_dir / "server.log")
        self.tool("pg_ctl", "-D", str(self.data_dir), "-l", log, "-o", options, "-w", "start")

    def stop(self) -> None:
        """A fast shutdown: clients are disconnected, new connections refused."""
        self.tool("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")


@contextmanager
def own_postgres() -> Iterator[PostgresServer]:
    """initdb into a fresh folder, start on a spare port, create `escalate`; removed after."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        missing("PostgreSQL server binaries (pg_ctl, initdb) are not installed")
    as_root = os.geteuid() == 0
    # Under /tmp itself: the server user must reach it, and pytest's tmp folders are root's.
    data_dir = Path(tempfile.mkdtemp(prefix="escalate-pg-"))
    if as_root:
        shutil.chown(data_dir, SERVER_USER, SERVER_USER)
    server = PostgresServer(bin_dir, data_dir, _spare_port(), as_root)
    try:
        server.tool("initdb", "-D", str(data_dir), "-U", SERVER_USER, "-A", "trust", "-E", "UTF8")
        server.start()
        server.tool(
            "createdb", "-h", "127.0.0.1", "-p", str(server.port), "-U", SERVER_USER, "escalate"
        )
        yield server
    finally:
        server.tool("pg_ctl", "-D", str(data_dir), "-m", "immediate", "stop", check=False)
        shutil.rmtree(data_dir, ignore_errors=True)
