"""The backfill runner's lease: a PostgreSQL session advisory lock (SQLite uses a lock file,
``claims.backfill.lease``). No table; PostgreSQL only, so plain statements."""

from __future__ import annotations

# Both take the lease key as two ints.
TRY_LOCK = "SELECT pg_try_advisory_lock(%s::int, %s::int)"
UNLOCK = "SELECT pg_advisory_unlock(%s::int, %s::int)"
