"""The claims table: filters, search and sort in the URL, keyset pages, live countdowns,
row actions, and the jump box that goes straight to a workflow."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.models import BulkList
from claims.protocol.states import CLAIM_STATES
from claims.selectors import claim_list
from claims.selectors.claims.conditions import CLAIM_FILTERS
from claims.selectors.claims.listing import ClaimPage, workflow_id_known
from claims.selectors.claims.sorting import CURSOR_MAX_LENGTH, SORT_KEYS, ClaimSort
from claims.selectors.engines.listing import live_engine_statuses

from .bulk_new import act_on_all_link
from .inputs import optional_choice, optional_prefix, optional_text, workflow_id_param
from .pages import operator_page, render_page
from .permissions import FORCE_CLAIM, action_refusal
from .query_text import claim_filters_as_query, query_box, query_input
from .saved_views import saved_views

PAGE_SIZE = 50
# With no state in the URL the page shows what needs attention; "all" shows every row.
DEFAULT_SCOPE = "attention"
# The table's columns in order, each with the sort it offers.
COLUMNS = (
    ("Workflow", "workflow_id"),
    ("State", "state"),
    ("Epoch", "epoch"),
    ("Holder engine", "holder"),
    ("Claimed", "claimed_at"),
    ("Expires", "expires_at"),
)


@dataclass(frozen=True)
class SortHeader:
    label: str
    field: str
    next_sort: str  # what a click on the heading sorts by: this column, or it reversed
    aria_sort: str | None  # "ascending" / "descending" on the column sorted by


def sort_headers(sort: ClaimSort) -> list[SortHeader]:
    headers = []
    for label, field in COLUMNS:
        active = sort.field == field
        next_sort = f"-{field}" if active and not sort.descending else field
        aria = None if not active else "descending" if sort.descending else "ascending"
        headers.append(SortHeader(label, field, next_sort, aria))
    return headers


def _jump(value: str) -> HttpResponseRedirect:
    """The workflow's page for an exact id; otherwise a search for it among every claim."""
    workflow_id = workflow_id_param(value)
    if workflow_id_known(workflow_id):
        return HttpResponseRedirect(reverse("claims:workflow", args=[workflow_id]))
    query = urlencode({"state": "all", "q": workflow_id})
    return HttpResponseRedirect(f"{reverse('claims:claims')}?{query}&jumped=1")


@require_GET
@operator_page
def claims(request: HtmxHttpRequest) -> HttpResponse:
    """One query for the table whatever the number of claims (keyset on the sort's index)."""
    params = request.GET
    jump = params.get("jump", "").strip()
    if jump:
        return _jump(jump)
    state = optional_choice(params, "state", CLAIM_FILTERS)
    engine = optional_text(params, "engine")
    prefix = optional_prefix(params)
    search = optional_prefix(params, "q")
    sort = ClaimSort.parse(optional_choice(params, "sort", SORT_KEYS))
    cursor = optional_text(params, "cursor", max_length=CURSOR_MAX_LENGTH)
    typed = query_input(params)
    # Under a query the query decides; without one the page shows what needs attention.
    scope = state or ("all" if typed.text else DEFAULT_SCOPE)
    now, timing = fleet_now()
    if typed.error is None:
        page = claim_list(
            now_ms=now,
            timing=timing,
            state=scope,
            engine=engine,
            prefix=prefix,
            search=search,
            sort=sort.key,
            cursor=cursor,
            limit=PAGE_SIZE,
            query=typed.query,
        )
    else:  # the query box says what is wrong; nothing is listed under a query not understood
        page = ClaimPage([], None, now, sort.key)
    picked = claim_filters_as_query(state=scope, engine=engine, prefix=prefix, search=search)
    context = {
        "page": page,
        "timing": timing,
        "states": CLAIM_STATES,
        "engines": live_engine_statuses(),
        # Under a query with no state picked the page shows every row: the dropdown says so.
        "filters": {
            "state": state or (scope if typed.text else None),
            "engine": engine,
            "prefix": prefix,
            "q": search,
        },
        **query_box(typed, picked, [] if sort.is_default else [("sort", sort.key)]),
        **saved_views(request, BulkList.CLAIMS),
        "scope": scope,
        "sort": sort,
        "headers": sort_headers(sort),
        "filtered": bool(state or engine or prefix or search or typed.text or not sort.is_default),
        "jumped": bool(params.get("jumped")),
        "cursor": cursor,
        "refusal": action_refusal(request.user, FORCE_CLAIM),
        "act_on_all": act_on_all_link("claims", picked, typed),
    }
    status = 400 if typed.error is not None else 200
    return render_page(
        request, "claims/claims.html", context, fragments=["claims-table"], status=status
    )
