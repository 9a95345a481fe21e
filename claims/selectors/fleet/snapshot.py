"""The fleet snapshot: the aggregates that cost a scan of every claim and workflow, taken
once per renew interval by beat (claims.services.engines) and read by the overview, the
engine pages, the workflows page and the reclaim page while fresh.

Each reader falls back to counting now when no fresh snapshot is there; a part of the
snapshot is read on its own (one query that reads only that part) where a page needs no
more of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, OuterRef, Window
from django.db.models.fields.json import KeyTransform

from claims.models import FleetSnapshot, Workflow, WorkflowClaim, WorkflowStatus
from claims.models.claims import HOLDER_PRESENT
from claims.protocol.states import ClaimState
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims.state_counts import claims_by_state_and_holder

from .alert_rules import EXAMPLES


def ids_and_count(rows: Any) -> tuple[int, list[str]]:
    """The first few ids and the total, in one query (a window count over the whole match)."""
    found = list(
        rows.order_by("workflow_id")
        .annotate(total=Window(Count("pk")))
        .values_list("workflow_id", "total")[:EXAMPLES]
    )
    return (found[0][1] if found else 0), [workflow_id for workflow_id, _ in found]


@dataclass(frozen=True)
class FleetScan:
    """The aggregates that cost a scan of every claim and workflow."""

    taken_at_ms: int
    by_state: dict[ClaimState, int]
    by_holder: dict[str, int]
    ownerless_running: int
    ownerless_examples: list[str]
    workflows_by_status: dict[str, int]
    # Per workflow type, its workflows per status: the workflows page filtered by type.
    workflows_by_type: dict[str, dict[str, int]]
    # Per holder engine, its claims per derived state: an engine's own page.
    by_holder_state: dict[str, dict[str, int]]

    def as_json(self) -> dict[str, Any]:
        return {
            "by_state": self.by_state,
            "by_holder": self.by_holder,
            "by_holder_state": self.by_holder_state,
            "ownerless_running": self.ownerless_running,
            "ownerless_examples": self.ownerless_examples,
            "workflows_by_status": self.workflows_by_status,
            "workflows_by_type": self.workflows_by_type,
        }

    @classmethod
    def from_json(cls, taken_at_ms: int, data: dict[str, Any]) -> FleetScan:
        return cls(
            taken_at_ms,
            data["by_state"],
            data["by_holder"],
            data["ownerless_running"],
            data["ownerless_examples"],
            data["workflows_by_status"],
            data["workflows_by_type"],
            data["by_holder_state"],
        )


# A snapshot older than this many renew intervals is ignored (beat takes one per interval).
SNAPSHOT_FRESH_INTERVALS = 2


def grouped_by_type(
    rows: Iterable[tuple[str, str, int]],
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(status, type, workflows) rows, in status then type order, as workflows per status and
    per type and status."""
    by_status: dict[str, int] = {}
    by_type: dict[str, dict[str, int]] = {}
    for status, workflow_type, n in rows:
        by_status[status] = by_status.get(status, 0) + n
        by_type.setdefault(workflow_type, {})[status] = n
    return by_status, by_type


def workflows_by_type() -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Workflows per status (statuses in name order, absent ones omitted), and per type and
    status: one grouped count, read from the (status, type) index alone on PostgreSQL."""
    return grouped_by_type(
        Workflow.objects.values_list("status", "workflow_type")
        .annotate(n=Count("pk"))
        .order_by("status", "workflow_type")
    )


def running_unheld() -> Any:
    """Running workflows with no claim holder, held as the ownerless marks and reclaim's
    discovery judge it (any holder column set): a holder garbled in its own columns is an
    invalid claim, not an ownerless workflow."""
    holders = WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id=OuterRef("pk"))
    return Workflow.objects.filter(status=WorkflowStatus.RUNNING).exclude(Exists(holders))


def fleet_scan(*, now_ms: int, timing: ClaimTiming) -> FleetScan:
    """Three scans: claims by derived state and holder, stranded running workflows, workflows
    by status and type."""
    counted = claims_by_state_and_holder(WorkflowClaim.objects.all(), now_ms, timing)
    ownerless_running, ownerless_examples = ids_and_count(running_unheld())
    by_status, by_type = workflows_by_type()
    return FleetScan(
        now_ms,
        counted.by_state,
        counted.by_holder,
        ownerless_running,
        ownerless_examples,
        by_status,
        by_type,
        counted.by_holder_state,
    )


def latest_fleet_scan(*, now_ms: int, timing: ClaimTiming) -> FleetScan:
    """The snapshot beat took, if fresh (one query); otherwise a scan made now."""
    row = FleetSnapshot.objects.filter(id=1).values_list("taken_at_ms", "data").first()
    if row is not None:
        taken_at_ms, data = row
        if 0 <= now_ms - taken_at_ms <= SNAPSHOT_FRESH_INTERVALS * timing.renew_interval_ms:
            try:
                return FleetScan.from_json(taken_at_ms, data)
            except (KeyError, TypeError):
                pass  # written by another version: scan instead
    return fleet_scan(now_ms=now_ms, timing=timing)


def _fresh_snapshot_part(key: str, now_ms: int, timing: ClaimTiming) -> dict[str, Any] | None:
    """One part of beat's snapshot (a JSON object), when the snapshot is fresh and has it;
    else None. One query that reads only that part."""
    row = (
        FleetSnapshot.objects.filter(id=1).values_list("taken_at_ms", KeyTransform(key, "data"))
    ).first()
    if (
        row is None
        or not 0 <= now_ms - row[0] <= SNAPSHOT_FRESH_INTERVALS * timing.renew_interval_ms
    ):
        return None
    part = row[1]
    return part if isinstance(part, dict) else None  # None: written by another version


def _counts(part: Any) -> dict[str, int]:
    return {str(name): int(n) for name, n in part.items()}


def snapshot_holdings(*, now_ms: int, timing: ClaimTiming) -> dict[str, int] | None:
    """Claim rows per holder engine as beat's snapshot counted them, when it is fresh."""
    part = _fresh_snapshot_part("by_holder", now_ms, timing)
    return None if part is None else _counts(part)


def snapshot_engine_states(
    engine_id: str, *, now_ms: int, timing: ClaimTiming
) -> dict[str, int] | None:
    """One engine's claims per derived state as beat's snapshot counted them, when it is
    fresh (an engine that held nothing then has none); one query."""
    by_holder_state = _fresh_snapshot_part("by_holder_state", now_ms, timing)
    if by_holder_state is None:
        return None
    counts = by_holder_state.get(engine_id)
    return _counts(counts) if isinstance(counts, dict) else {}


def snapshot_workflow_counts(
    *, now_ms: int, timing: ClaimTiming, workflow_type: str | None = None
) -> dict[str, int] | None:
    """Workflows per status, of one type if given, as beat's snapshot counted them, when it
    is fresh (a type it did not see has none); one query."""
    if workflow_type is None:
        part = _fresh_snapshot_part("workflows_by_status", now_ms, timing)
        return None if part is None else _counts(part)
    by_type = _fresh_snapshot_part("workflows_by_type", now_ms, timing)
    if by_type is None:
        return None
    counts = by_type.get(workflow_type)
    return _counts(counts) if isinstance(counts, dict) else {}
