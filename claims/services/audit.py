"""Writing an operator record (claims.models.AuditEntry), in the caller's transaction so
the record and the change it names commit or roll back together."""

from __future__ import annotations

from typing import Any

from claims.fleet_clock import fleet_clock
from claims.models import AuditEntry, AuditSubject
from claims.protocol import Clock


def audit_record(
    subject: AuditSubject,
    subject_id: int,
    action: str,
    *,
    actor: str | None,
    reason: str = "",
    detail: dict[str, Any] | None = None,
    clock: Clock | None = None,
) -> AuditEntry:
    return AuditEntry.objects.create(
        at_ms=(clock or fleet_clock())(),
        actor=actor,
        subject=subject,
        subject_id=subject_id,
        action=action,
        reason=reason,
        detail=detail or {},
    )
