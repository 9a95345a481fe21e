"""The workflows page: filters by type, status and time in the URL, sorts, keyset pages,
and the count per status, live like the other lists."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.models import BulkList, WorkflowStatus
from claims.selectors.workflows.listing import (
    COUNT_CAP,
    CURSOR_MAX_LENGTH,
    TIME_FIELDS,
    WORKFLOW_SORTS,
    TimeField,
    WorkflowFilters,
    WorkflowPage,
    WorkflowSort,
    workflow_list,
)
from claims.workflow_types import WORKFLOW_TYPE_MAX_LENGTH, registered_types

from .bulk_new import act_on_all_link
from .inputs import optional_choice, optional_text, utc_range_ms
from .pages import operator_page, render_page
from .query_text import query_box, query_input, workflow_filters_as_query
from .saved_views import saved_views

PAGE_SIZE = 50


def workflow_filters(request: HtmxHttpRequest) -> WorkflowFilters:
    """The filters in the URL, each checked; bad input raises BadInput (400)."""
    params = request.GET
    since_ms, until_ms = utc_range_ms(params)
    return WorkflowFilters(
        workflow_type=optional_text(params, "type", max_length=WORKFLOW_TYPE_MAX_LENGTH),
        status=optional_choice(params, "status", WorkflowStatus.values),
        time_field=cast(TimeField, optional_choice(params, "time", TIME_FIELDS) or "updated"),
        since_ms=since_ms,
        until_ms=until_ms,
        sort=cast(WorkflowSort, optional_choice(params, "sort", WORKFLOW_SORTS) or "updated"),
    )


@require_GET
@operator_page
def workflows(request: HtmxHttpRequest) -> HttpResponse:
    """Two queries whatever the number of workflows: the page and the counts per status
    (from beat's fresh snapshot when no time filter narrows them)."""
    filters = workflow_filters(request)
    typed = query_input(request.GET)
    cursor = optional_text(request.GET, "cursor", max_length=CURSOR_MAX_LENGTH)
    now, timing = fleet_now()
    if typed.error is None:
        # A bad cursor: 400.
        selection = replace(filters, query=typed.query)
        page = workflow_list(selection, now_ms=now, cursor=cursor, limit=PAGE_SIZE, timing=timing)
    else:  # the query box says what is wrong; nothing is listed under a query not understood
        page = WorkflowPage([], None, dict.fromkeys(WorkflowStatus.values, 0), now)
    picked = workflow_filters_as_query(filters)
    keeps: list[tuple[str, str]] = [] if filters.sort == "updated" else [("sort", filters.sort)]
    context = {
        "page": page,
        "filters": filters,
        "statuses": WorkflowStatus.values,
        "sorts": WORKFLOW_SORTS,
        "time_fields": TIME_FIELDS,
        "types": registered_types(),
        **query_box(typed, picked, keeps),
        **saved_views(request, BulkList.WORKFLOWS),
        "filtered": bool(
            typed.text
            or filters.workflow_type
            or filters.status
            or filters.since_ms is not None
            or filters.until_ms is not None
        ),
        "cursor": cursor,
        "count_cap": f"{COUNT_CAP:,}",
        "act_on_all": act_on_all_link("workflows", picked, typed),
    }
    status = 400 if typed.error is not None else 200
    return render_page(
        request, "claims/workflows.html", context, fragments=["workflows-live"], status=status
    )
