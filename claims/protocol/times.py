"""What an instant may be: one rule for every time an interface takes or the runtime writes.

A time is an instant from year 1 to year 9999 in UTC. Python's datetime, PostgreSQL's
timestamp and every formatter the pages use stop there: a backfill stored at
``10000-01-01T13:59:59Z`` (``9999-12-31T23:59:59-14:00`` as given) could be written but
never read back, and a wake-up time past it could be stored but never shown. The
millisecond columns hold far more (up to 2^53 - 1, ``constants.MAX_SAFE_INTEGER``), so
this bound is the tighter of the two.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .errors import InvalidInputError

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)

# 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, in milliseconds since 1970.
MIN_TIME_MS = -62_135_596_800_000
MAX_TIME_MS = 253_402_300_799_999
TIME_RANGE_TEXT = "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z"


def check_time_ms(value: object, *, what: str) -> int:
    """A whole number of milliseconds since 1970 naming an instant of years 1 to 9999 UTC."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} is a whole number of milliseconds since 1970")
    if not MIN_TIME_MS <= value <= MAX_TIME_MS:
        raise InvalidInputError(
            f"{what} must be a time {TIME_RANGE_TEXT} "
            f"({MIN_TIME_MS} to {MAX_TIME_MS} ms); got {value}"
        )
    return value


def datetime_ms(value: datetime, *, what: str) -> int:
    """Milliseconds since 1970 of an aware ``value`` (a naive one is read as UTC), checked by
    ``check_time_ms``: the offset is applied without leaving the datetime range, so
    ``9999-12-31T23:59:59-14:00`` is refused rather than overflowing."""
    offset = value.utcoffset() or timedelta(0)
    naive = value.replace(tzinfo=None)
    # (naive - 1970) - offset in integer milliseconds: no intermediate datetime that
    # could fall outside years 1 to 9999.
    local_ms = (naive - _UNIX_EPOCH.replace(tzinfo=None)) // _ONE_MS
    return check_time_ms(local_ms - offset // _ONE_MS, what=what)


def time_of_ms(ms: int) -> datetime:
    """The UTC datetime of ``ms``; ``ms`` must satisfy ``check_time_ms``."""
    return _UNIX_EPOCH + timedelta(milliseconds=check_time_ms(ms, what="a time"))
