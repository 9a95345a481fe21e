"""The pending re-drives: grants whose follow-up failed, kept until driven or dropped."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from claims.models import PendingRedrive


class RedriveQueries:
    def save_pending_redrive(
        self, *, engine_id: str, workflow_id: str, epoch: int, error: str, now_ms: int
    ) -> None:
        changes = {"epoch": epoch, "last_error": error, "last_failed_at_ms": now_ms}
        with transaction.atomic():
            mine = PendingRedrive.objects.filter(engine_id=engine_id, workflow_id=workflow_id)
            if not mine.update(attempts=F("attempts") + 1, **changes):
                PendingRedrive.objects.create(
                    engine_id=engine_id,
                    workflow_id=workflow_id,
                    first_failed_at_ms=now_ms,
                    **changes,
                )

    def drop_pending_redrive(self, *, engine_id: str, workflow_id: str) -> None:
        PendingRedrive.objects.filter(engine_id=engine_id, workflow_id=workflow_id).delete()
