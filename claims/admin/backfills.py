"""The admin's backfill screens: schedule (now or at a time), cancel, live progress.

``BackfillJobAdminBase`` is mixed into claims.admin's read-only BackfillJobAdmin. Every
write needs ``claims.schedule_backfill`` (others see no button and get 403), honours the
read-only switch with its reason, and leaves an admin LogEntry naming the user.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from claims.backfill.jobs import backfill_progress
from claims.conf import read_only_reason
from claims.models import ACTIVE_BACKFILL_STATUSES, BackfillJob, Workflow
from claims.protocol.errors import InvalidInputError
from claims.selectors.queues.backfills import active_backfill
from claims.services.backfills import backfill_cancel, backfill_schedule
from claims.services.errors import (
    BackfillAlreadyActiveError,
    BackfillInThePastError,
    BackfillNotActiveError,
    ReadOnlyError,
)

PROGRESS_POLL_LIMIT = 100
ERROR_SUMMARY_LENGTH = 60


class BackfillScheduleForm(forms.Form):
    run_at = forms.DateTimeField(
        required=False,
        label="Run at (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Leave empty to start now. Times are UTC.",
    )


def _percent(job: BackfillJob) -> int:
    return int(backfill_progress(job) * 100)


def _progress_label(job: BackfillJob) -> str:
    total = "?" if job.total_estimate is None else f"{job.total_estimate:,}"
    return f"{_percent(job)}% · {job.processed:,} / {total}"


class BackfillJobAdminBase(admin.ModelAdmin):
    list_display = [
        "id",
        "status",
        "progress",
        "inserted",
        "fixed",
        "conflicts",
        "requested_by",
        "run_at",
        "finished_at",
        "error_summary",
    ]
    list_filter = ["status"]
    ordering = ["-pk"]
    actions = ["cancel_backfills"]

    def has_schedule_backfill_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("claims.schedule_backfill")

    @admin.display(description="progress")
    def progress(self, job: BackfillJob) -> str:
        percent = _percent(job)
        return format_html(
            '<span style="white-space: nowrap"><progress value="{}" max="100" '
            'data-backfill-job="{}" data-backfill-status="{}" '
            'aria-label="backfill #{} progress">{}%</progress> '
            '<span data-backfill-label="{}">{}</span></span>',
            percent,
            job.pk,
            job.status,
            job.pk,
            percent,
            job.pk,
            _progress_label(job),
        )

    @admin.display(description="error")
    def error_summary(self, job: BackfillJob) -> str:
        if not job.error:
            return ""
        text = job.error
        if len(text) > ERROR_SUMMARY_LENGTH:
            text = text[: ERROR_SUMMARY_LENGTH - 1] + "…"
        return format_html(
            '<span title="{}" style="display: inline-block; min-width: 18em">{}</span>',
            job.error,
            text,
        )

    @admin.action(
        description="Cancel selected scheduled or running backfills",
        permissions=["schedule_backfill"],
    )
    def cancel_backfills(self, request: HttpRequest, queryset: QuerySet[BackfillJob]) -> None:
        if reason := read_only_reason():
            self.message_user(request, f"Nothing was cancelled: {reason}", messages.ERROR)
            return
        cancelled = []
        for job_id in queryset.filter(status__in=ACTIVE_BACKFILL_STATUSES).values_list(
            "pk", flat=True
        ):
            if self._cancel(request, job_id):
                cancelled.append(f"#{job_id}")
        if cancelled:
            self.message_user(request, f"Cancelled backfill {', '.join(cancelled)}.")
        else:
            self.message_user(
                request, "None of the selected backfills is scheduled or running.", messages.WARNING
            )

    def _cancel(self, request: HttpRequest, job_id: int) -> bool:
        try:
            job = backfill_cancel(job_id=job_id, actor=request.user.get_username())
        except ReadOnlyError as error:
            self.message_user(request, f"Nothing was cancelled: {error.reason}", messages.ERROR)
            return False
        except (BackfillNotActiveError, BackfillJob.DoesNotExist) as error:
            self.message_user(request, f"Not cancelled: {error}", messages.WARNING)
            return False
        self.log_change(request, job, "Cancelled the visibility backfill.")
        return True

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("schedule/", wrap(self.schedule_view), name="claims_backfilljob_schedule"),
            path(
                "<int:job_id>/cancel/",
                wrap(require_POST(self.cancel_view)),
                name="claims_backfilljob_cancel",
            ),
            path("progress/", wrap(self.progress_view), name="claims_backfilljob_progress"),
            *super().get_urls(),
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {
            "can_schedule_backfill": self.has_schedule_backfill_permission(request),
            "read_only_reason": read_only_reason(),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)

    def _changelist_url(self) -> str:
        return reverse(f"{self.admin_site.name}:claims_backfilljob_changelist")

    def schedule_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_schedule_backfill_permission(request):
            raise PermissionDenied
        reason = read_only_reason()
        form = BackfillScheduleForm(request.POST if request.method == "POST" else None)
        if request.method == "POST":
            if reason:
                messages.error(request, f"The backfill was not scheduled: {reason}")
            elif form.is_valid():
                try:
                    return self._schedule(request, form.cleaned_data["run_at"])
                except (BackfillInThePastError, InvalidInputError) as error:
                    form.add_error("run_at", str(error))
        active = active_backfill()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Schedule visibility backfill",
            "form": form,
            "read_only_reason": reason,
            "active_job": active,
            "active_percent": None if active is None else _percent(active),
            "workflow_count": Workflow.objects.count(),
            "changelist_url": self._changelist_url(),
        }
        return TemplateResponse(request, "admin/claims/backfilljob/schedule.html", context)

    def _schedule(self, request: HttpRequest, run_at: Any) -> HttpResponse:
        try:
            job = backfill_schedule(run_at=run_at, requested_by=request.user.get_username())
        except BackfillAlreadyActiveError as error:
            messages.error(request, f"The backfill was not scheduled: {error}.")
            return HttpResponseRedirect(self._changelist_url())

        except ReadOnlyError as error:
            messages.error(request, f"The backfill was not scheduled: {error.reason}")
            return HttpResponseRedirect(self._changelist_url())
        self.log_addition(request, job, "Scheduled a visibility backfill.")
        when = "now" if run_at is None else f"for {job.run_at:%Y-%m-%d %H:%M} UTC"
        messages.success(request, f"Visibility backfill #{job.pk} scheduled {when}.")
        return HttpResponseRedirect(self._changelist_url())

    def cancel_view(self, request: HttpRequest, job_id: int) -> HttpResponse:
        if not self.has_schedule_backfill_permission(request):
            raise PermissionDenied
        if self._cancel(request, job_id):
            messages.success(request, f"Cancelled backfill #{job_id}.")
        return HttpResponseRedirect(self._changelist_url())

    def progress_view(self, request: HttpRequest) -> HttpResponse:
        """JSON for the changelist's live progress bars: ``?id=1&id=2``."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        # isdigit() alone admits "²", which int() refuses.
        ids = [
            int(value)
            for value in request.GET.getlist("id")
            if value.isascii() and value.isdigit() and len(value) <= 18
        ]
        jobs = BackfillJob.objects.filter(pk__in=ids[:PROGRESS_POLL_LIMIT]).order_by("-pk")
        return JsonResponse(
            {
                "jobs": [
                    {
                        "id": job.pk,
                        "status": job.status,
                        "status_display": job.get_status_display(),
                        "active": job.status in ACTIVE_BACKFILL_STATUSES,
                        "percent": _percent(job),
                        "label": _progress_label(job),
                        "processed": job.processed,
                        "total_estimate": job.total_estimate,
                        "inserted": job.inserted,
                        "fixed": job.fixed,
                        "conflicts": job.conflicts,
                    }
                    for job in jobs
                ]
            }
        )
