"""A query over the workflows (the workflows listing): the workflow's own columns, and the
claim fields (epoch, engine, times, state) through one probe of its claim row's key. A
workflow never claimed has no claim row, so no value for those fields."""

from __future__ import annotations

from django.db.models import OuterRef, Q

from claims.models import WorkflowClaim
from claims.query import Query, Term

from .claims import claim_term
from .context import QueryContext
from .terms import combine, exists_in
from .workflow_columns import WORKFLOW_FIELDS, workflow_term


def workflow_query_condition(query: Query, ctx: QueryContext) -> Q:
    """The workflows ``query`` selects, as a condition on Workflow."""
    return combine(query, ctx, _term)


def _term(term: Term, ctx: QueryContext) -> Q:
    if term.field in WORKFLOW_FIELDS:
        return workflow_term(term, ctx)
    claim = WorkflowClaim.objects.filter(pk=OuterRef("workflow_id"))
    return exists_in(claim, claim_term(term, ctx))
