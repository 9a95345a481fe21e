"""When a running workflow's next drive is due, read from its state once, when the state is
written, and kept beside it (``Workflow.due_at_ms``): the engines' wake passes find what is
due through an index on that time instead of reading every held workflow's state.

Every write of a state keeps it: ``Workflow.save`` and the runtime's checkpoint write
(claims.runtime.writes), in the statement that writes the state. A state written by hand in
SQL leaves the column as it was (docs/design.md §4, "Wake", says what that does)."""

from __future__ import annotations

from typing import Any

from claims.protocol.times import MAX_TIME_MS

# Due at once: a workflow that is not parked, or whose park has no usable wake time (the
# drive itself reads its sleeps and parks again, writing nothing, if it woke too soon).
DUE_NOW = 0


def due_at_of(state: Any) -> int:
    """The park's wake time in ``state`` (ms since the epoch), else ``DUE_NOW``; a time
    past the last one a page can show (no sleep writes one) is kept as that time."""
    park = state.get("park") if isinstance(state, dict) else None
    wake_at = park.get("wake_at_ms") if isinstance(park, dict) else None
    if isinstance(wake_at, bool) or not isinstance(wake_at, int):
        return DUE_NOW
    return min(max(DUE_NOW, wake_at), MAX_TIME_MS)
