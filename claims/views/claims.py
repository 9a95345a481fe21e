"""The claims table: filters in the URL, keyset pages, live countdowns, row actions."""

from __future__ import annotations

from typing import cast

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.protocol.states import CLAIM_STATES, ClaimState
from claims.selectors import claim_list
from claims.selectors.engines import live_engine_statuses
from weftboard.http import HtmxHttpRequest

from .inputs import optional_choice, optional_prefix, optional_text
from .pages import operator_page, render_page
from .permissions import FORCE_CLAIM, action_refusal

PAGE_SIZE = 50


@require_GET
@operator_page
def claims(request: HtmxHttpRequest) -> HttpResponse:
    """One query for the table whatever the number of claims (keyset on workflow id)."""
    params = request.GET
    state = cast(ClaimState | None, optional_choice(params, "state", CLAIM_STATES))
    engine = optional_text(params, "engine")
    prefix = optional_prefix(params)
    cursor = optional_prefix(params, "cursor")
    now, timing = fleet_now()
    page = claim_list(
        now_ms=now,
        timing=timing,
        state=state,
        engine=engine,
        prefix=prefix,
        cursor=cursor,
        limit=PAGE_SIZE,
    )
    engines = live_engine_statuses()
    context = {
        "page": page,
        "timing": timing,
        "states": CLAIM_STATES,
        "engines": engines,
        "filters": {"state": state, "engine": engine, "prefix": prefix},
        "filtered": bool(state or engine or prefix),
        "cursor": cursor,
        "refusal": action_refusal(request.user, FORCE_CLAIM),
    }
    return render_page(request, "claims/claims.html", context, fragments=["claims-table"])
