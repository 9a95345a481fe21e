"""The Django ORM claim store: every compare-and-swap is one conditional statement.

The row count of a conditional UPDATE (or INSERT ... ON CONFLICT DO NOTHING)
decides each CAS; nothing is read, modified and saved. A transition and its
ClaimEvent commit in one transaction, so the event log is a faithful witness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import connection, transaction

from claims.models import ClaimEvent, OwnershipModeMarker, WorkflowClaim
from claims.protocol.errors import EngineDeposedError
from claims.protocol.records import ClaimEventRecord, ClaimRow, Holder

T = TypeVar("T")

HOLDER_COLUMNS = (
    "holder_engine_id",
    "holder_epoch",
    "holder_expires_at_ms",
    "holder_claimed_at_ms",
)


def _holder_values(holder: Holder | None) -> dict[str, Any]:
    if holder is None:
        return dict.fromkeys(HOLDER_COLUMNS)
    return {
        "holder_engine_id": holder.engine_id,
        "holder_epoch": holder.epoch,
        "holder_expires_at_ms": holder.expires_at_ms,
        "holder_claimed_at_ms": holder.claimed_at_ms,
    }


def _held_condition(held: Holder) -> dict[str, Any]:
    """My own claim: the epoch column and all four holder columns as I last wrote them."""
    return {"epoch": held.epoch, **_holder_values(held)}


def claim_row_from_values(
    workflow_id: str,
    epoch: int,
    engine_id: str | None,
    holder_epoch: int | None,
    expires_at_ms: int | None,
    claimed_at_ms: int | None,
) -> ClaimRow:
    values = (engine_id, holder_epoch, expires_at_ms, claimed_at_ms)
    holder = None if all(v is None for v in values) else Holder(*values)
    return ClaimRow(workflow_id, epoch, holder)


def insert_if_absent(model: type[Any], values: dict[str, Any]) -> bool:
    """INSERT ... ON CONFLICT DO NOTHING (PostgreSQL and SQLite alike); True if it inserted."""
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in values)
    placeholders = ", ".join(["%s"] * len(values))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) ON CONFLICT DO NOTHING"
    with connection.cursor() as cursor:
        cursor.execute(sql, list(values.values()))
        return cursor.rowcount == 1


def event_row(event: ClaimEventRecord) -> ClaimEvent:
    return ClaimEvent(
        workflow_id=event.workflow_id,
        kind=event.kind,
        epoch_before=event.epoch_before,
        epoch_after=event.epoch_after,
        engine_id=event.engine_id,
        actor=event.actor,
        reason=event.reason,
        at_ms=event.at_ms,
    )


class ClaimRowStore:
    """Single-claim reads and compare-and-swaps."""

    def read_claim(self, workflow_id: str) -> ClaimRow | None:
        values = (
            WorkflowClaim.objects.filter(workflow_id=workflow_id)
            .values_list("epoch", *HOLDER_COLUMNS)
            .first()
        )
        return None if values is None else claim_row_from_values(workflow_id, *values)

    def cas_insert(
        self, workflow_id: str, *, holder: Holder | None, event: ClaimEventRecord | None
    ) -> bool:
        values = {"workflow_id": workflow_id, "epoch": 1, **_holder_values(holder)}
        with transaction.atomic():
            inserted = insert_if_absent(WorkflowClaim, values)
            if inserted and event is not None:
                event_row(event).save(force_insert=True)
        return inserted

    def cas_grant(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        expected_holder: Holder | None,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        # filter(col=None) compiles to IS NULL, so an absent holder compares correctly.
        condition = {"epoch": expected_epoch, **_holder_values(expected_holder)}
        return self._transition(workflow_id, condition, expected_epoch + 1, holder, event)

    def cas_rotate(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        condition = {"epoch": expected_epoch}
        return self._transition(workflow_id, condition, expected_epoch + 1, holder, event)

    def _transition(
        self,
        workflow_id: str,
        condition: dict[str, Any],
        new_epoch: int,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        with transaction.atomic():
            updated = WorkflowClaim.objects.filter(workflow_id=workflow_id, **condition).update(
                epoch=new_epoch, **_holder_values(holder)
            )
            if updated and event is not None:
                event_row(event).save(force_insert=True)
        return updated == 1

    def cas_renew(self, workflow_id: str, *, held: Holder, expires_at_ms: int) -> bool:
        updated = WorkflowClaim.objects.filter(
            workflow_id=workflow_id, **_held_condition(held)
        ).update(holder_expires_at_ms=expires_at_ms)
        return updated == 1

    def cas_release(
        self, workflow_id: str, *, held: Holder, event: ClaimEventRecord | None
    ) -> bool:
        with transaction.atomic():
            updated = WorkflowClaim.objects.filter(
                workflow_id=workflow_id, **_held_condition(held)
            ).update(**_holder_values(None))
            if updated and event is not None:
                event_row(event).save(force_insert=True)
        return updated == 1

    def record_event(self, event: ClaimEventRecord) -> None:
        event_row(event).save(force_insert=True)

    def fenced_write(self, workflow_id: str, epoch: int, fn: Callable[[], T]) -> T:
        with transaction.atomic():
            # The row lock (PostgreSQL) or the IMMEDIATE write lock (SQLite) holds
            # any rotation off until this transaction commits or rolls back.
            locked = list(
                WorkflowClaim.objects.select_for_update(no_key=True)
                .filter(workflow_id=workflow_id, epoch=epoch)
                .values_list("epoch", flat=True)
            )
            if not locked:
                raise EngineDeposedError(workflow_id)
            return fn()

    def close_thread_resources(self) -> None:
        connection.close()

    def read_ownership_mode(self) -> tuple[str, int | None] | None:
        return (
            OwnershipModeMarker.objects.filter(id=1)
            .values_list("mode", "established_at_ms")
            .first()
        )

    def insert_ownership_mode(self, mode: str, established_at_ms: int) -> bool:
        return insert_if_absent(
            OwnershipModeMarker, {"id": 1, "mode": mode, "established_at_ms": established_at_ms}
        )
