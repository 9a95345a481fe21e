"""The overview: fleet health, outcome counters and alerts, refreshed as one fragment."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.protocol.constants import OUTCOMES
from claims.selectors.overview import overview as overview_snapshot
from weftboard.http import HtmxHttpRequest

from .pages import operator_page, render_page


@require_GET
@operator_page
def overview(request: HtmxHttpRequest) -> HttpResponse:
    """The full page, or its live fragment for an HTMX poll."""
    now, timing = fleet_now()
    snapshot = overview_snapshot(now_ms=now, timing=timing)
    context = {
        "o": snapshot,
        "outcomes": [(name, snapshot.counters.get(name, 0)) for name in OUTCOMES],
        "workflow_total": sum(snapshot.workflows_by_status.values()),
    }
    return render_page(request, "claims/overview.html", context, fragments=["overview-live"])
