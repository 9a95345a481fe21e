"""When a running workflow's next drive is due, read from its state once, when the state is
written, and kept beside it (``Workflow.due_at_ms``): the engines' wake passes find what is
due through an index on that time instead of reading every held workflow's state.

Every write of a state keeps it: ``Workflow.save`` and the runtime's checkpoint write
(claims.runtime.writes), in the statement that writes the state. A state written by hand in
SQL leaves the column as it was (docs/design.md §4, "Wake", says what that does)."""

from __future__ import annotations

from typing import Any

from claims.conf import claim_timing
from claims.protocol.times import MAX_TIME_MS

# Due at once: the column's default, and what migration 0026 wrote for a workflow that was
# not parked; such a row is due until its state is next written.
DUE_NOW = 0


def executing_recheck_ms() -> int:
    """How long after its state was written a workflow that is not parked is due: the
    configured renew interval. (A park with no usable wake time counts as none: the drive
    itself reads its sleeps and parks again, writing nothing, if it woke too soon.) Its
    drive writes a checkpoint per step, so while a drive runs the workflow is not due, and
    the fleet's wake passes read only what is due; one whose drive stopped (an error, a
    drive order lost) is driven again by its holder's wake pass within two intervals, as
    when such a row was due at once."""
    return claim_timing().renew_interval_ms


def park_wake_at(state: Any) -> int:
    """The park's wake time in ``state`` (ms since the epoch), else ``DUE_NOW``; a time
    past the last one a page can show (no sleep writes one) is kept as that time.
    Migration 0026's backfill is this rule in SQL."""
    park = state.get("park") if isinstance(state, dict) else None
    wake_at = park.get("wake_at_ms") if isinstance(park, dict) else None
    if isinstance(wake_at, bool) or not isinstance(wake_at, int):
        return DUE_NOW
    return min(max(DUE_NOW, wake_at), MAX_TIME_MS)


def due_at_of(state: Any, *, written_at_ms: int) -> int:
    """When a workflow whose ``state`` is written at ``written_at_ms`` is next due: its
    park's wake time, else a recheck after the write."""
    wake_at = park_wake_at(state)
    if wake_at != DUE_NOW:
        return wake_at
    return min(max(DUE_NOW, written_at_ms) + executing_recheck_ms(), MAX_TIME_MS)
