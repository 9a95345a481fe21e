"""Work waiting on the fleet: pending re-drives, and visibility backfills with progress bars."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.selectors.queues.backfills import backfill_list
from claims.selectors.queues.redrives import redrive_list

from .inputs import optional_text
from .pages import operator_page, render_page


@require_GET
@operator_page
def redrives(request: HtmxHttpRequest) -> HttpResponse:
    engine = optional_text(request.GET, "engine")
    now, timing = fleet_now()
    context = {"r": redrive_list(now_ms=now, timing=timing, engine=engine), "engine": engine}
    return render_page(request, "claims/redrives.html", context, fragments=["redrives-live"])


@require_GET
@operator_page
def backfills(request: HtmxHttpRequest) -> HttpResponse:
    """Polls only while a job is scheduled or running (the fragment drops its trigger after)."""
    now, _ = fleet_now()
    context = {"b": backfill_list(now_ms=now)}
    return render_page(request, "claims/backfills.html", context, fragments=["backfills-live"])
