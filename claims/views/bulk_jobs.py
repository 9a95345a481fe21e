"""Bulk jobs on the pages: the list of jobs, one job with its progress (live while it runs),
its items by outcome a page at a time or as CSV, and pause, resume and abort."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from claims.fleet_clock import fleet_now
from claims.http.csv_export import csv_download
from claims.http.htmx import HtmxHttpRequest
from claims.models import BulkItemOutcome, BulkJob
from claims.selectors.queues.bulk import (
    ITEM_CSV_HEADER,
    bulk_item_page,
    bulk_item_rows,
    bulk_job_active,
    bulk_job_get,
    bulk_job_list,
    bulk_job_percent,
)
from claims.services.bulk import bulk_job_abort, bulk_job_pause, bulk_job_resume

from .bulk_new import bulk_refusal
from .errors import NotFound, Refused
from .inputs import optional_choice, optional_positive_int, reason_param
from .pages import operator_page, render_page, see_other

# The outcomes an item can end with: the items table filters by one.
OUTCOMES = BulkItemOutcome.values
ITEMS_PER_PAGE = 100


def _job(job_id: int) -> BulkJob:
    try:
        return bulk_job_get(job_id)
    except BulkJob.DoesNotExist:
        raise NotFound(f"no bulk job #{job_id}") from None


@require_GET
@operator_page
def bulk_jobs(request: HtmxHttpRequest) -> HttpResponse:
    """Newest first; polls only while a job is queued or running."""
    now, _ = fleet_now()
    context = {"jobs": bulk_job_list(now_ms=now), "refusal": bulk_refusal(request, None)}
    return render_page(request, "claims/bulk_jobs.html", context, fragments=["bulk-jobs-live"])


@require_GET
@operator_page
def bulk_job(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    """The job and its progress (the live fragment, polled while the job may still change
    on its own), and a page of its items after ``cursor``, of one ``outcome`` or all."""
    job = _job(job_id)
    now, _ = fleet_now()
    outcome = optional_choice(request.GET, "outcome", OUTCOMES)
    cursor = optional_positive_int(request.GET, "cursor", what="cursor")
    context: dict[str, Any] = {
        "job": job,
        "as_of_ms": now,
        "active": bulk_job_active(job),
        "percent": bulk_job_percent(job),
        "pending": job.pending_count,
        "refusal": bulk_refusal(request, job.action),
        "outcome": outcome,
        "outcomes": OUTCOMES,
        "cursor": cursor,
    }
    # The live poll swaps the progress only: the items are read for the whole page or
    # their own fragment (a filter, the next page).
    if not request.htmx or request.htmx.target != "bulk-job-live":
        context["page"] = bulk_item_page(
            job.pk, now_ms=now, outcome=outcome, cursor=cursor, limit=ITEMS_PER_PAGE
        )
    return render_page(
        request, "claims/bulk_job.html", context, fragments=["bulk-job-live", "bulk-items"]
    )


@require_GET
@operator_page
def bulk_items_csv(request: HtmxHttpRequest, job_id: int) -> HttpResponseBase:
    """Every item of the job (of one ``outcome``, or all), streamed, cells guarded."""
    job = _job(job_id)
    outcome = optional_choice(request.GET, "outcome", OUTCOMES)
    suffix = f"-{outcome}" if outcome else ""
    rows = bulk_item_rows(job.pk, outcome=outcome)
    return csv_download(ITEM_CSV_HEADER, rows, f"weftboard-bulk-{job.pk}{suffix}.csv")


_DONE = {
    "pause": "paused: it stops after the chunk in flight",
    "resume": "resumed: it carries on from where it stopped",
    "abort": "aborted: its pending items stay untouched",
}


@require_POST
@operator_page
def bulk_job_control(request: HtmxHttpRequest, job_id: int, verb: str) -> HttpResponseBase:
    """Pause, resume or abort (with a reason); the URL names which. Each needs what
    starting the job needed; a status that rules it out is a 409 that changes nothing."""
    job = _job(job_id)
    if refusal := bulk_refusal(request, job.action):
        raise Refused(refusal)
    actor = request.user.get_username()
    if verb == "abort":
        bulk_job_abort(job.pk, actor=actor, reason=reason_param(request.POST.get("reason", "")))
    elif verb == "pause":
        bulk_job_pause(job.pk, actor=actor)
    else:
        bulk_job_resume(job.pk, actor=actor)
    messages.success(request, f"Bulk job #{job.pk} {_DONE[verb]}")
    return see_other(reverse("claims:bulk_job", args=[job.pk]))
