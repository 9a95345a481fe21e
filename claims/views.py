"""Operator pages: thin views over claims.selectors."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from claims import selectors
from weftboard.http import HtmxHttpRequest


@require_GET
@login_required
def overview(request: HtmxHttpRequest) -> HttpResponse:
    """The full page, or only its counts fragment for an HTMX request."""
    template = "claims/overview.html"
    if request.htmx:
        template += "#counts"
    status_counts = selectors.workflow_status_counts()
    context = {
        "status_counts": status_counts,
        "workflow_total": sum(status_counts.values()),
        "holders": selectors.claim_holder_counts(),
    }
    return render(request, template, context)
