"""The API answers JSON, whatever goes wrong: ``{"detail": ...}`` for an unknown path, a
method a path does not take or anything else Django refuses itself, and for an unexpected
error a 500 with a fresh request id, sent as X-Request-ID too and logged once with the
traceback, so that what a client reports can be found in the log.

The routes' own errors are mapped in weftboard.api; this covers what reaches no route
(Django's 404, ninja's 405) and what a route did not expect.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

from claims.protocol.log_events import event_line

logger = logging.getLogger("weftboard.api")

API_PREFIX = "/api/"
REQUEST_ID_HEADER = "X-Request-ID"


def unexpected_error(request: HttpRequest, error: BaseException) -> HttpResponse:
    """A 500 in JSON naming a new request id, logged here and only here."""
    request_id = uuid.uuid4().hex
    logger.error(
        "%s",
        event_line("api-error", request_id=request_id, method=request.method, path=request.path),
        exc_info=(type(error), error, error.__traceback__),
        extra={"event": "api-error", "request_id": request_id},
    )
    response = JsonResponse(
        {
            "detail": "an unexpected error; nothing is known to have changed, but read the"
            " current state before repeating a write, and quote the request id when you"
            " report it",
            "request_id": request_id,
        },
        status=500,
    )
    response[REQUEST_ID_HEADER] = request_id
    # django.request would log the 500 a second time, without the id.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


# What Django answers itself, with a 4xx page: left to it, then made JSON on the way out.
DJANGO_ANSWERS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)


class ApiJsonErrorsMiddleware:
    """Under /api/, every error answer that is not JSON becomes ``{"detail": ...}``: no
    route matched (404), the route takes other methods (405), or a view outside ninja's
    routes (its docs and schema) refused; an error such a view raised unexpectedly
    becomes the JSON 500 above."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            not request.path.startswith(API_PREFIX)
            or response.status_code < 400
            or _is_json(response)
        ):
            return response
        if response.status_code == 404:
            return _json(response, f"no API route at {request.path}")
        if response.status_code == 405:
            allowed = response.get("Allow", "")
            return _json(
                response, f"{request.method} is not allowed here; this path takes {allowed}"
            )
        return _json(response, response.reason_phrase)

    def process_exception(self, request: HttpRequest, error: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX) or isinstance(error, DJANGO_ANSWERS):
            return None
        return unexpected_error(request, error)


def _is_json(response: HttpResponse) -> bool:
    return str(response.get("Content-Type", "")).startswith("application/json")


def _json(original: HttpResponse, detail: str) -> HttpResponse:
    response = JsonResponse({"detail": detail}, status=original.status_code)
    for header in ("Allow", "Retry-After"):
        if header in original:
            response[header] = original[header]
    return response
