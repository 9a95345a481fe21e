"""The JSON API at /api/v1/: authentication, and the one place errors become status codes.

400 unreadable body · 401 no valid session or token · 403 read-only switch, read-only
token, missing permission, failed CSRF · 404 unknown workflow or job · 409 stale epoch
(with the fresh claim), finished workflow, id in use, active backfill, a bulk job's
status or changed count (with both counts) · 422 bad input,
including an unknown workflow type and a target engine that is unknown or not active
· 429 too many writes, or reads · 500 an unexpected error, with a request id to quote ·
503 the database did not answer (a write's outcome is then unknown: read the state again
before repeating it), or a read ran past its time limit (WEFTBOARD_READ_TIMEOUT_MS;
nothing was written). Every answer is JSON (weftboard.api_errors).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import (
    BadRequest,
    ObjectDoesNotExist,
    PermissionDenied,
    SuspiciousOperation,
)
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from claims.api import router as claims_router
from claims.api.access import read_throttle
from claims.api.body import JsonBodyParser, body_rule_refusal
from claims.api.schemas import ClaimStateOut, StaleEpochOut
from claims.api.schemas.bulk import BulkCountChangedOut
from claims.fleet_clock import fleet_now
from claims.protocol.errors import (
    ClaimConfigError,
    ConflictError,
    InvalidTransitionError,
    InvalidWorkflowIdError,
    StaleEpochError,
    WorkflowClaimUnavailableError,
    WorkflowNotFoundError,
)
from claims.selectors.claims.ownership import claim_snapshot
from claims.selectors.tokens import api_token_authenticate
from claims.services.errors import (
    BackfillAlreadyActiveError,
    BackfillInThePastError,
    BackfillNotActiveError,
    BulkCountChangedError,
    ReadOnlyError,
)
from claims.store.time_limit import is_statement_timeout
from claims.workflow_types import UnknownWorkflowTypeError
from weftboard.api_errors import unexpected_error
from weftboard.read_time_limit import (
    READ_METHODS,
    log_stopped,
    mark_logged,
    read_timeout_ms,
    stopped_message,
)

logger = logging.getLogger("weftboard.api")


class BearerTokenAuth(HttpBearer):
    """``Authorization: Bearer <secret>``. A bearer header that does not name a live token
    is refused outright (401) rather than falling back to the session."""

    def __call__(self, request: HttpRequest) -> Any:
        # Unlike HttpBearer's, never log the header: it may hold a secret.
        scheme, _, secret = request.headers.get(self.header, "").partition(" ")
        if scheme.lower() != self.openapi_scheme:
            return None
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        api_token = api_token_authenticate(token)
        if api_token is None:
            raise AuthenticationError(message="invalid, revoked or expired API token")
        # Permissions, throttling and the audit actor all follow the token's user.
        request.user = api_token.user
        return api_token


class SessionCsrfAuth(APIKeyCookie):
    """The Django session; unsafe methods also need the CSRF token. Unlike ninja's
    SessionAuth, an anonymous request gets 401 before any CSRF verdict."""

    param_name = "sessionid"  # names the cookie in the OpenAPI document only

    def __call__(self, request: HttpRequest) -> Any:
        if not request.user.is_authenticated:
            return None
        if self.csrf and check_csrf(request) is not None:
            raise HttpError(403, "CSRF check failed")
        return request.user

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        return request.user if request.user.is_authenticated else None


api = NinjaAPI(
    title="weftboard",
    version="1",
    description="Claims, workflows and the fleet of weft engines. Errors are "
    '`{"detail": ...}`; see each route for its status codes.',
    auth=[BearerTokenAuth(), SessionCsrfAuth()],
    urls_namespace="api-v1",
    docs_decorator=login_required,
    parser=JsonBodyParser(),
    # Every route without its own throttle (the writes have theirs) counts as a read.
    throttle=read_throttle,
)
api.add_router("/", claims_router)


def _stale_epoch(request: HttpRequest, exc: Any) -> HttpResponse:
    """409 with the claim as it is now, so the client re-decides instead of retrying blind."""
    now_ms, timing = fleet_now()
    snapshot = claim_snapshot(exc.workflow_id, now_ms=now_ms, timing=timing)
    body = StaleEpochOut(
        detail=str(exc),
        workflow_id=exc.workflow_id,
        expected_epoch=exc.expected_epoch,
        current=ClaimStateOut.of(snapshot),
    )
    return api.create_response(request, body.model_dump(mode="json"), status=409)


def _bulk_count_changed(request: HttpRequest, exc: Any) -> HttpResponse:
    """409 naming both counts, so the client can confirm the new one or preview again."""
    body = BulkCountChangedOut(detail=str(exc), previewed=exc.previewed, frozen=exc.frozen)
    return api.create_response(request, body.model_dump(mode="json"), status=409)


def _not_found(request: HttpRequest, exc: Any) -> HttpResponse:
    # A model's DoesNotExist names the query; say only what was asked for.
    detail = str(exc) if isinstance(exc, WorkflowNotFoundError) else "not found"
    return api.create_response(request, {"detail": detail}, status=404)


def _database_unavailable(request: HttpRequest, exc: Any) -> HttpResponse:
    if request.method in READ_METHODS and is_statement_timeout(exc):
        return _read_stopped(request)
    # The session died mid-request (a failover, a dropped connection): a COMMIT may have
    # landed with its answer lost, so the client must look before it leaps again.
    logger.warning("API request %s %s: database error", request.method, request.path, exc_info=exc)
    response = api.create_response(
        request,
        {
            "detail": "the database did not answer; a write may or may not have been made,"
            " so read the current state before repeating it"
        },
        status=503,
    )
    response["Retry-After"] = "1"
    return response


def _http_error(request: HttpRequest, exc: Any) -> HttpResponse:
    # A body the structure rule refused keeps its own status and message (ninja turns
    # every parser error into a bare 400 "Cannot parse request body").
    error = body_rule_refusal(exc) or exc
    return api.create_response(request, {"detail": str(error)}, status=error.status_code)


def _unexpected(request: HttpRequest, exc: Any) -> HttpResponse:
    return unexpected_error(request, exc)


def _read_stopped(request: HttpRequest) -> HttpResponse:
    # A read past WEFTBOARD_READ_TIMEOUT_MS (weftboard.read_time_limit): nothing was written,
    # the transaction is rolled back; logged once, without a traceback.
    ms = read_timeout_ms()
    log_stopped(request, ms)
    response = api.create_response(request, {"detail": stopped_message(ms)}, status=503)
    mark_logged(response)
    return response


def _answer(status: int) -> Callable[[HttpRequest, Any], HttpResponse]:
    def handler(request: HttpRequest, exc: Any) -> HttpResponse:
        return api.create_response(request, {"detail": str(exc)}, status=status)

    return handler


ERROR_STATUS: dict[type[Exception], int] = {
    # What Django itself answers 400 (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, say), which
    # would otherwise reach the handler of last resort below.
    BadRequest: 400,
    MultiPartParserError: 400,
    SuspiciousOperation: 400,
    PermissionDenied: 403,
    InvalidTransitionError: 409,
    ConflictError: 409,
    WorkflowClaimUnavailableError: 409,
    InvalidWorkflowIdError: 422,
    ClaimConfigError: 422,
    UnknownWorkflowTypeError: 422,
    BackfillAlreadyActiveError: 409,
    BackfillNotActiveError: 409,
    BackfillInThePastError: 422,
    # A ClaimConfigError, but the read-only switch is a refusal, not bad input.
    ReadOnlyError: 403,
}

for error, status in ERROR_STATUS.items():
    api.add_exception_handler(error, _answer(status))
api.add_exception_handler(HttpError, _http_error)
api.add_exception_handler(StaleEpochError, _stale_epoch)
api.add_exception_handler(BulkCountChangedError, _bulk_count_changed)
api.add_exception_handler(WorkflowNotFoundError, _not_found)
api.add_exception_handler(ObjectDoesNotExist, _not_found)
api.add_exception_handler(OperationalError, _database_unavailable)
api.add_exception_handler(InterfaceError, _database_unavailable)
# Last, for anything no handler above expects: ninja looks a handler up by the error's
# class first, so this catches only what would otherwise be Django's HTML 500.
api.add_exception_handler(Exception, _unexpected)
