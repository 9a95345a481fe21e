"""Instants as ISO 8601 UTC text, both ways: what the audit CSV writes next to each
millisecond column and what the pages' date fields accept and show
(``2026-12-03T09:30:00Z``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# Date, then T, hours and minutes; seconds and a fraction optional; then Z, +00:00 or
# nothing (read as UTC: what a browser's datetime-local field sends).
_ISO_UTC = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?P<zone>Z|[+-]\d{2}:\d{2})?"
)
EXAMPLE = "2026-12-03T09:30:00Z"


def iso_utc(ms: int | None) -> str:
    """``2026-12-03T09:30:00.250Z`` for a millisecond timestamp; empty for None."""
    if ms is None:
        return ""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
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
    return round(moment.replace(tzinfo=UTC).timestamp() * 1000)
