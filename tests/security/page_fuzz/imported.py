"""Rows another program wrote (a bulk import, an older version), for the page fuzz:
times before 1970, at the edges of years 1 and 9999 and past them, up to what a 64-bit
column holds. Enough of them for more than a page, each on an edge, so the pages end on
such rows and the cursors they write carry these values. Epochs stay the protocol's own
numbers, which never pass 2^53 - 1 (a form could not send one back)."""

from __future__ import annotations

from claims.models import (
    ClaimEvent,
    Engine,
    PendingRedrive,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol.constants import COLUMN_INT_MAX, COLUMN_INT_MIN, MAX_SAFE_INTEGER
from claims.protocol.times import MAX_TIME_MS, MIN_TIME_MS
from claims.store.workflows import workflow_index
from tests import factories
from tests.browser import scene as browser_scene

ENGINE = "e-far"
IMPORTED = "import-"
IMPORTED_TYPE = "imported"
EDGES = (
    COLUMN_INT_MAX,
    2**62,
    2**53,
    2**53 - 1,
    MAX_TIME_MS + 1,
    MAX_TIME_MS,
    0,
    -1,
    MIN_TIME_MS,
    MIN_TIME_MS - 1,
    -(2**53) + 1,
    -(2**62),
    COLUMN_INT_MIN,
)


def imported_rows() -> None:
    browser_scene.make_engine(ENGINE, skew_ms=2**62)
    Engine.objects.filter(engine_id=ENGINE).update(
        heartbeat_at_ms=2**62, started_at_ms=-(2**62), clock_error_ms=-(2**62), held_count=2**31 - 1
    )
    factories.make_session(ENGINE, epoch=MAX_SAFE_INTEGER, expires_at_ms=2**62, at_ms=2**62)
    values = [EDGES[n % len(EDGES)] for n in range(130)]
    epochs = [min(max(value, 1), MAX_SAFE_INTEGER) for value in values]
    rows = []
    for n, value in enumerate(values):
        workflow_id = f"{IMPORTED}{n:05d}"
        rows.append(
            Workflow(
                workflow_id=workflow_id,
                workflow_type=IMPORTED_TYPE,
                status=WorkflowStatus.RUNNING,
                state={"input": {}, "steps": {}},
                created_at_ms=value,
                updated_at_ms=values[-n - 1],
            )
        )
        WorkflowClaim.objects.create(
            workflow_id=workflow_id,
            epoch=epochs[n],
            holder_engine_id=ENGINE if n % 2 else browser_scene.HOLDER,
            holder_epoch=epochs[n],
            holder_expires_at_ms=value,
            holder_claimed_at_ms=values[-n - 1],
        )
        ClaimEvent.objects.create(
            workflow_id=workflow_id,
            kind="takeover",
            epoch_before=1,
            epoch_after=epochs[n],
            engine_id=ENGINE,
            at_ms=value,
        )
    Workflow.objects.bulk_create(rows)
    for workflow in rows:
        workflow_index(workflow)
    PendingRedrive.objects.create(
        engine_id=ENGINE,
        workflow_id=f"{IMPORTED}00000",
        epoch=MAX_SAFE_INTEGER,
        attempts=2**31 - 1,
        first_failed_at_ms=-(2**62),
        last_failed_at_ms=2**62,
    )
