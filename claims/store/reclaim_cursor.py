"""The reclaim cursor: the scan of unheld running workflows, a page per pass."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import F

from claims.models import ReclaimCursor, Workflow, WorkflowClaim, WorkflowStatus
from claims.models.claims import HOLDER_PRESENT
from claims.protocol.discovery import scan_is_paced
from claims.protocol.records import ScanPage

from .sql.reclaim_cursor import reclaim_cursor_statements


class ReclaimCursorQueries:
    def scan_unheld_running(
        self, *, cursor_name: str, limit: int, scanned_by: str, now_ms: int, paced_ms: int = 0
    ) -> ScanPage:
        # A read without a lock first: when the page is not due, that read is the pass's
        # whole cost of the scan, and no engine queues on the cursor row.
        moved_at = (
            ReclaimCursor.objects.filter(name=cursor_name)
            .values_list("updated_at_ms", flat=True)
            .first()
        )
        if moved_at is None:
            with connection.cursor() as db_cursor:
                db_cursor.execute(
                    reclaim_cursor_statements().create, [cursor_name, 0, 0, 0, scanned_by]
                )
        elif scan_is_paced(moved_at, now_ms, paced_ms):
            return ScanPage([], 0, False)
        with transaction.atomic():
            # Locking the cursor row makes concurrent engines scan successive pages. Paced,
            # an engine that finds the row locked leaves the page to the engine reading it
            # (SKIP LOCKED): beat ticks every engine at once, and twenty queued on the row
            # spent 0.8 s of the database's time per interval waiting to be told no. The
            # pace is judged again under the lock, so engines that raced past the read above
            # still read one page between them.
            cursor = (
                ReclaimCursor.objects.select_for_update(skip_locked=paced_ms > 0)
                .filter(name=cursor_name)
                .first()
            )
            if cursor is None or scan_is_paced(cursor.updated_at_ms, now_ms, paced_ms):
                return ScanPage([], 0, False)
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
