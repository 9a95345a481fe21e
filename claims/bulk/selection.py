"""The workflows a bulk job's query selects, from the listing it was written on, each with
what the action's rules and the freeze need: its claim epoch (0: no claim row), its
workflow status (None: the workflow row is gone) and whether its claim has a holder."""

from __future__ import annotations

from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce

from claims.models import BulkList, Workflow, WorkflowClaim
from claims.models.claims import HOLDER_PRESENT
from claims.query import Query
from claims.selectors.query import QueryContext, claim_query_condition, workflow_query_condition

ITEM_FIELDS = ("workflow_id", "item_epoch", "item_status", "item_held")


def selection(list_name: str, query: Query, ctx: QueryContext) -> QuerySet:
    """The selected rows in workflow id order, annotated ``item_epoch``, ``item_status``
    and ``item_held``: one statement, whatever is done with it."""
    if list_name == BulkList.CLAIMS:
        return (
            WorkflowClaim.objects.filter(claim_query_condition(query, ctx))
            .annotate(
                item_epoch=F("epoch"),
                item_status=Subquery(
                    Workflow.objects.filter(pk=OuterRef("workflow_id")).values("status")[:1]
                ),
                item_held=ExpressionWrapper(HOLDER_PRESENT, output_field=BooleanField()),
            )
            .order_by("workflow_id")
        )
    claim = WorkflowClaim.objects.filter(pk=OuterRef("workflow_id"))
    return (
        Workflow.objects.filter(workflow_query_condition(query, ctx))
        .annotate(
            item_epoch=Coalesce(Subquery(claim.values("epoch")[:1]), Value(0)),
            item_status=F("status"),
            item_held=Exists(claim.filter(HOLDER_PRESENT)),
        )
        .order_by("workflow_id")
    )
