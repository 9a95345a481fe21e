"""A PostgreSQL server of the benchmark's own, for the parts that need what the shared one
does not have: ``pg_stat_statements`` (a preloaded library: the database's own time per
statement) and room for fifty engines' connections at one tick.

The server is the machine's own PostgreSQL binaries (``initdb``, ``pg_ctl``) on a free port
of 127.0.0.1, its data in a temporary directory, with the settings of the shared server that
change what a statement costs (shared_buffers, fsync, autovacuum), started before the part
and removed after it. Django's default connection points at it for the duration, on a
database migrated from scratch.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.db import connection

MAX_CONNECTIONS = 300
# What the shared server sets that changes what a statement costs; read from it at start.
COPIED_SETTINGS = ("shared_buffers", "fsync", "autovacuum", "synchronous_commit", "work_mem")


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL's server binaries are not installed (initdb)")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres(command: list[str]) -> list[str]:
    # The server refuses to run as root; the cluster's own user runs it.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _shared_settings() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
            [list(COPIED_SETTINGS)],
        )
        return dict(cursor.fetchall())


@contextmanager
def private_server() -> Iterator[dict[str, Any]]:
    """Start the server; yield Django's default settings pointed at a migrated database on
    it; stop and remove it on leaving (the connection points back where it was)."""
    bindir = _bindir()
    settings = _shared_settings()
    workdir = Path(tempfile.mkdtemp(prefix="weftboard-postgres-"))
    data = workdir / "data"
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres")
    subprocess.run(
        _as_postgres(
            [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-N"]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = _free_port()
    options = {
        **settings,
        "port": str(port),
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": str(workdir),
        "max_connections": str(MAX_CONNECTIONS),
        "shared_preload_libraries": "pg_stat_statements",
        "pg_stat_statements.track": "all",
    }
    with open(data / "postgresql.auto.conf", "a") as conf:
        for name, value in options.items():
            conf.write(f"{name} = '{value}'\n")
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(workdir / "server.log")]
    subprocess.run(_as_postgres([*pg_ctl, "-w", "start"]), check=True, stdout=subprocess.DEVNULL)
    saved = dict(connection.settings_dict)
    try:
        connection.close()
        connection.settings_dict.update(
            {"HOST": "127.0.0.1", "PORT": str(port), "USER": "postgres", "NAME": "postgres"}
        )
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(saved['NAME'])}")
        connection.close()
        connection.settings_dict["NAME"] = saved["NAME"]
        with connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION pg_stat_statements")
        call_command("migrate", verbosity=0, interactive=False)
        yield connection.settings_dict
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        subprocess.run(
            _as_postgres([*pg_ctl, "-m", "immediate", "stop"]),
            check=False,
            stdout=subprocess.DEVNULL,
        )
        shutil.rmtree(workdir, ignore_errors=True)
