"""Pure helpers about backfill jobs: time conversions, the fleet's now, and progress.

Scheduling and cancelling are writes, in claims.services.backfills; the run itself is
in ``runner``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from claims.fleet_clock import fleet_clock
from claims.models import BackfillJob, BackfillStatus
from claims.protocol import Clock


def ms_to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def datetime_to_ms(value: datetime) -> int:
    return (value - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def now_ms(clock: Clock | None) -> int:
    return (clock or fleet_clock())()


def backfill_progress(job: BackfillJob) -> float:
    """Share of the job done, 0.0 to 1.0: processed over the estimate, capped (the table
    may grow while it runs); a succeeded job is 1.0 whatever the estimate said."""
    if job.status == BackfillStatus.SUCCEEDED:
        return 1.0
    if not job.total_estimate:
        return 0.0
    return min(1.0, job.processed / job.total_estimate)
