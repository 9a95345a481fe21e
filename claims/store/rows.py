"""The claim rows one at a time: reads and compare-and-swaps, each CAS one conditional statement.

The row count of a conditional UPDATE (or INSERT ... ON CONFLICT DO NOTHING)
decides each CAS; nothing is read, modified and saved. A transition and its
ClaimEvent commit together, so the event log is a faithful witness. The
statements themselves are in ``sql/claim_rows.py``; the set-based queries of the same
table are in ``claim_sets.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any, TypeVar

from django.db import transaction

from claims.models import ClaimEvent, WorkflowClaim
from claims.protocol.errors import EngineDeposedError
from claims.protocol.records import ClaimEventRecord, ClaimRow, Holder
from claims.protocol.sessions import SessionRow

from .prepared import database, fetch_one, run
from .sessions import SessionQueries
from .sql.claim_rows import EVENT_FIELDS as EVENT_FIELDS  # what a bulk chunk writes
from .sql.claim_rows import EVENT_TRANSITION_FIELDS as EVENT_TRANSITION_FIELDS  # the audit's
from .sql.claim_rows import HOLDER_COLUMNS as HOLDER_COLUMNS  # the selectors read with these
from .sql.claim_rows import claim_statements

T = TypeVar("T")


def _holder(holder: Holder | None) -> tuple[Any, ...]:
    """A holder as the values of HOLDER_COLUMNS, in order."""
    if holder is None:
        return (None, None, None, None, None)
    return (
        holder.engine_id,
        holder.epoch,
        holder.expires_at_ms,
        holder.claimed_at_ms,
        holder.session_epoch,
    )


def _event(event: ClaimEventRecord) -> tuple[Any, ...]:
    return (
        event.workflow_id,
        event.kind,
        event.epoch_before,
        event.epoch_after,
        event.engine_id,
        event.actor,
        event.reason,
        event.at_ms,
        event.holder_before,
    )


def _transition(name: str, params: tuple[Any, ...], event: ClaimEventRecord | None) -> bool:
    """Apply one CAS and, when it applied, write its event; True if it applied."""
    db = database()
    statements = claim_statements(db.vendor)
    if event is not None and not statements.logged:
        # SQLite: the CAS and its event are two statements, so they need a transaction.
        with transaction.atomic():
            applied = run(db, statements.transitions[name], params) == 1
            if applied:
                run(db, statements.event, _event(event))
        return applied
    if event is None:
        sql, values = statements.transitions[name], params
    else:
        sql, values = statements.logged[name], (*params, *_event(event))
    if not db.in_atomic_block:
        # One statement in autocommit is its own transaction.
        return run(db, sql, values) == 1
    # Inside the caller's transaction, a savepoint keeps that transaction usable
    # if this statement fails and the caller carries on.
    with transaction.atomic():
        return run(db, sql, values) == 1


def claim_row_from_values(
    workflow_id: str,
    epoch: int,
    engine_id: str | None,
    holder_epoch: int | None,
    expires_at_ms: int | None,
    claimed_at_ms: int | None,
    session_epoch: int | None,
    session: SessionRow | None = None,
) -> ClaimRow:
    """A claim row from its columns (HOLDER_COLUMNS' order), with the session its holder
    names if the caller read it."""
    values = (engine_id, holder_epoch, expires_at_ms, claimed_at_ms, session_epoch)
    holder = None if all(v is None for v in values) else Holder(*values)
    return ClaimRow(workflow_id, epoch, holder, session)


def event_row(event: ClaimEventRecord) -> ClaimEvent:
    # The record's fields are the model's columns, by the same names.
    return ClaimEvent(**{field.name: getattr(event, field.name) for field in fields(event)})


class ClaimRowQueries(SessionQueries):
    """Single-claim reads and compare-and-swaps; a read of a session holder's claim reads
    its session too."""

    def read_claim(self, workflow_id: str) -> ClaimRow | None:
        db = database()
        values = fetch_one(db, claim_statements(db.vendor).read, (workflow_id,))
        if values is None:
            return None
        row = claim_row_from_values(workflow_id, *values)
        engine = None if row.holder is None else row.holder.session_engine()
        return row if engine is None else replace(row, session=self.read_session(engine))

    def cas_insert(
        self, workflow_id: str, *, holder: Holder | None, event: ClaimEventRecord | None
    ) -> bool:
        return _transition("insert", (workflow_id, *_holder(holder)), event)

    def cas_grant(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        expected_holder: Holder | None,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        params = (
            expected_epoch + 1,
            *_holder(holder),
            workflow_id,
            expected_epoch,
            *_holder(expected_holder),
        )
        if expected_holder is None or expected_holder.session_epoch is None:
            return _transition("grant", params, event)
        # A session holder's claim: only once its session is not open.
        session = (expected_holder.engine_id, expected_holder.session_epoch)
        return _transition("grant_from_session", (*params, *session), event)

    def cas_rotate(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        params = (expected_epoch + 1, *_holder(holder), workflow_id, expected_epoch)
        return _transition("rotate", params, event)

    def cas_renew(self, workflow_id: str, *, held: Holder, expires_at_ms: int) -> bool:
        db = database()
        params = (expires_at_ms, workflow_id, held.epoch, *_holder(held))
        return run(db, claim_statements(db.vendor).renew, params) == 1

    def cas_release(
        self, workflow_id: str, *, held: Holder, event: ClaimEventRecord | None
    ) -> bool:
        return _transition("release", (workflow_id, held.epoch, *_holder(held)), event)

    def record_event(self, event: ClaimEventRecord) -> None:
        # As Model.save() would: a failure inside an atomic block marks it for rollback.
        with transaction.mark_for_rollback_on_error():
            db = database()
            run(db, claim_statements(db.vendor).event, _event(event))

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
