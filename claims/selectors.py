"""Reads that feed the pages; each is a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q


@dataclass(frozen=True, slots=True)
class ClaimHolderCounts:
    held: int
    ownerless: int


def workflow_status_counts() -> dict[str, int]:
    """Workflows per status, one query, statuses in name order; absent statuses are omitted."""
    from claims.models import Workflow

    rows = Workflow.objects.values("status").annotate(count=Count("pk")).order_by("status")
    return {row["status"]: row["count"] for row in rows}


def claim_holder_counts() -> ClaimHolderCounts:
    """Claim rows with and without a holder, one query; expiry is not judged here."""
    from claims.models import WorkflowClaim

    totals = WorkflowClaim.objects.aggregate(
        held=Count("pk", filter=Q(holder_engine_id__isnull=False)),
        ownerless=Count("pk", filter=Q(holder_engine_id__isnull=True)),
    )
    return ClaimHolderCounts(held=totals["held"], ownerless=totals["ownerless"])
