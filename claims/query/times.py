"""Times in a query: ISO 8601 UTC text both ways, and ``now ± duration``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from claims.protocol.errors import InvalidInputError
from claims.protocol.times import datetime_ms, time_of_ms

from .nodes import AbsoluteTime, RelativeTime

EXAMPLE = "2026-12-04T10:00:00Z"
UNIT_MS: dict[str, int] = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
# Ten years either way: far enough for any question about claims, near enough that
# now ± offset stays a time every database and formatter can hold.
MAX_OFFSET_MS = 3650 * UNIT_MS["d"]

# Date, T, hours and minutes; seconds and a fraction optional; Z or +00:00 or nothing
# (read as UTC), the same text the pages' date fields take.
_ISO_UTC = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?P<zone>Z|[+-]\d{2}:\d{2})?",
    re.ASCII,
)
_DURATION = re.compile(r"(?P<amount>\d+)(?P<unit>ms|s|m|h|d)", re.ASCII)


def parse_instant(text: str) -> AbsoluteTime:
    """The instant named by ISO 8601 UTC ``text``; ValueError saying what is accepted."""
    match = _ISO_UTC.fullmatch(text)
    if match is None:
        raise ValueError(f"a time is ISO 8601 UTC like {EXAMPLE}, or now - 10m")
    zone = match.group("zone")
    if zone not in (None, "Z", "+00:00", "-00:00"):
        raise ValueError(f"a time is in UTC (Z or +00:00), not {zone}")
    try:
        moment = datetime.fromisoformat(text.removesuffix("Z"))
        return AbsoluteTime(datetime_ms(moment.replace(tzinfo=UTC), what="a time"))
    except (ValueError, InvalidInputError) as error:
        raise ValueError(f"no such date and time: {error}") from error


def format_instant(instant: AbsoluteTime) -> str:
    """``2026-12-04T10:00:00Z``, with milliseconds only when there are some."""
    text = time_of_ms(instant.epoch_ms).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z").replace(".000Z", "Z")


def parse_offset(sign: str, duration: str) -> RelativeTime:
    """``now`` moved by ``duration`` (``10m``) forwards (``+``) or backwards (``-``)."""
    match = _DURATION.fullmatch(duration)
    if match is None:
        raise ValueError(f"a duration is a whole number and a unit (ms s m h d), not {duration}")
    offset_ms = int(match.group("amount")) * UNIT_MS[match.group("unit")]
    if offset_ms > MAX_OFFSET_MS:
        raise ValueError(f"a relative time reaches at most {MAX_OFFSET_MS // UNIT_MS['d']}d")
    return RelativeTime(-offset_ms if sign == "-" else offset_ms)


def format_relative(time: RelativeTime) -> str:
    """``now``, or ``now - 10m`` in the largest unit that says the offset exactly."""
    if time.offset_ms == 0:
        return "now"
    size = abs(time.offset_ms)
    unit = next(name for name, ms in UNIT_MS.items() if size % ms == 0)
    sign = "-" if time.offset_ms < 0 else "+"
    return f"now {sign} {size // UNIT_MS[unit]}{unit}"


def resolve(time: AbsoluteTime | RelativeTime, now_ms: int) -> int:
    """Milliseconds since 1970 of ``time``, relative times counted from ``now_ms``."""
    if isinstance(time, RelativeTime):
        return now_ms + time.offset_ms
    return time.epoch_ms
