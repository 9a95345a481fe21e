"""One claim row per derived state and boundary, shared by the tests of the state rules."""

from __future__ import annotations

from claims.models import WorkflowClaim
from claims.protocol import ClaimTiming
from tests.factories import CLAIM_COLUMNS

NOW = 10_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)  # grace 10 s

ROWS = {
    # workflow id: the other CLAIM_COLUMNS (epoch, engine, holder epoch, expires, claimed,
    # session epoch: none, the workflow-lease mode's rows)
    "a-live": (3, "e1", 3, NOW + 5_000, NOW - 25_000, None),
    "b-live-edge": (1, "e1", 1, NOW, NOW - 30_000, None),
    "c-grace": (2, "e2", 2, NOW - 1, NOW - 30_001, None),
    "d-grace-edge": (2, "e2", 2, NOW - 10_000, NOW - 40_000, None),
    "e-expired": (5, "e2", 5, NOW - 10_001, NOW - 40_001, None),
    "f-invalid-epoch": (7, "e1", 6, NOW + 5_000, NOW, None),
    "g-invalid-blank": (1, "", 1, NOW + 5_000, NOW, None),
    "h-invalid-negative": (1, "e3", 1, -5, NOW, None),
    "i-ownerless": (9, None, None, None, None, None),
}


def create_state_rows() -> None:
    WorkflowClaim.objects.bulk_create(
        WorkflowClaim(**dict(zip(CLAIM_COLUMNS, (workflow_id, *row), strict=True)))
        for workflow_id, row in ROWS.items()
    )
