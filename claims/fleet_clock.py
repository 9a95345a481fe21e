"""The fleet's time base: this process's monotonic clock corrected to the database's clock.

All engines judge expiry against the database's time, so clock skew between
hosts cannot make one engine think another's claim has expired early.
"""

from __future__ import annotations

import logging
import os
import threading

from django.db import connection

from claims.conf import claim_timing
from claims.protocol.errors import ClaimConfigError
from claims.protocol.offset_clock import OffsetClock
from claims.protocol.timing import ClaimTiming

logger = logging.getLogger(__name__)

# Shifts this process's protocol clock away from the database's, on purpose: the fault
# harness uses it to run engines whose clock is wrong by a known amount. Never set it
# in production.
SKEW_VARIABLE = "WEFTBOARD_FAULT_CLOCK_SKEW_MS"

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
            _clock = OffsetClock(skew_ms=injected_skew_ms())
            _clock.calibrate(database_now_ms)
        return _clock


def fleet_now() -> tuple[int, ClaimTiming]:
    """Now on the fleet's time base (the database clock) and the claim timing: what every
    read of claim state (pages, API, tasks) judges expiry with."""
    return fleet_clock()(), claim_timing()


def injected_skew_ms() -> int:
    """The deliberate clock error from WEFTBOARD_FAULT_CLOCK_SKEW_MS (0 when unset)."""
    raw = os.environ.get(SKEW_VARIABLE, "").strip()
    if not raw:
        return 0
    try:
        skew = int(raw)
    except ValueError:
        raise ClaimConfigError(
            f"{SKEW_VARIABLE} is a whole number of milliseconds, not {raw!r}"
        ) from None
    if skew:
        logger.warning("%s=%d: this process's clock is deliberately wrong", SKEW_VARIABLE, skew)
    return skew
