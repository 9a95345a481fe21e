"""The engines of the fleet, and one engine: heartbeat, skew, passes, counters, holdings."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.conf import DAY_MS, engine_history_ms
from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.models import EngineStatus
from claims.selectors.engines.actions import engine_events
from claims.selectors.engines.listing import engine_detail, engine_list
from claims.selectors.engines.liveness import silent_before_ms
from claims.selectors.fleet.history import DEFAULT_WINDOW, HISTORY_WINDOWS_MS, engine_history

from .errors import NotFound
from .inputs import engine_id_param, optional_choice
from .pages import operator_page, render_page


@require_GET
@operator_page
def engines(request: HtmxHttpRequest) -> HttpResponse:
    """Live engines first; four queries whatever the fleet's size."""
    status = optional_choice(request.GET, "status", EngineStatus.values)
    now, timing = fleet_now()
    context = {
        "engines": engine_list(now_ms=now, timing=timing, status=status),
        "statuses": EngineStatus.values,
        "status": status,
        "timing": timing,
        "silent_after_ms": now - silent_before_ms(now, timing),
        "history_days": engine_history_ms() // DAY_MS,
    }
    return render_page(request, "claims/engines.html", context, fragments=["engines-live"])


@require_GET
@operator_page
def engine(request: HtmxHttpRequest, engine_id: str) -> HttpResponse:
    engine_id = engine_id_param(engine_id)
    window = optional_choice(request.GET, "history", HISTORY_WINDOWS_MS) or DEFAULT_WINDOW
    now, timing = fleet_now()
    detail = engine_detail(engine_id, now_ms=now, timing=timing)
    if detail is None:
        raise NotFound(f"no engine with id {engine_id!r}")
    context = {
        "e": detail,
        "timing": timing,
        "h": engine_history(engine_id, now_ms=now, window=window),
        "history_windows": list(HISTORY_WINDOWS_MS),
        "engine_events": engine_events(engine_id),
    }
    return render_page(request, "claims/engine.html", context, fragments=["engine-live"])
