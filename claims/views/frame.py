"""Fragments of the page frame that refresh on their own: the engine-floor alert, so a
fleet that stops while a page is open says so within one refresh, not at the next load."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from claims.context_processors import EngineFloor
from claims.http.htmx import HtmxHttpRequest

from .pages import operator_page


@require_GET
@operator_page
def engine_floor(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "claims/_engine_floor.html", {"floor": EngineFloor().alert})
