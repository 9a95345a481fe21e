"""Instants as ISO 8601 UTC text, both ways: what the audit CSV writes next to each
millisecond column and what the pages' date fields accept and show
(``2026-12-03T09:30:00Z``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from claims.protocol.errors import InvalidInputError
from claims.protocol.times import datetime_ms, time_of_ms

# Date, then T, hours and minutes; seconds and a fraction optional; then Z, +00:00 or
# nothing (read as UTC: what a browser's datetime-local field sends).
_ISO_UTC = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?P<zone>Z|[+-]\d{2}:\d{2})?",
    re.ASCII,  # digits 0-9 only: "\d" would also match other scripts' digits
)
EXAMPLE = "2026-12-03T09:30:00Z"


def iso_utc(ms: int | None) -> str:
    """``2026-12-03T09:30:00.250Z`` for a millisecond timestamp; empty for None. A value
    outside years 1 to 9999 (a row written by another program) is shown as its number."""
    if ms is None:
        return ""
    try:
        moment = time_of_ms(ms)
    except InvalidInputError:
        return f"{ms} ms"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_utc_field(ms: int) -> str:
    """The same instant as a date field shows it: whole seconds unless a fraction matters."""
    text = iso_utc(ms)
    return text.replace(".000Z", "Z")


def parse_iso_utc(text: str) -> int:
    """Milliseconds since the epoch of an ISO 8601 UTC date and time.

    Raises ValueError saying what is accepted for anything else: another offset than
    UTC, a date without a time, a space for the T, a date that does not exist.
    """
    match = _ISO_UTC.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"an ISO 8601 UTC date and time like {EXAMPLE} is required")
    zone = match.group("zone")
    if zone not in (None, "Z", "+00:00", "-00:00"):
        raise ValueError(f"only UTC is accepted (Z or +00:00), not {zone}; like {EXAMPLE}")
    try:
        moment = datetime.fromisoformat(text.strip().removesuffix("Z"))
    except ValueError as error:
        raise ValueError(f"no such date and time ({error}); like {EXAMPLE}") from error
    # Four digits of year keep it within years 1 to 9999; the time rule says so anyway.
    try:
        return datetime_ms(moment.replace(tzinfo=UTC), what="the time")
    except InvalidInputError as error:
        raise ValueError(str(error)) from error
