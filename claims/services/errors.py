"""The services' refusals: what a write raises beyond the protocol's own vocabulary
(claims.protocol.errors). The interfaces map both once: the pages in claims.views.errors,
the API in weftboard.api, the admin beside its actions.
"""

from __future__ import annotations

from claims.protocol.errors import ClaimConfigError, ClaimError, ConflictError


class ReadOnlyError(ClaimConfigError):
    """The fleet-wide read-only switch is on; ``reason`` is the text to show.

    Every write refuses with it, a backfill's too (claims.services.rules). A refusal, not
    bad input: the API answers 403, the pages too.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EngineDrainConflictError(ConflictError):
    """The engine's state rules the request out (a 409): not live, or already (un)drained."""

    def __init__(self, engine_id: str, message: str) -> None:
        super().__init__(message)
        self.engine_id = engine_id


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


class BackfillInThePastError(ClaimConfigError):
    """A backfill scheduled for a time already gone (a minute of slack for slow forms)."""

    def __init__(self, run_at: str) -> None:
        super().__init__(f"run_at {run_at} is in the past; leave it out to start the backfill now")


class BulkCountChangedError(ConflictError):
    """The query selects another number of workflows than the operator previewed: asked
    again (a 409 with both numbers) unless the caller accepts the change."""

    def __init__(self, previewed: int, frozen: int) -> None:
        super().__init__(
            f"the query selected {previewed:,} workflows when previewed and {frozen:,} now;"
            " preview again, or confirm the new count"
        )
        self.previewed = previewed
        self.frozen = frozen


class BulkJobStateError(ConflictError):
    """A pause, resume or abort the job's status rules out (a 409)."""

    def __init__(self, job_id: int, status: str, action: str) -> None:
        super().__init__(f"bulk job #{job_id} is {status}: it cannot be {action}")
        self.job_id = job_id
        self.status = status
