"""What teams use instead of a claim table: a Redis lock and a PostgreSQL advisory lock.

Measured on PostgreSQL runs, side by side with our store, for acquire and renew. Both are
faster because they keep less: no fencing epoch a stale holder's writes can be checked
against, and no durable record of who held what.
"""

from __future__ import annotations

import os
from typing import Any

from claims.protocol import ClaimTiming

from .micro_sides import ME, Side, psycopg_connection

# The Redis database of the comparison; WEFTBOARD_BENCH_REDIS_URL names another (its keys
# carry the run's pid and are dropped after, so a database others use is safe).
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
# Compare-and-renew: only the token that set the key may extend it.
_RENEW_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# Our own slice of the bigint advisory-lock key space (ASCII "WEFT" in the high half).
_ADVISORY_BASE = 0x5745_4654 << 32

LACKS = {
    "redis": (
        "Redis SET NX PX / Lua compare-and-renew lacks: a fencing epoch (a paused holder "
        "cannot be told from the current one), a durable record (memory only: lost on "
        "restart or failover), an event log"
    ),
    "advisory": (
        "pg_try_advisory_lock lacks: a fencing epoch, a durable record; the lock dies with "
        "its session (a dropped connection frees it, a hung one keeps it) and does not work "
        "through transaction pooling (PgBouncer); renewal is implicit in the session, so "
        '"renew" is a SELECT 1 keepalive'
    ),
}


class ServiceUnavailable(Exception):
    pass


class RedisSide(Side):
    """SET key token NX PX ttl to acquire; a Lua GET == token then PEXPIRE to renew."""

    name = "Redis SET NX PX / Lua"
    operations = ("acquire", "renew")

    def __init__(self, timing: ClaimTiming) -> None:
        super().__init__("ms-x")
        import redis

        self.prefix = f"weftboard:bench-micro:{os.getpid()}:"
        self.ttl_ms = timing.ttl_ms
        url = os.environ.get("WEFTBOARD_BENCH_REDIS_URL", "").strip() or DEFAULT_REDIS_URL
        self.client: Any = redis.Redis.from_url(url, socket_connect_timeout=2)
        try:
            self.client.ping()
        except redis.RedisError as error:
            raise ServiceUnavailable(f"{url}: {error}") from error
        self.renew_script = self.client.register_script(_RENEW_LUA)
        self._drop_keys()

    def op(self, op: str, workflow_id: str) -> bool:
        key, token = self.prefix + workflow_id, f"{ME}:{workflow_id}"
        if op == "acquire":
            return bool(self.client.set(key, token, nx=True, px=self.ttl_ms))
        return self.renew_script(keys=[key], args=[token, self.ttl_ms]) == 1

    def _drop_keys(self) -> None:
        """Only the keys under this run's prefix: the database may be shared."""
        keys = list(self.client.scan_iter(match=self.prefix + "*", count=1_000))
        for start in range(0, len(keys), 1_000):
            self.client.delete(*keys[start : start + 1_000])

    def close(self) -> None:
        try:
            self._drop_keys()
        finally:
            self.client.close()


class AdvisorySide(Side):
    """pg_try_advisory_lock(bigint) to acquire; renewal is the session staying alive."""

    name = "pg_try_advisory_lock"
    operations = ("acquire", "renew")

    def __init__(self) -> None:
        super().__init__("ms-l")
        self._keys = {wf: _ADVISORY_BASE + i for i, wf in enumerate(self.ids)}
        self._pg = psycopg_connection()
        self._cursor = self._pg.cursor()

    def op(self, op: str, workflow_id: str) -> bool:
        params: tuple[int, ...] = ()
        if op == "acquire":
            sql, params = "SELECT pg_try_advisory_lock(%s)", (self._keys[workflow_id],)
        else:
            sql = "SELECT 1"
        self._cursor.execute(sql, params, prepare=True)
        row = self._cursor.fetchone()
        return row is not None and bool(row[0])

    def close(self) -> None:
        try:
            self._cursor.execute("SELECT pg_advisory_unlock_all()")
        finally:
            self._pg.close()
