"""What the backfill services raise; every interface (admin, API) maps these once."""

from __future__ import annotations

from claims.protocol.errors import ClaimConfigError, ClaimError


class BackfillAlreadyActiveError(ClaimError):
    """A visibility backfill is already scheduled or running (one at a time, DB-enforced)."""

    def __init__(self, active_job_id: int | None) -> None:
        which = "" if active_job_id is None else f" (backfill #{active_job_id})"
        super().__init__(
            f"a visibility backfill is already scheduled or running{which}; "
            "wait for it to finish or cancel it first"
        )
        self.active_job_id = active_job_id


class BackfillNotActiveError(ClaimError):
    """Only a scheduled or running backfill can be cancelled."""

    def __init__(self, job_id: int, status: str) -> None:
        super().__init__(f"backfill #{job_id} is {status}, not scheduled or running")
        self.job_id = job_id
        self.status = status


class BackfillReadOnlyError(ClaimConfigError):
    """The global read-only switch is on; ``reason`` is the text to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BackfillInThePastError(ClaimConfigError):
    """A backfill scheduled for a time already gone (a minute of slack for slow forms)."""

    def __init__(self, run_at: str) -> None:
        super().__init__(f"run_at {run_at} is in the past; leave it out to start the backfill now")
