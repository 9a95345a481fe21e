"""The reclaim scan: cursor progress over the workflow keyspace and candidates by source."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.selectors.fleet.reclaim import SOURCES, reclaim_progress

from .pages import operator_page, render_page


@require_GET
@operator_page
def reclaim(request: HtmxHttpRequest) -> HttpResponse:
    now, timing = fleet_now()
    context = {
        "r": reclaim_progress(now_ms=now, timing=timing),
        "sources": SOURCES,
        "timing": timing,
    }
    return render_page(request, "claims/reclaim.html", context, fragments=["reclaim-live"])
