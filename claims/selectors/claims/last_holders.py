"""Who last held a claim that is now ownerless, and when it let go: from the claim events,
as the claim row forgets its holder when it is released (docs/design.md §7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Max

from claims.models import ClaimEvent, Workflow, WorkflowStatus


@dataclass(frozen=True)
class LastHolder:
    engine_id: str | None  # the last engine an event names; None when none ever did
    at_ms: int  # the last event: the release, rotation or deposition that ended the hold
    kind: str


def last_holders(workflow_ids: Sequence[str]) -> tuple[dict[str, LastHolder], set[str]]:
    """For each id with events: its last holder and last event; and which of the ids name a
    running workflow (stranded). Two queries whatever the number of ids: the events by
    primary key from two lookups per id along claim_event_workflow_idx, the workflows by
    theirs. (Both as a separate read rather than in the list's query: PostgreSQL would
    hash every running workflow or every event to answer them for a page of 50.)"""
    per_workflow = ClaimEvent.objects.filter(workflow_id__in=workflow_ids).values("workflow_id")
    latest = per_workflow.annotate(last=Max("id")).values("last")
    latest_held = (
        per_workflow.filter(engine_id__isnull=False)
        .exclude(engine_id="")
        .annotate(last=Max("id"))
        .values("last")
    )
    events = (
        ClaimEvent.objects.filter(id__in=latest.union(latest_held))
        .order_by("id")
        .values_list("workflow_id", "engine_id", "at_ms", "kind")
    )
    holders: dict[str, str | None] = {}
    last: dict[str, tuple[int, str]] = {}
    for workflow_id, engine_id, at_ms, kind in events:  # in id order: the latest wins
        if engine_id:
            holders[workflow_id] = engine_id
        last[workflow_id] = (at_ms, kind)
    running = Workflow.objects.filter(pk__in=workflow_ids, status=WorkflowStatus.RUNNING)
    return {
        workflow_id: LastHolder(holders.get(workflow_id), at_ms, kind)
        for workflow_id, (at_ms, kind) in last.items()
    }, set(running.values_list("pk", flat=True))
