"""What a bulk action would do, before anything is frozen: how many workflows the query
selects, how many the action's rules would refuse and why, and the first of them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count

from claims.protocol.timing import ClaimTiming
from claims.query import Query
from claims.selectors.query import QueryContext
from claims.selectors.query.budget import query_time_limit

from .actions import refusal
from .selection import ITEM_FIELDS, selection

PREVIEW_ROWS = 20


def max_items() -> int:
    """The most items one job may freeze (WEFTBOARD_BULK_MAX_ITEMS)."""
    return int(settings.WEFTBOARD_BULK_MAX_ITEMS)


@dataclass(frozen=True)
class PreviewRow:
    workflow_id: str
    epoch: int
    status: str | None
    held: bool
    refusal: str | None


@dataclass(frozen=True)
class BulkPreview:
    count: int
    refused: dict[str, int]  # the rule's words -> how many it would refuse
    first: list[PreviewRow]
    as_of_ms: int

    @property
    def acting(self) -> int:
        """How many the action would act on if nothing moved before it ran."""
        return self.count - sum(self.refused.values())

    @property
    def too_many(self) -> bool:
        return self.count > max_items()


def bulk_preview(
    list_name: str,
    query: Query,
    action: str,
    *,
    now_ms: int,
    timing: ClaimTiming,
    rows: int = PREVIEW_ROWS,
) -> BulkPreview:
    """Two statements under the query budget (QueryTooSlowError past it): the counts, one
    per (workflow status, held) pair the rules judge, and the first ``rows`` rows."""
    ctx = QueryContext(now_ms, timing)
    with query_time_limit(query):
        selected = selection(list_name, query, ctx)
        groups = selected.order_by().values("item_status", "item_held").annotate(n=Count("pk"))
        refused: Counter[str] = Counter()
        count = 0
        for group in groups:
            count += group["n"]
            rule = refusal(action, group["item_status"], bool(group["item_held"]))
            if rule is not None:
                refused[rule] += group["n"]
        first = [
            PreviewRow(workflow_id, epoch, status, bool(held), refusal(action, status, held))
            for workflow_id, epoch, status, held in selected.values_list(*ITEM_FIELDS)[:rows]
        ]
    return BulkPreview(count, dict(refused.most_common()), first, now_ms)
