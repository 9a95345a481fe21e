"""A term on a workflow's own columns (its id, type, status, times and failure), as a
condition on Workflow rows."""

from __future__ import annotations

from django.db.models import Q
from django.db.models.fields.json import KT

from claims.query import Term

from .context import QueryContext
from .terms import column_condition

WORKFLOW_COLUMNS = {
    "id": "workflow_id",
    "type": "workflow_type",
    "status": "status",
    "created": "created_at_ms",
    "updated": "updated_at_ms",
}
WORKFLOW_FIELDS = frozenset({*WORKFLOW_COLUMNS, "failure"})


def workflow_term(term: Term, ctx: QueryContext) -> Q:
    if term.field == "failure":
        # The exception type of a failed workflow, as text (null without a failure).
        return column_condition(KT("failure__type"), term, ctx)
    return column_condition(WORKFLOW_COLUMNS[term.field], term, ctx)
