"""The overview: fleet health, outcome counters and alerts, refreshed as one fragment."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.protocol.constants import OUTCOMES
from claims.selectors.fleet.history import DEFAULT_WINDOW, HISTORY_WINDOWS_MS, fleet_history
from claims.selectors.fleet.overview import overview as overview_snapshot

from .inputs import optional_choice
from .pages import operator_page, render_page


@require_GET
@operator_page
def overview(request: HtmxHttpRequest) -> HttpResponse:
    """The full page, or its live fragment for an HTMX poll."""
    now, timing = fleet_now()
    window = optional_choice(request.GET, "history", HISTORY_WINDOWS_MS) or DEFAULT_WINDOW
    snapshot = overview_snapshot(now_ms=now, timing=timing)
    history = fleet_history(now_ms=now, window=window)
    rates = history.latest_rates
    context = {
        "o": snapshot,
        "h": history,
        "history_windows": list(HISTORY_WINDOWS_MS),
        # The rate under each counter comes from the history, so a new tab shows it at once.
        "outcomes": [(name, snapshot.counters.get(name, 0), rates.get(name)) for name in OUTCOMES],
        "workflow_total": sum(snapshot.workflows_by_status.values()),
    }
    return render_page(request, "claims/overview.html", context, fragments=["overview-live"])
