"""The fleet's time base: this process's monotonic clock corrected to the database's clock.

All engines judge expiry against the database's time, so clock skew between
hosts cannot make one engine think another's claim has expired early.
"""

from __future__ import annotations

import threading

from django.db import connection

from claims.protocol.clock import OffsetClock

_lock = threading.Lock()
_clock: OffsetClock | None = None


def database_now_ms() -> int:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
        else:
            # SQLite is a file on this host: its 'now' is this host's clock.
            cursor.execute("SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
        (now_ms,) = cursor.fetchone()
    return int(now_ms)


def fleet_clock() -> OffsetClock:
    """The process-wide clock, calibrated against the database on first use."""
    global _clock
    with _lock:
        if _clock is None:
            _clock = OffsetClock()
            _clock.calibrate(database_now_ms)
        return _clock
