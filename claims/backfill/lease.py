"""The fleet-wide runner leases, one per kind of job (the visibility backfill, bulk
operations): one runner of a kind works at a time.

A PostgreSQL session advisory lock, or on SQLite a lock file beside the database (a
thread lock for an in-memory one). The lease dies with its holder, so a crashed runner
never blocks a re-run.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import DatabaseError, connection

from claims.store.sql.backfill_lease import TRY_LOCK, UNLOCK

logger = logging.getLogger("weftboard.claims")

# pg_try_advisory_lock(int, int) keys: "weft" and "bfll" or "bulk".
_LEASE_KEYS = {"backfill": (0x77656674, 0x62666C6C), "bulk": (0x77656674, 0x62756C6B)}
_local_leases: dict[tuple[str, str], threading.Lock] = {}
_local_leases_guard = threading.Lock()


@contextmanager
def runner_lease(kind: str = "backfill") -> Iterator[bool]:
    """Hold the fleet-wide runner lease of ``kind`` for the block; yields False if taken.

    The lease dies with its holder (PostgreSQL ends a dead session's advisory locks,
    the OS drops a dead process's file lock), so a crashed runner never blocks a re-run.
    """
    if connection.vendor == "postgresql":
        with _advisory_lease(_LEASE_KEYS[kind]) as leased:
            yield leased
    else:
        with _file_lease(kind) as leased:
            yield leased


@contextmanager
def _advisory_lease(key: tuple[int, int]) -> Iterator[bool]:
    with connection.cursor() as cursor:
        cursor.execute(TRY_LOCK, key)
        leased = bool(cursor.fetchone()[0])
    try:
        yield leased
    finally:
        if leased:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(UNLOCK, key)
            except DatabaseError:
                logger.warning("runner lease: unlock failed; it ends with the session")


@contextmanager
def _file_lease(kind: str) -> Iterator[bool]:
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or name.startswith("file:"):
        # No file to lock beside: only this process can reach the database.
        with _local_leases_guard:
            lock = _local_leases.setdefault((name, kind), threading.Lock())
        leased = lock.acquire(blocking=False)
        try:
            yield leased
        finally:
            if leased:
                lock.release()
        return
    path = Path(name)
    with open(path.with_name(f"{path.name}.{kind}.lock"), "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            leased = False
        else:
            leased = True
        try:
            yield leased
        finally:
            if leased:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
