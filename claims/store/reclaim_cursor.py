"""The reclaim cursor: the scan of unheld running workflows, a page per pass."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import F

from claims.models import ReclaimCursor, Workflow, WorkflowClaim, WorkflowStatus
from claims.models.claims import HOLDER_PRESENT
from claims.protocol.records import ScanPage

from .sql.reclaim_cursor import reclaim_cursor_statements


class ReclaimCursorQueries:
    def scan_unheld_running(
        self, *, cursor_name: str, limit: int, scanned_by: str, now_ms: int
    ) -> ScanPage:
        with connection.cursor() as db_cursor:
            db_cursor.execute(
                reclaim_cursor_statements().create, [cursor_name, 0, 0, now_ms, scanned_by]
            )
        with transaction.atomic():
            # Locking the cursor row makes concurrent engines scan successive pages.
            cursor = ReclaimCursor.objects.select_for_update().get(name=cursor_name)
            page = Workflow.objects.order_by("workflow_id")
            if cursor.last_workflow_id is not None:
                page = page.filter(workflow_id__gt=cursor.last_workflow_id)
            rows = list(page.values_list("workflow_id", "status")[:limit])
            running = [wf for wf, status in rows if status == WorkflowStatus.RUNNING]
            held = set(
                WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id__in=running).values_list(
                    "workflow_id", flat=True
                )
            )
            wrapped = len(rows) < limit
            ReclaimCursor.objects.filter(name=cursor_name).update(
                last_workflow_id=None if wrapped else rows[-1][0],
                wraps=F("wraps") + int(wrapped),
                scanned_total=F("scanned_total") + len(rows),
                updated_at_ms=now_ms,
                updated_by=scanned_by,
            )
        return ScanPage([wf for wf in running if wf not in held], len(rows), wrapped)
