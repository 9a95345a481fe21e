"""One batch's repair of the visibility index against the authoritative Workflow rows.

- missing row: inserted from the workflow's values as the INSERT reads them
  (``INSERT ... SELECT ... ON CONFLICT DO NOTHING``); a row some other write inserted
  first is left alone and counted as a conflict;
- stale row (its status or workflow type differs from the workflow's): updated only if
  both the index row and the workflow still hold the values this batch read (a
  conditional UPDATE comparing them, ``updated_at_ms`` included); otherwise it changed
  under us: counted as a conflict, never overwritten;
- orphan (an index row whose workflow is gone): deleted if the workflow is still absent
  when the DELETE runs; counted as fixed.

``updated_at_ms`` alone does not make a row stale: engines' checkpoint writes move
``Workflow.updated_at_ms`` without touching the index (claims.runtime.writes), so
comparing it would rewrite every running workflow's row on every run and never finish
clean on a busy fleet. A repaired row takes all three values from the workflow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection
from django.db.models import Exists, OuterRef

from claims.models import Workflow, WorkflowVisibility
from claims.store.sql.workflows import INDEXED_FIELDS, workflow_statements

# Keeps every statement's parameter count far below SQLite's and PostgreSQL's limits.
CHUNK = 500


class WorkflowRow(NamedTuple):
    workflow_id: str
    status: str
    workflow_type: str
    updated_at_ms: int


class IndexRow(NamedTuple):
    pk: int
    workflow_id: str
    status: str
    workflow_type: str
    updated_at_ms: int


@dataclass(frozen=True)
class RepairCounts:
    inserted: int = 0
    fixed: int = 0
    conflicts: int = 0


def read_workflows(*, after: str | None, limit: int) -> list[WorkflowRow]:
    """The next ``limit`` workflows in key order after ``after`` (None: from the start)."""
    rows = Workflow.objects.order_by("workflow_id")
    if after is not None:
        rows = rows.filter(workflow_id__gt=after)
    return [WorkflowRow(*values) for values in rows.values_list(*INDEXED_FIELDS)[:limit]]


def read_index_range(*, after: str | None, through: str | None) -> dict[str, IndexRow]:
    """Index rows with ``after < workflow_id <= through`` (None: unbounded on that side)."""
    rows = WorkflowVisibility.objects.all()
    if after is not None:
        rows = rows.filter(workflow_id__gt=after)
    if through is not None:
        rows = rows.filter(workflow_id__lte=through)
    return {
        values[1]: IndexRow(*values)
        for values in rows.values_list("pk", *INDEXED_FIELDS).iterator()
    }


def repair(rows: Sequence[WorkflowRow], index: dict[str, IndexRow]) -> RepairCounts:
    """Bring ``index`` (this batch's key range of the index) in line with ``rows``."""
    present = {row.workflow_id for row in rows}
    missing = [row.workflow_id for row in rows if row.workflow_id not in index]
    stale = [
        (row, index[row.workflow_id])
        for row in rows
        if row.workflow_id in index
        and (index[row.workflow_id].status, index[row.workflow_id].workflow_type)
        != (row.status, row.workflow_type)
    ]
    orphans = [workflow_id for workflow_id in index if workflow_id not in present]

    inserted = _insert_missing(missing)
    conflicts = len(missing) - inserted
    fixed = 0
    for row, entry in stale:
        if _fix_stale(row, entry):
            fixed += 1
        else:
            conflicts += 1
    # An "orphan" whose workflow appeared since the read belongs to that workflow's own
    # (transactional) index write: left alone, and not a conflict.
    fixed += _delete_orphans(orphans)
    return RepairCounts(inserted=inserted, fixed=fixed, conflicts=conflicts)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _insert_missing(workflow_ids: Sequence[str]) -> int:
    if not workflow_ids:
        return 0
    statement = workflow_statements().index_missing
    inserted = 0
    with connection.cursor() as cursor:
        for chunk in _chunks(workflow_ids):
            cursor.execute(statement.for_rows(len(chunk)), list(chunk))
            inserted += max(cursor.rowcount, 0)
    return inserted


def _fix_stale(row: WorkflowRow, entry: IndexRow) -> bool:
    unchanged_workflow = Workflow.objects.filter(
        workflow_id=row.workflow_id,
        status=row.status,
        workflow_type=row.workflow_type,
        updated_at_ms=row.updated_at_ms,
    )
    updated = (
        WorkflowVisibility.objects.filter(
            pk=entry.pk,
            status=entry.status,
            workflow_type=entry.workflow_type,
            updated_at_ms=entry.updated_at_ms,
        )
        .filter(Exists(unchanged_workflow))
        .update(
            status=row.status,
            workflow_type=row.workflow_type,
            updated_at_ms=row.updated_at_ms,
        )
    )
    return updated == 1


def _delete_orphans(workflow_ids: Sequence[str]) -> int:
    deleted = 0
    workflow_exists = Exists(Workflow.objects.filter(workflow_id=OuterRef("workflow_id")))
    for chunk in _chunks(workflow_ids):
        count, _ = (
            WorkflowVisibility.objects.filter(workflow_id__in=chunk)
            .filter(~workflow_exists)
            .delete()
        )
        deleted += count
    return deleted
