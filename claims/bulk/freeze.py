"""Freezing a job: the selected workflows and their epochs at this moment, copied into the
job's items by one INSERT ... SELECT (one consistent read, set-based, never row by row).

The SELECT is the one Django compiles for the selection (claims.bulk.selection)."""

from __future__ import annotations

from django.db.models import CharField, IntegerField, Value

from claims.models import BulkItemOutcome, BulkJob, BulkJobItem
from claims.query import Query
from claims.selectors.query import QueryContext

from .insert_select import insert_select
from .selection import selection


def freeze_items(job: BulkJob, query: Query, ctx: QueryContext, limit: int) -> int:
    """Insert at most ``limit`` + 1 items (one more tells the caller there were too many)
    and return how many were inserted. The caller holds the transaction."""
    rows = (
        selection(job.list_name, query, ctx)
        .annotate(
            bulk_job=Value(job.pk, output_field=IntegerField()),
            bulk_outcome=Value(BulkItemOutcome.PENDING.value, output_field=CharField()),
            bulk_detail=Value("", output_field=CharField()),
        )
        .values_list("bulk_job", "workflow_id", "item_epoch", "bulk_outcome", "bulk_detail")
    )[: limit + 1]
    names = ("job", "workflow_id", "frozen_epoch", "outcome", "detail")
    return insert_select(BulkJobItem, names, rows)
