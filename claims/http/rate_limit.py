"""Requests per user in a sliding window, counted in the shared cache.

A request is admitted when fewer than ``limit`` requests were admitted in the window of
``seconds`` before it, so no window of that length, wherever it starts, holds more than
the limit. (A fixed window admits twice the limit across its boundary; a token bucket a
full bucket plus a window's refill.) The cache keeps, per key, the times of the requests
admitted within the last window: at most ``limit`` of them.

On Redis one script prunes, counts and records atomically on the server, by the server's
clock, so every web process counts against one limit however many requests arrive at
once. With any other cache (the embedded default's memory, one web process) a lock in
this process makes the same steps atomic.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache

RATE_UNITS = {
    **dict.fromkeys(("s", "sec", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hour", "hours"), 3_600),
    **dict.fromkeys(("d", "day", "days"), 86_400),
}


@dataclass(frozen=True)
class Rate:
    limit: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        """ "60/min" -> 60 requests per 60 s; the unit is s, min, h or d."""
        count, _, unit = (part.strip() for part in text.partition("/"))
        seconds = RATE_UNITS.get(unit.lower())
        if not (count.isascii() and count.isdigit()) or int(count) < 1 or seconds is None:
            raise ValueError(
                f"a rate is a whole number per s, min, h or d, like 60/min; not {text!r}"
            )
        return cls(int(count), seconds)


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    # When refused: seconds until the oldest request in the window leaves it.
    wait_s: float | None = None


ADMITTED = Verdict(admitted=True)

# KEYS[1] the log of admission times (a sorted set, scores in ms); ARGV the limit, the
# window in ms and a member unique to this request. Returns {1, 0} when admitted, else
# {0, ms until the oldest admission leaves the window}. An admission exactly one window
# old still counts, so two admissions ``limit`` apart are always more than a window apart.
_SLIDING_WINDOW_LUA = """
-- Before Redis 5 a script reading TIME may write only once it replicates its effects.
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now_ms - window_ms))
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now_ms, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window_ms + 1000)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window_ms + 1 - now_ms}
"""

_in_process = threading.Lock()


def admit(key: str, rate: Rate) -> Verdict:
    """Admit one request under ``key`` at ``rate``, recording it if admitted. Raises what
    the cache raises when it does not answer: the caller decides what that means."""
    full_key = f"weftboard:rate:{key}"
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        return _admit_on_redis(backend, full_key, rate)
    return _admit_in_process(backend, full_key, rate)


def _admit_on_redis(redis_cache: RedisCache, key: str, rate: Rate) -> Verdict:
    stored_key = redis_cache.make_and_validate_key(key)
    # Django's Redis client (not in its type stubs) hands out the server's connection.
    client = redis_cache._cache.get_client(stored_key, write=True)  # type: ignore[attr-defined]
    script = client.register_script(_SLIDING_WINDOW_LUA)
    admitted, wait_ms = script(
        keys=[stored_key], args=[rate.limit, rate.seconds * 1000, uuid.uuid4().hex]
    )
    return ADMITTED if admitted else Verdict(admitted=False, wait_s=int(wait_ms) / 1000)


def _admit_in_process(backend: BaseCache, key: str, rate: Rate) -> Verdict:
    window_ms = rate.seconds * 1000
    with _in_process:
        now_ms = time.time() * 1000
        times = [at for at in backend.get(key, []) if at >= now_ms - window_ms]
        if len(times) >= rate.limit:
            return Verdict(admitted=False, wait_s=(times[0] + window_ms + 1 - now_ms) / 1000)
        backend.set(key, [*times, now_ms], timeout=rate.seconds + 1)
        return ADMITTED
