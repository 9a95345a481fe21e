"""The visibility-index backfill (docs/design.md §2, §7 "Admin").

Scheduling and cancelling are the operator's calls (admin, API), in
claims.services.backfills; ``backfill_run`` is the Celery task's body
(``claims.backfill_run``) and ``backfill_run_due`` beat's (``claims.backfill_run_due``):
it starts due jobs and resumes running ones whose runner died. What scheduling and
cancelling refuse is in claims.services.errors.

Outcomes: ``succeeded`` (and the VisibilityWatermark moves to version + 1) only when the
whole table was walked with no conflicts; ``failed`` with "N conflicts ...; run it
again" and no watermark when some rows changed under the run; ``failed`` with the error's
type and first line when it raised; ``cancelled`` when cancelled (before the next batch).
"""

from __future__ import annotations

from .jobs import backfill_progress
from .runner import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, backfill_run, backfill_run_due

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MAX_BATCH_SIZE",
    "backfill_progress",
    "backfill_run",
    "backfill_run_due",
]
