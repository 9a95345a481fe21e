"""The audit log: every claim transition and operator action, filterable, exportable as CSV."""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseBase
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.csv_export import csv_download
from claims.http.htmx import HtmxHttpRequest
from claims.models import ClaimEventKind
from claims.selectors.audit import (
    CSV_HEADER,
    CSV_MAX_ROWS,
    AuditFilters,
    audit_page,
    audit_rows,
    operator_records,
)
from claims.selectors.engines.actions import engine_events

from .inputs import (
    optional_choice,
    optional_positive_int,
    optional_prefix,
    optional_text,
    utc_range_ms,
)
from .pages import operator_page, render_page


def _filters(request: HtmxHttpRequest) -> AuditFilters:
    params = request.GET
    since_ms, until_ms = utc_range_ms(params)
    return AuditFilters(
        kind=optional_choice(params, "kind", ClaimEventKind.values),
        engine=optional_text(params, "engine"),
        actor=optional_text(params, "actor", max_length=150),
        prefix=optional_prefix(params),
        since_ms=since_ms,
        until_ms=until_ms,
        operator_only=params.get("operator") == "1",
        bulk_job=optional_positive_int(params, "bulk_job", what="bulk_job"),
    )


@require_GET
@operator_page
def audit(request: HtmxHttpRequest) -> HttpResponseBase:
    """Newest first, keyset on the event id; ``?format=csv`` streams every match instead."""
    filters = _filters(request)
    if request.GET.get("format") == "csv":
        return csv_download(CSV_HEADER, audit_rows(filters), "weftboard-audit.csv")
    cursor = optional_positive_int(request.GET, "cursor", what="cursor")
    now, _ = fleet_now()
    context = {
        "page": audit_page(filters, now_ms=now, cursor=cursor),
        "filters": filters,
        "kinds": ClaimEventKind.values,
        "cursor": cursor,
        "csv_max_rows": CSV_MAX_ROWS,
        # Drains and undrains: operator actions on a whole engine, not on one claim; only
        # the full page shows them, so the live fragment's poll does not read them.
        "engine_events": [] if request.htmx else engine_events(filters.engine),
        # Changes to saved queries and bulk jobs (AuditEntry), the full page's too.
        "operator_records": [] if request.htmx else operator_records(),
    }
    response: HttpResponse = render_page(
        request, "claims/audit.html", context, fragments=["audit-live"]
    )
    return response
