"""Reads that feed pages, the API and /metrics; each is a fixed number of queries."""

from claims.selectors.claims.listing import ClaimPage, ClaimView, claim_list
from claims.selectors.fleet.totals import (
    ClaimHolderCounts,
    FleetMetrics,
    claim_holder_counts,
    fleet_metrics,
    workflow_status_counts,
)

__all__ = [
    "ClaimHolderCounts",
    "ClaimPage",
    "ClaimView",
    "FleetMetrics",
    "claim_holder_counts",
    "claim_list",
    "fleet_metrics",
    "workflow_status_counts",
]
