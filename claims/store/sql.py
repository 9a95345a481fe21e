"""The single-claim statements, written once per database from the models' ``_meta``.

Every compare-and-swap compares with null-safe equality (PostgreSQL's IS NOT
DISTINCT FROM, SQLite's IS), which is what the ORM's ``filter(col=None)`` meant:
an absent holder is four nulls, and a garbage holder may have any of them null.

On PostgreSQL a transition and its ClaimEvent row are one statement: the CAS runs
in a data-modifying CTE whose RETURNING feeds the event INSERT, so the event is
written exactly when the CAS applied, and the pair commits without a BEGIN/COMMIT
round trip. SQLite has no data-modifying CTEs; there the store runs the CAS and the
INSERT in one transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import connection

from claims.models import ClaimEvent, WorkflowClaim

HOLDER_COLUMNS = (
    "holder_engine_id",
    "holder_epoch",
    "holder_expires_at_ms",
    "holder_claimed_at_ms",
)
EVENT_FIELDS = (
    "workflow_id",
    "kind",
    "epoch_before",
    "epoch_after",
    "engine_id",
    "actor",
    "reason",
    "at_ms",
)


@dataclass(frozen=True)
class ClaimStatements:
    """Each statement takes its parameters positionally, in the order noted beside it."""

    read: str  # workflow_id
    renew: str  # new expiry, workflow_id, epoch, held holder x4
    event: str  # the event's EVENT_FIELDS
    # insert:  workflow_id, holder x4
    # grant:   new epoch, holder x4, workflow_id, expected epoch, expected holder x4
    # rotate:  new epoch, holder x4, workflow_id, expected epoch
    # release: workflow_id, epoch, held holder x4
    transitions: Mapping[str, str]
    # PostgreSQL only (empty on SQLite): a transition's parameters, then its event's.
    logged: Mapping[str, str]


def _column(model: type[object], name: str) -> str:
    field = model._meta.get_field(name)  # type: ignore[attr-defined]
    return str(connection.ops.quote_name(field.column))


def _table(model: type[object]) -> str:
    return str(connection.ops.quote_name(model._meta.db_table))  # type: ignore[attr-defined]


@functools.cache
def _statements(vendor: str) -> ClaimStatements:
    same = "IS NOT DISTINCT FROM" if vendor == "postgresql" else "IS"
    claims = _table(WorkflowClaim)
    wf, epoch = _column(WorkflowClaim, "workflow_id"), _column(WorkflowClaim, "epoch")
    holder = [_column(WorkflowClaim, name) for name in HOLDER_COLUMNS]
    expires = _column(WorkflowClaim, "holder_expires_at_ms")

    set_holder = ", ".join(f"{column} = %s" for column in holder)
    clear_holder = ", ".join(f"{column} = NULL" for column in holder)
    holder_is = " AND ".join(f"{column} {same} %s" for column in holder)
    at_epoch = f"{wf} = %s AND {epoch} = %s"

    events = _table(ClaimEvent)
    event_columns = ", ".join(_column(ClaimEvent, name) for name in EVENT_FIELDS)
    event_values = ", ".join(["%s"] * len(EVENT_FIELDS))

    transitions = {
        "insert": (
            f"INSERT INTO {claims} ({wf}, {epoch}, {', '.join(holder)}) "
            "VALUES (%s, 1, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
        ),
        "grant": (
            f"UPDATE {claims} SET {epoch} = %s, {set_holder} WHERE {at_epoch} AND {holder_is}"
        ),
        "rotate": f"UPDATE {claims} SET {epoch} = %s, {set_holder} WHERE {at_epoch}",
        "release": f"UPDATE {claims} SET {clear_holder} WHERE {at_epoch} AND {holder_is}",
    }
    logged: dict[str, str] = {}
    if vendor == "postgresql":
        logged = {
            name: (
                f"WITH applied AS ({sql} RETURNING 1) "
                f"INSERT INTO {events} ({event_columns}) SELECT {event_values} FROM applied"
            )
            for name, sql in transitions.items()
        }
    return ClaimStatements(
        read=f"SELECT {epoch}, {', '.join(holder)} FROM {claims} WHERE {wf} = %s",
        renew=f"UPDATE {claims} SET {expires} = %s WHERE {at_epoch} AND {holder_is}",
        event=f"INSERT INTO {events} ({event_columns}) VALUES ({event_values})",
        transitions=transitions,
        logged=logged,
    )


def claim_statements(vendor: str | None = None) -> ClaimStatements:
    """The statements for a database vendor, the default database's unless named (built on
    first use, then cached)."""
    return _statements(vendor or connection.vendor)
