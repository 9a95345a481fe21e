"""Admin: every table browsable. Claim state changes only through the protocol's CAS,
so the claim-bearing models are read-only here.

Django's autodiscovery imports this package, so every registration is made here;
the backfill's screens are in ``backfills``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from claims import models
from claims.protocol.errors import InvalidInputError
from claims.protocol.text import check_identifier
from claims.services.tokens import api_token_mint, api_tokens_revoke
from claims.store.rows import EVENT_TRANSITION_FIELDS, HOLDER_COLUMNS

from .backfills import BackfillJobAdminBase


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class LargeTableAdmin(ReadOnlyAdmin):
    """For the tables that grow with the workflows: the changelist does not count the whole
    table on every page."""

    show_full_result_count = False


@admin.register(models.Workflow)
class WorkflowAdmin(LargeTableAdmin):
    list_display = ["workflow_id", "workflow_type", "status", "created_at_ms", "updated_at_ms"]
    list_filter = ["status", "workflow_type"]
    search_fields = ["workflow_id"]


@admin.register(models.WorkflowVisibility)
class WorkflowVisibilityAdmin(LargeTableAdmin):
    list_display = ["workflow_id", "status", "workflow_type", "updated_at_ms"]
    list_filter = ["status", "workflow_type"]
    search_fields = ["workflow_id"]


@admin.register(models.VisibilityWatermark)
class VisibilityWatermarkAdmin(ReadOnlyAdmin):
    list_display = ["version", "built_at_ms"]


@admin.register(models.WorkflowClaim)
class WorkflowClaimAdmin(LargeTableAdmin):
    list_display = ["workflow_id", "epoch", *HOLDER_COLUMNS]
    search_fields = ["workflow_id", "holder_engine_id"]


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
class ClaimEventAdmin(LargeTableAdmin):
    list_display = ["at_ms", *EVENT_TRANSITION_FIELDS]
    list_filter = ["kind"]
    search_fields = ["workflow_id", "engine_id", "actor"]


@admin.register(models.BackfillJob)
class BackfillJobAdmin(BackfillJobAdminBase, ReadOnlyAdmin):
    """Jobs are read-only rows; scheduling and cancelling go through claims.services.backfills."""


@admin.register(models.BulkJob)
class BulkJobAdmin(ReadOnlyAdmin):
    """Jobs are read-only rows: they are created, paused, resumed and aborted through
    claims.services.bulk (the pages and the API), which check permissions and audit."""

    list_display = [
        "id",
        "action",
        "list_name",
        "status",
        "frozen_count",
        "done_count",
        "moved_count",
        "refused_count",
        "requested_by",
        "created_at_ms",
    ]
    list_filter = ["status", "action"]
    search_fields = ["query", "requested_by", "reason"]


@admin.register(models.SavedQuery)
class SavedQueryAdmin(ReadOnlyAdmin):
    """Read-only rows: saved through claims.services.saved_queries (the list pages and the
    API), which keeps them to their owner, checks sharing and writes operator records."""

    list_display = ["name", "list_name", "owner", "shared", "query", "updated_at_ms"]
    list_filter = ["list_name", "shared"]
    search_fields = ["name", "query", "owner__username"]
    list_select_related = ["owner"]


@admin.register(models.AuditEntry)
class AuditEntryAdmin(LargeTableAdmin):
    """Operator records are what happened: never changed, never deleted here."""

    list_display = ["at_ms", "subject", "subject_id", "action", "actor", "reason"]
    list_filter = ["subject", "action"]
    search_fields = ["actor", "reason"]


@admin.register(models.BulkJobItem)
class BulkJobItemAdmin(LargeTableAdmin):
    list_display = ["job", "workflow_id", "frozen_epoch", "outcome", "epoch_after", "detail"]
    list_filter = ["outcome"]
    search_fields = ["workflow_id"]


class ApiTokenForm(forms.ModelForm):
    """The token's name follows the one input rule for identifiers (claims.protocol.text)."""

    def clean_name(self) -> str:
        try:
            return check_identifier(
                self.cleaned_data["name"], what="a token's name", max_length=100
            ).strip()
        except InvalidInputError as error:
            raise forms.ValidationError(str(error)) from error


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Adding a token shows its secret once, in the message after save; only its hash is kept.

    A token acts with its user's permissions, so only a superuser may mint one for another
    user; everyone else mints, sees and revokes only their own. Django's admin history
    records every add, change and revocation with the user who did it.
    """

    form = ApiTokenForm
    # Where save_model leaves a new secret for response_add: on the request, never stored.
    _secret_key = "_weftboard_new_token_secret"

    list_display = [
        "name",
        "user",
        "prefix",
        "scope",
        "created_at",
        "expires_at",
        "state",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["scope", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    actions = ["revoke"]

    @admin.display(description="state")
    def state(self, obj: models.ApiToken) -> str:
        if obj.revoked_at is not None:
            return "revoked"
        if obj.expires_at is not None and obj.expires_at <= timezone.now():
            return "expired"
        return "live"

    def get_queryset(self, request: HttpRequest) -> QuerySet[models.ApiToken]:
        tokens = super().get_queryset(request)
        return tokens if request.user.is_superuser else tokens.filter(user=request.user)

    def _owns(self, request: HttpRequest, obj: Any) -> bool:
        return obj is None or request.user.is_superuser or obj.user_id == request.user.pk

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._owns(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._owns(request, obj)

    # A token's powers are fixed at creation: mint a new one rather than widen an old one.
    # Only the name stays editable.
    _fixed_fields = (
        "user",
        "scope",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            if request.user.is_superuser:
                return ("name", "user", "scope", "expires_at")
            return ("name", "scope", "expires_at")
        return ("name", *self._fixed_fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return () if obj is None else self._fixed_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        if not request.user.is_superuser:
            obj.user = request.user  # the form has no user field; never trust a posted one
        setattr(request, self._secret_key, api_token_mint(obj))

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        """Show the secret in this response, not after a redirect: a message that outlives its
        request is kept in the messages cookie, and the secret must not travel there."""
        secret = getattr(request, self._secret_key)
        messages.warning(
            request,
            f"The secret of token “{obj.name}” is {secret} — copy it now: "
            "it is not stored and will not be shown again.",
        )
        context = {
            **self.admin_site.each_context(request),
            "title": f"API token “{obj.name}” created",
            "opts": self.opts,
        }
        return TemplateResponse(request, "admin/base_site.html", context)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[models.ApiToken]) -> None:
        # The changelist's queryset is already the user's own tokens unless superuser.
        live = list(queryset.filter(revoked_at__isnull=True))
        revoked = api_tokens_revoke(queryset)
        for token in live:
            self.log_change(request, token, "Revoked.")
        self.message_user(request, f"Revoked {revoked} token(s).", messages.SUCCESS)
