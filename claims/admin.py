"""Admin: every table browsable. Claim state changes only through the protocol's CAS,
so the claim-bearing models are read-only here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from claims import models


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.Workflow)
class WorkflowAdmin(ReadOnlyAdmin):
    list_display = ["workflow_id", "workflow_type", "status", "created_at_ms", "updated_at_ms"]
    list_filter = ["status", "workflow_type"]
    search_fields = ["workflow_id"]
    show_full_result_count = False


@admin.register(models.WorkflowVisibility)
class WorkflowVisibilityAdmin(ReadOnlyAdmin):
    list_display = ["workflow_id", "status", "workflow_type", "updated_at_ms"]
    list_filter = ["status", "workflow_type"]
    search_fields = ["workflow_id"]
    show_full_result_count = False


@admin.register(models.VisibilityWatermark)
class VisibilityWatermarkAdmin(ReadOnlyAdmin):
    list_display = ["version", "built_at_ms"]


@admin.register(models.WorkflowClaim)
class WorkflowClaimAdmin(ReadOnlyAdmin):
    list_display = [
        "workflow_id",
        "epoch",
        "holder_engine_id",
        "holder_epoch",
        "holder_expires_at_ms",
        "holder_claimed_at_ms",
    ]
    search_fields = ["workflow_id", "holder_engine_id"]
    show_full_result_count = False


@admin.register(models.OwnershipModeMarker)
class OwnershipModeMarkerAdmin(ReadOnlyAdmin):
    list_display = ["mode", "established_at_ms"]


@admin.register(models.Engine)
class EngineAdmin(ReadOnlyAdmin):
    list_display = [
        "engine_id",
        "hostname",
        "pid",
        "status",
        "held_count",
        "heartbeat_at_ms",
        "clock_skew_ms",
        "version",
    ]
    list_filter = ["status", "hostname"]
    search_fields = ["engine_id", "hostname"]


@admin.register(models.PendingRedrive)
class PendingRedriveAdmin(ReadOnlyAdmin):
    list_display = ["workflow_id", "engine_id", "epoch", "attempts", "last_failed_at_ms"]
    search_fields = ["workflow_id", "engine_id"]


@admin.register(models.ClaimCounter)
class ClaimCounterAdmin(ReadOnlyAdmin):
    list_display = ["engine_id", "name", "value"]
    list_filter = ["name"]
    search_fields = ["engine_id"]


@admin.register(models.ReclaimCursor)
class ReclaimCursorAdmin(ReadOnlyAdmin):
    list_display = ["name", "last_workflow_id", "wraps", "scanned_total", "updated_by"]


@admin.register(models.ClaimEvent)
class ClaimEventAdmin(ReadOnlyAdmin):
    list_display = [
        "at_ms",
        "workflow_id",
        "kind",
        "epoch_before",
        "epoch_after",
        "engine_id",
        "actor",
    ]
    list_filter = ["kind"]
    search_fields = ["workflow_id", "engine_id", "actor"]
    show_full_result_count = False


@admin.register(models.BackfillJob)
class BackfillJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "status", "requested_by", "run_at", "processed", "inserted", "fixed"]
    list_filter = ["status"]
