"""Every route x every role x read-only mode on and off → the status it must answer.

One table: the pages, their fragments and actions, the CSV export, every API route, the
OpenAPI page, /metrics, and each admin view of the models we register. A route the URL
configuration serves that no row names fails the completeness test, so a new route
cannot ship without its line here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from claims.fleet_clock import fleet_clock
from claims.models import (
    ApiToken,
    BackfillJob,
    ClaimEvent,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.services.tokens import api_token_mint

pytestmark = pytest.mark.django_db

ROLES = (
    "anonymous",
    "no-permission",
    "operator",
    "read-token",
    "write-token",
    "staff",
    "superuser",
)
OPERATOR_PERMISSIONS = (
    "force_claim",
    "cancel_workflow",
    "suspend_workflow",
    "add_workflow",
    "schedule_backfill",
)
# Roles a page sees as signed out: pages take a session only, never a bearer token.
NO_SESSION = {"anonymous", "read-token", "write-token"}
STAFF = {"staff", "superuser"}
READ_ONLY_REASON = "maintenance window"

Expect = Callable[[str, bool], int]


# -- expectations ----------------------------------------------------------------------------


def anyone(status: int = 200) -> Expect:
    return lambda role, read_only: status


def page() -> Expect:
    """A page or fragment: any session reads it; without one, the login page."""
    return lambda role, read_only: 302 if role in NO_SESSION else 200


def page_action_form() -> Expect:
    """The action panel: shown to every session (disabled, with the reason, without the
    permission or in read-only mode)."""
    return page()


def page_write(done: int = 200) -> Expect:
    """An action posted from a page: the permission, and not in read-only mode."""

    def expect(role: str, read_only: bool) -> int:
        if role in NO_SESSION:
            return 302
        if role not in {"operator", "superuser"} or read_only:
            return 403
        return done

    return expect


def drain_write(done: int, *, api: bool = False) -> Expect:
    """Drain and undrain need claims.drain_engine, which the operator role lacks: only the
    superuser may, and not in read-only mode."""

    def expect(role: str, read_only: bool) -> int:
        if api and role == "anonymous":
            return 401
        if not api and role in NO_SESSION:
            return 302
        if read_only or role != "superuser":
            return 403
        return done

    return expect


def bulk_page_write(done: int) -> Expect:
    """A bulk job started or steered from the pages needs claims.bulk_operate, which the
    operator role lacks: only the superuser may, and not in read-only mode."""
    return drain_write(done)


def api_read() -> Expect:
    return lambda role, read_only: 401 if role == "anonymous" else 200


def api_write(done: int) -> Expect:
    """A write: the permission (a token: its user's, and a read-write scope), and not in
    read-only mode, which refuses before anything else is looked at."""

    def expect(role: str, read_only: bool) -> int:
        if role == "anonymous":
            return 401
        if read_only:
            return 403
        return done if role in {"operator", "write-token", "superuser"} else 403

    return expect


def own_write(done: int, *, others: int | None = None, api: bool = False) -> Expect:
    """A write to one's own saved queries: no permission, only a session (the API: a
    read-write token too) and writes switched on. ``others``: what a user gets who is not
    the owner of the scene's saved query (the operator, whose tokens act as them)."""

    def expect(role: str, read_only: bool) -> int:
        if api and role == "anonymous":
            return 401
        if not api and role in NO_SESSION:
            return 302
        if read_only or role == "read-token":
            return 403
        if others is not None and role not in {"operator", "write-token"}:
            return others
        return done

    return expect


def own_read() -> Expect:
    """The scene's saved query is the operator's and private: another user is told 404."""
    return lambda role, read_only: {"anonymous": 401}.get(
        role, 200 if role in {"operator", "read-token", "write-token"} else 404
    )


def bulk_write(done: int) -> Expect:
    """A bulk job's write (the preview too) needs claims.bulk_operate besides the action's
    permission; the operator role lacks it (and so do its tokens): only the superuser may."""
    return drain_write(done, api=True)


def docs() -> Expect:
    return lambda role, read_only: 302 if role in NO_SESSION else 200


def admin_view(superuser: int = 200, staff: int = 403) -> Expect:
    """An admin GET: outsiders go to the admin's login; staff need the model permission."""

    def expect(role: str, read_only: bool) -> int:
        if role not in STAFF:
            return 302
        return superuser if role == "superuser" else staff

    return expect


def admin_post(superuser: int, staff: int = 403) -> Expect:
    """An admin POST: in read-only mode refused to everyone, whoever they are."""

    def expect(role: str, read_only: bool) -> int:
        if read_only:
            return 403
        if role not in STAFF:
            return 302
        return superuser if role == "superuser" else staff

    return expect


# -- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    route: str  # the pattern as the URL configuration writes it
    method: str
    path: str
    expect: Expect
    data: dict[str, Any] | None = None
    htmx: bool = False
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}{' ' + self.label if self.label else ''}"


WF = "wf-1"
RELEASE = {"expected_epoch": 3, "reason": "matrix"}
TAKEOVER = {"expected_epoch": 3, "target_engine_id": "e-2", "reason": "matrix"}
BULK_RELEASE = {"reason": "matrix", "claims": [{"workflow_id": WF, "expected_epoch": 3}]}
REASON = {"reason": "matrix"}
BULK_CONFIRM = {
    "request_key": "matrix-request-key-0001",
    "list": "claims",
    "query": 'id = "wf-1"',
    "action": "release",
    "reason": "matrix",
    "previewed_count": "1",
}
SAVED_QUERY = "/api/v1/saved-queries/{saved_query_pk}"
SAVE_VIEW = {"name": "matrix", "list_name": "claims", "query": 'state = "live"'}
BULK = {"list": "claims", "query": 'engine = "e-1"', "action": "release"}


def engine_page_action(name: str, done: Expect, data: dict[str, Any]) -> list[Case]:
    """An action on a whole engine from the pages: its confirmation form, and the post."""
    route, path = f"{name}/<pageid:engine_id>", f"/{name}/e-1"
    return [
        Case(route, "GET", path, page_action_form()),
        Case(route, "POST", path, done, data=data),
    ]


def api_workflow_post(action: str, done: Expect, data: dict[str, Any]) -> Case:
    """A POST of the API to ``action`` on the scene's workflow."""
    route = f"api/v1/workflows/<workflowid:workflow_id>/{action}"
    return Case(route, "POST", f"/api/v1/workflows/{WF}/{action}", done, data=data)


def api_engine_post(action: str, done: Expect, data: dict[str, Any]) -> Case:
    """A POST of the API to ``action`` on the scene's engine."""
    route = f"api/v1/engines/<engine_id>/{action}"
    return Case(route, "POST", f"/api/v1/engines/e-1/{action}", done, data=data)


CASES: list[Case] = [
    # pages, a fragment of each live page, the actions, the CSV export
    Case("", "GET", "/", page()),
    # A fragment without a session answers HX-Redirect to the login page, counted as 302.
    Case("", "GET", "/", page(), htmx=True, label="fragment"),
    Case("claims/", "GET", "/claims/", page()),
    Case("claims/", "GET", "/claims/?state=live", page(), htmx=True, label="fragment"),
    Case("workflows/", "GET", "/workflows/", page()),
    Case("workflows/", "GET", "/workflows/?status=running", page(), htmx=True, label="fragment"),
    Case("workflows/<pageid:workflow_id>/", "GET", f"/workflows/{WF}/", page()),
    Case("release/<pageid:workflow_id>", "GET", f"/release/{WF}", page_action_form()),
    # A posted form (not htmx) is answered with a redirect to the workflow page (303).
    Case("release/<pageid:workflow_id>", "POST", f"/release/{WF}", page_write(303), data=RELEASE),
    Case(
        "release/<pageid:workflow_id>",
        "POST",
        f"/release/{WF}",
        page_write(200),
        data=RELEASE,
        htmx=True,
        label="htmx",
    ),
    Case("takeover/<pageid:workflow_id>", "GET", f"/takeover/{WF}", page_action_form()),
    Case(
        "takeover/<pageid:workflow_id>", "POST", f"/takeover/{WF}", page_write(303), data=TAKEOVER
    ),
    Case("cancel/<pageid:workflow_id>", "GET", f"/cancel/{WF}", page_action_form()),
    Case("cancel/<pageid:workflow_id>", "POST", f"/cancel/{WF}", page_write(303), data=RELEASE),
    Case("suspend/<pageid:workflow_id>", "GET", f"/suspend/{WF}", page_action_form()),
    Case("suspend/<pageid:workflow_id>", "POST", f"/suspend/{WF}", page_write(303), data=RELEASE),
    Case("resume/<pageid:workflow_id>", "GET", f"/resume/{WF}", page_action_form()),
    # The scene's workflow is running: a permitted resume meets that, 409.
    Case("resume/<pageid:workflow_id>", "POST", f"/resume/{WF}", page_write(409), data=RELEASE),
    Case("engines/", "GET", "/engines/", page()),
    Case("engines/<pageid:engine_id>/", "GET", "/engines/e-1/", page()),
    *engine_page_action("engine-release", page_write(200), {"claim": f"{WF}:3", **REASON}),
    *engine_page_action("engine-drain", drain_write(303), REASON),
    # The scene's engine is not draining: a permitted undrain meets that, 409.
    *engine_page_action("engine-undrain", drain_write(409), REASON),
    Case("reclaim/", "GET", "/reclaim/", page()),
    Case("redrives/", "GET", "/redrives/", page()),
    Case("backfills/", "GET", "/backfills/", page()),
    Case("audit/", "GET", "/audit/", page()),
    Case("audit/", "GET", "/audit/?format=csv", page(), label="csv"),
    # saved views: any session saves its own; the scene's query is the operator's
    Case("saved-views/", "POST", "/saved-views/", own_write(303), data=SAVE_VIEW),
    Case(
        "saved-views/<int:saved_query_id>/delete",
        "POST",
        "/saved-views/{saved_query_pk}/delete",
        own_write(303, others=404),
    ),
    # bulk jobs: the scene's job is done, so pausing, resuming or aborting it is a 409
    Case("bulk/", "GET", "/bulk/", page()),
    Case("bulk/", "GET", "/bulk/", page(), htmx=True, label="fragment"),
    Case("bulk/new", "GET", "/bulk/new?query=engine+%3D+%22e-1%22&action=release", page()),
    Case("bulk/new", "POST", "/bulk/new", bulk_page_write(303), data=BULK_CONFIRM),
    Case("bulk/<int:job_id>/", "GET", "/bulk/{bulk_job_pk}/", page()),
    Case("bulk/<int:job_id>/", "GET", "/bulk/{bulk_job_pk}/", page(), htmx=True, label="fragment"),
    Case("bulk/<int:job_id>/items.csv", "GET", "/bulk/{bulk_job_pk}/items.csv", page()),
    *[
        Case(
            f"bulk/<int:job_id>/{verb}",
            "POST",
            f"/bulk/{{bulk_job_pk}}/{verb}",
            bulk_page_write(409),
            data=REASON,
        )
        for verb in ("pause", "resume", "abort")
    ],
    # The page frame's engine-floor alert, polled on its own.
    Case("engine-floor/", "GET", "/engine-floor/", page(), htmx=True, label="fragment"),
    # outside the login
    Case("login/", "GET", "/login/", lambda role, ro: 302 if role not in NO_SESSION else 200),
    Case("logout/", "POST", "/logout/", anyone(302)),
    Case("healthz", "GET", "/healthz", anyone()),
    Case("metrics", "GET", "/metrics", anyone()),
    # the JSON API
    Case("api/v1/", "GET", "/api/v1/", anyone(404), label="no route at the root"),
    Case("api/v1/docs", "GET", "/api/v1/docs", docs()),
    Case("api/v1/openapi.json", "GET", "/api/v1/openapi.json", docs()),
    Case("api/v1/claims", "GET", "/api/v1/claims", api_read()),
    Case("api/v1/workflows", "GET", "/api/v1/workflows", api_read()),
    Case("api/v1/engines", "GET", "/api/v1/engines", api_read()),
    Case("api/v1/redrives", "GET", "/api/v1/redrives", api_read()),
    Case("api/v1/reclaim/cursor", "GET", "/api/v1/reclaim/cursor", api_read()),
    Case(
        "api/v1/workflows/<workflowid:workflow_id>/ownership",
        "GET",
        f"/api/v1/workflows/{WF}/ownership",
        api_read(),
    ),
    api_workflow_post("claim/release", api_write(200), RELEASE),
    api_workflow_post("claim/takeover", api_write(200), TAKEOVER),
    api_workflow_post("cancel", api_write(200), REASON),
    api_workflow_post("suspend", api_write(200), RELEASE),
    # The scene's workflow is running: a permitted resume meets that, 409.
    api_workflow_post("resume", api_write(409), RELEASE),
    Case(
        "api/v1/workflows",
        "POST",
        "/api/v1/workflows",
        api_write(201),
        data={"workflow_id": "wf-new", "workflow_type": "order", "input": {"items": 1}},
    ),
    api_engine_post("claims/release", api_write(200), BULK_RELEASE),
    api_engine_post("drain", drain_write(200, api=True), REASON),
    # The scene's engine is not draining: a permitted undrain meets that, 409.
    api_engine_post("undrain", drain_write(409, api=True), REASON),
    # One backfill is active (the scene's): a permitted create meets that, 409.
    Case("api/v1/backfills", "POST", "/api/v1/backfills", api_write(409), data={}),
    Case("api/v1/backfills/<job_id>", "GET", "/api/v1/backfills/{job}", api_read()),
    Case(
        "api/v1/backfills/<job_id>/cancel",
        "POST",
        "/api/v1/backfills/{job}/cancel",
        api_write(200),
        data={},
    ),
    Case("api/v1/saved-queries", "GET", "/api/v1/saved-queries", api_read()),
    Case(
        "api/v1/saved-queries",
        "POST",
        "/api/v1/saved-queries",
        own_write(201, api=True),
        data=SAVE_VIEW,
    ),
    Case("api/v1/saved-queries/<saved_query_id>", "GET", SAVED_QUERY, own_read()),
    Case(
        "api/v1/saved-queries/<saved_query_id>",
        "PATCH",
        SAVED_QUERY,
        own_write(200, others=404, api=True),
        data={"name": "renamed"},
    ),
    Case(
        "api/v1/saved-queries/<saved_query_id>",
        "DELETE",
        SAVED_QUERY,
        own_write(204, others=404, api=True),
    ),
    # bulk jobs; the scene's job is done, so a permitted pause, resume or abort meets that, 409
    Case("api/v1/bulk-jobs/preview", "POST", "/api/v1/bulk-jobs/preview", bulk_write(200), BULK),
    Case("api/v1/bulk-jobs", "POST", "/api/v1/bulk-jobs", bulk_write(201), {**BULK, **REASON}),
    Case("api/v1/bulk-jobs", "GET", "/api/v1/bulk-jobs", api_read()),
    Case("api/v1/bulk-jobs/<job_id>", "GET", "/api/v1/bulk-jobs/{bulk_job_pk}", api_read()),
    Case(
        "api/v1/bulk-jobs/<job_id>/items",
        "GET",
        "/api/v1/bulk-jobs/{bulk_job_pk}/items",
        api_read(),
    ),
    Case(
        "api/v1/bulk-jobs/<job_id>/items",
        "GET",
        "/api/v1/bulk-jobs/{bulk_job_pk}/items?format=csv",
        api_read(),
        label="csv",
    ),
    *[
        Case(
            f"api/v1/bulk-jobs/<job_id>/{verb}",
            "POST",
            f"/api/v1/bulk-jobs/{{bulk_job_pk}}/{verb}",
            bulk_write(409),
            REASON,
        )
        for verb in ("pause", "resume", "abort")
    ],
    # A method a route does not declare is 405 for everyone, before any credential.
    Case("api/v1/claims", "DELETE", "/api/v1/claims", anyone(405)),
    Case(
        "api/v1/workflows/<workflowid:workflow_id>/cancel",
        "GET",
        f"/api/v1/workflows/{WF}/cancel",
        anyone(405),
    ),
    Case("api/v1/workflows", "PUT", "/api/v1/workflows", anyone(405)),
    Case("api/v1/backfills", "PATCH", "/api/v1/backfills", anyone(405)),
    # the admin's own pages
    Case("admin/", "GET", "/admin/", admin_view(200, 200)),
    # The form for whoever is not staff yet; staff are sent on to the admin.
    Case("admin/login/", "GET", "/admin/login/", lambda role, ro: 302 if role in STAFF else 200),
    Case("admin/logout/", "POST", "/admin/logout/", anyone(302)),
    Case("admin/password_change/", "GET", "/admin/password_change/", admin_view(200, 200)),
    Case(
        "admin/password_change/done/", "GET", "/admin/password_change/done/", admin_view(200, 200)
    ),
    Case("admin/jsi18n/", "GET", "/admin/jsi18n/", admin_view(200, 200)),
    Case("admin/autocomplete/", "GET", "/admin/autocomplete/", admin_view(403, 403)),
    Case("admin/^(?P<app_label>auth|axes|claims)/$", "GET", "/admin/claims/", admin_view(200, 404)),
    Case(
        "admin/r/<path:content_type_id>/<path:object_id>/",
        "GET",
        "/admin/r/{workflow_type}/{workflow_pk}/",
        admin_view(404, 404),
    ),
    Case("admin/(?P<url>.*)$", "GET", "/admin/nothing-here/", admin_view(404, 404)),
    # backfills in the admin
    Case(
        "admin/claims/backfilljob/schedule/",
        "GET",
        "/admin/claims/backfilljob/schedule/",
        admin_view(),
    ),
    Case(
        "admin/claims/backfilljob/schedule/",
        "POST",
        "/admin/claims/backfilljob/schedule/",
        admin_post(302),
        data={"when": "now"},
    ),
    Case(
        "admin/claims/backfilljob/<int:job_id>/cancel/",
        "POST",
        "/admin/claims/backfilljob/{job}/cancel/",
        admin_post(302),
    ),
    Case(
        "admin/claims/backfilljob/progress/",
        "GET",
        "/admin/claims/backfilljob/progress/?id={job}",
        admin_view(),
    ),
    Case(
        "admin/auth/user/<id>/password/",
        "GET",
        "/admin/auth/user/{victim}/password/",
        admin_view(),
    ),
]

# Each model the admin shows: what a superuser may do with it. Staff without the model's
# permissions get 403 everywhere, outsiders the admin's login. A new model registered in
# the admin fails the completeness test until it has a line here.
READ_ONLY_ROWS = "read-only rows"  # view only: no add, change or delete, not even a superuser
MANAGED = "managed"  # a superuser adds, changes and deletes
DELETE_ONLY = "delete only"  # recorded by the system; a superuser may delete (unlock)
ADMIN_MODELS: dict[str, tuple[str, str]] = {
    # "app/model": (kind, the scene's object)
    "claims/workflow": (READ_ONLY_ROWS, "workflow_pk"),
    "claims/workflowvisibility": (READ_ONLY_ROWS, "visibility_pk"),
    "claims/visibilitywatermark": (READ_ONLY_ROWS, "watermark_pk"),
    "claims/workflowclaim": (READ_ONLY_ROWS, "claim_pk"),
    "claims/ownershipmodemarker": (READ_ONLY_ROWS, "marker_pk"),
    "claims/engine": (READ_ONLY_ROWS, "engine_pk"),
    "claims/pendingredrive": (READ_ONLY_ROWS, "redrive_pk"),
    "claims/claimcounter": (READ_ONLY_ROWS, "counter_pk"),
    "claims/reclaimcursor": (READ_ONLY_ROWS, "cursor_pk"),
    "claims/claimevent": (READ_ONLY_ROWS, "event_pk"),
    "claims/backfilljob": (READ_ONLY_ROWS, "job"),
    "claims/bulkjob": (READ_ONLY_ROWS, "bulk_job_pk"),
    "claims/bulkjobitem": (READ_ONLY_ROWS, "bulk_item_pk"),
    "claims/savedquery": (READ_ONLY_ROWS, "saved_query_pk"),
    "claims/auditentry": (READ_ONLY_ROWS, "audit_entry_pk"),
    "claims/apitoken": (MANAGED, "token_pk"),
    "auth/user": (MANAGED, "victim"),
    "auth/group": (MANAGED, "group_pk"),
    "axes/accessattempt": (DELETE_ONLY, "attempt_pk"),
    "axes/accesslog": (DELETE_ONLY, "log_pk"),
    "axes/accessfailurelog": (DELETE_ONLY, "failure_pk"),
}


def admin_model_cases(model: str, kind: str, obj: str) -> list[Case]:
    base = f"admin/{model}/"
    url = f"/admin/{model}/"
    writable = kind == MANAGED
    deletable = kind in {MANAGED, DELETE_ONLY}
    return [
        Case(base, "GET", url, admin_view()),
        Case(f"{base}add/", "GET", f"{url}add/", admin_view(200 if writable else 403)),
        Case(f"{base}add/", "POST", f"{url}add/", admin_post(200 if writable else 403), data={}),
        Case(f"{base}<path:object_id>/change/", "GET", f"{url}{{{obj}}}/change/", admin_view()),
        Case(
            f"{base}<path:object_id>/change/",
            "POST",
            f"{url}{{{obj}}}/change/",
            # An empty form: the form again with its errors (200), or, where every field
            # is read-only (axes' records), nothing to change and back to the list (302).
            admin_post(200 if writable else 302 if deletable else 403),
            data={},
        ),
        Case(
            f"{base}<path:object_id>/delete/",
            "GET",
            f"{url}{{{obj}}}/delete/",
            admin_view(200 if deletable else 403),
        ),
        Case(
            f"{base}<path:object_id>/delete/",
            "POST",
            f"{url}{{{obj}}}/delete/",
            admin_post(302 if deletable else 403),
            data={"post": "yes"},
        ),
        Case(
            f"{base}<path:object_id>/history/",
            "GET",
            f"{url}{{{obj}}}/history/",
            # Staff see only their own tokens: another's is "not found", back to the index.
            admin_view(staff=302 if model == "claims/apitoken" else 403),
        ),
        Case(f"{base}<path:object_id>/", "GET", f"{url}{{{obj}}}/", admin_view(302, 302)),
    ]


for _model, (_kind, _obj) in ADMIN_MODELS.items():
    CASES += admin_model_cases(_model, _kind, _obj)


# -- the scene and the roles -----------------------------------------------------------------


def scene(django_user_model: Any) -> dict[str, Any]:
    """One running workflow held at epoch 3 by e-1, a second live engine, an active
    backfill, a token, a locked-out attempt: every object a row above names (the users
    are made first, by ``make_users``)."""
    from axes.models import AccessFailureLog, AccessLog
    from django.contrib.contenttypes.models import ContentType

    from claims.models import (
        AuditEntry,
        BulkJob,
        BulkJobItem,
        ClaimCounter,
        OwnershipModeMarker,
        PendingRedrive,
        ReclaimCursor,
        SavedQuery,
        VisibilityWatermark,
        WorkflowVisibility,
    )

    now = fleet_clock()()
    at = timezone.now()
    for n in (1, 2):
        Engine.objects.create(
            engine_id=f"e-{n}",
            hostname="host",
            pid=n,
            queue="",
            started_at_ms=now - 60_000,
            heartbeat_at_ms=now - 1_000,
            status=EngineStatus.ACTIVE,
        )
    workflow = Workflow.objects.create(
        workflow_id=WF,
        workflow_type="order",
        status=WorkflowStatus.RUNNING,
        state={"input": None, "steps": {}},
        created_at_ms=now,
        updated_at_ms=now,
    )
    claim = WorkflowClaim.objects.create(
        workflow_id=WF,
        epoch=3,
        holder_engine_id="e-1",
        holder_epoch=3,
        holder_expires_at_ms=now + 60_000,
        holder_claimed_at_ms=now - 1_000,
    )
    job = BackfillJob.objects.create(status="scheduled", run_at="2030-01-01T00:00:00Z")
    bulk_job = BulkJob.objects.create(
        list_name="claims",
        query='engine = "e-1"',
        action="release",
        reason="scene",
        created_at_ms=now,
        status="done",
        frozen_count=1,
    )
    bulk_item = BulkJobItem.objects.create(job=bulk_job, workflow_id=WF, frozen_epoch=3)
    victim = django_user_model.objects.create_user("victim")
    token_owner = django_user_model.objects.get(username="operator")
    api_token_mint(ApiToken(name="kept", user=token_owner, scope="read"))
    saved_query = SavedQuery.objects.create(
        owner=token_owner,
        name="scene",
        list_name="claims",
        query='state = "live"',
        created_at_ms=now,
        updated_at_ms=now,
    )
    audit_entry = AuditEntry.objects.create(
        at_ms=now,
        actor="operator",
        subject="saved_query",
        subject_id=saved_query.pk,
        action="create",
    )
    return {
        "saved_query_pk": saved_query.pk,
        "audit_entry_pk": audit_entry.pk,
        "workflow_pk": workflow.pk,
        "workflow_type": ContentType.objects.get_for_model(Workflow).pk,
        "claim_pk": claim.pk,
        "engine_pk": Engine.objects.get(engine_id="e-1").pk,
        "job": job.pk,
        "bulk_job_pk": bulk_job.pk,
        "bulk_item_pk": bulk_item.pk,
        "victim": victim.pk,
        "group_pk": Group.objects.create(name="on-call").pk,
        "token_pk": ApiToken.objects.get(name="kept").pk,
        "event_pk": ClaimEvent.objects.create(
            workflow_id=WF,
            epoch_before=2,
            epoch_after=3,
            kind="acquired",
            engine_id="e-1",
            at_ms=now,
        ).pk,
        "visibility_pk": WorkflowVisibility.objects.create(
            workflow_id=WF, workflow_type="order", status="running", updated_at_ms=now
        ).pk,
        "watermark_pk": VisibilityWatermark.objects.create(version=1, built_at_ms=now).pk,
        "marker_pk": OwnershipModeMarker.objects.create(mode="workflow-lease").pk,
        "redrive_pk": PendingRedrive.objects.create(
            workflow_id=WF,
            engine_id="e-1",
            epoch=3,
            attempts=1,
            first_failed_at_ms=now,
            last_failed_at_ms=now,
        ).pk,
        "counter_pk": ClaimCounter.objects.create(engine_id="e-1", name="acquired", value=1).pk,
        "cursor_pk": ReclaimCursor.objects.create(name="reclaim", updated_by="e-1").pk,
        "attempt_pk": AccessAttempt.objects.create(
            username="mallory", ip_address="10.0.0.9", failures_since_start=9, attempt_time=at
        ).pk,
        "log_pk": AccessLog.objects.create(
            username="alice", ip_address="10.0.0.7", attempt_time=at
        ).pk,
        "failure_pk": AccessFailureLog.objects.create(
            username="mallory", ip_address="10.0.0.9", attempt_time=at
        ).pk,
    }


def make_users(django_user_model: Any) -> dict[str, Any]:
    """A user for each signed-in role, and a secret for each token role (the operator's)."""
    operator = django_user_model.objects.create_user("operator")
    operator.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="claims", codename__in=OPERATOR_PERMISSIONS
        )
    )
    return {
        "no-permission": django_user_model.objects.create_user("nobody"),
        "operator": operator,
        "staff": django_user_model.objects.create_user("staff", is_staff=True),
        "superuser": django_user_model.objects.create_superuser("root"),
        "read-token": api_token_mint(ApiToken(name="read-token", user=operator, scope="read")),
        "write-token": api_token_mint(ApiToken(name="write-token", user=operator, scope="write")),
    }


def client_for(role: str, users: dict[str, Any]) -> Client:
    client = Client()
    if role.endswith("-token"):
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {users[role]}"
    elif role in users:
        client.force_login(users[role])
    return client


@dataclass(frozen=True)
class World:
    users: dict[str, Any]
    ids: dict[str, Any]


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """The users and the scene, made once for the module's thousands of cases inside a
    transaction that is never committed. Each case runs in a savepoint of it (as Django's
    ``setUpTestData`` does), so whatever one case writes is gone before the next."""
    user_model = get_user_model()
    with django_db_blocker.unblock(), transaction.atomic():
        users = make_users(user_model)
        yield World(users, scene(user_model))
        transaction.set_rollback(True)


def bring_to_now() -> None:
    """The scene's engines beat a second ago and its claim is live for another minute, as
    when it was made: a module's cases take longer than that."""
    now = fleet_clock()()
    Engine.objects.update(heartbeat_at_ms=now - 1_000)
    WorkflowClaim.objects.filter(workflow_id=WF).update(
        holder_claimed_at_ms=now - 1_000, holder_expires_at_ms=now + 60_000
    )


def send(client: Client, case: Case, ids: dict[str, Any]) -> int:
    path = case.path.format(**ids)
    headers = {"HX-Request": "true"} if case.htmx else {}
    if case.method == "GET":
        response = client.get(path, headers=headers)
    elif case.method not in {"GET", "POST"}:
        body = json.dumps(case.data) if case.data is not None else ""
        response = client.generic(
            case.method, path, body, content_type="application/json", headers=headers
        )
    elif path.startswith("/api/"):
        response = client.post(
            path, case.data or {}, content_type="application/json", headers=headers
        )
    else:
        response = client.post(path, case.data or {}, headers=headers)
    if response.get("HX-Redirect", "").startswith("/login/"):
        assert b"wf-1" not in response.content
        return 302
    return response.status_code


# -- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True], ids=["normal", "read-only"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_route_answers_each_role(case, role, read_only, world, settings):
    cache.clear()  # the API write limit counts across tests otherwise
    settings.WEFTBOARD_READ_ONLY = READ_ONLY_REASON if read_only else ""
    bring_to_now()
    client = client_for(role, world.users)

    status = send(client, case, world.ids)

    assert status == case.expect(role, read_only), f"{case.id} as {role}"


def served_routes() -> set[str]:
    def walk(resolver: URLResolver, prefix: str = "") -> set[str]:
        routes: set[str] = set()
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                routes |= walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                routes.add(prefix + str(entry.pattern))
        return routes

    return walk(get_resolver())


def test_every_route_has_a_line_in_the_table():
    missing = served_routes() - {case.route for case in CASES}
    assert not missing, f"routes with no line in the permission table: {sorted(missing)}"


def test_every_method_of_every_api_route_has_a_line_in_the_table():
    """ninja serves every method of a path through one URL pattern, so the patterns alone
    would not notice a new DELETE beside a GET."""
    from weftboard.api import api

    rows = {(case.method, case.path.split("?")[0]) for case in CASES}
    missing = []
    for template, operations in api.get_openapi_schema()["paths"].items():
        shape = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
        for method in operations:
            if not any(m == method.upper() and shape.match(p) for m, p in rows):
                missing.append(f"{method.upper()} {template}")
    assert not missing, f"API operations with no line in the permission table: {missing}"


def test_every_model_in_the_admin_has_a_line_in_the_table():
    registered = {f"{m._meta.app_label}/{m._meta.model_name}" for m in admin.site._registry}
    assert registered == set(ADMIN_MODELS)
