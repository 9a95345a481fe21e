"""Pages map the error vocabulary once: a status code and an error fragment (HX-Retarget)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django_htmx.http import reswap, retarget

from claims.http.htmx import HtmxHttpRequest
from claims.protocol.errors import (
    ClaimConfigError,
    ClaimError,
    ConflictError,
    InvalidTransitionError,
    InvalidWorkflowIdError,
    StaleEpochError,
    WorkflowClaimUnavailableError,
    WorkflowNotFoundError,
)
from claims.services.errors import ReadOnlyError

# Where an HTMX error lands when the view names no better place: the flash region under the nav.
FLASH_TARGET = "#flash"


class BadInput(Exception):
    """A request parameter the page cannot use; answered 400 with this message."""

    status = 400


class NotFound(BadInput):
    status = 404


class Refused(BadInput):
    """Writes are off (read-only mode) or the user lacks the permission."""

    status = 403


class TooManyRequests(BadInput):
    """The user's reads are over their rate (weftboard.read_limit)."""

    status = 429


class TooSlow(BadInput):
    """A read ran past its time limit and was stopped (weftboard.read_time_limit)."""

    status = 503


def status_for(error: Exception) -> int:
    if isinstance(error, BadInput):
        return error.status
    if isinstance(error, ReadOnlyError):
        return 403  # a ClaimConfigError, but a refusal rather than bad input
    if isinstance(error, WorkflowNotFoundError):
        return 404
    conflicts = StaleEpochError | InvalidTransitionError | WorkflowClaimUnavailableError
    if isinstance(error, conflicts | ConflictError):
        return 409
    if isinstance(error, InvalidWorkflowIdError | ClaimConfigError):
        return 400
    assert isinstance(error, ClaimError)
    return 400


TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    429: "Too many requests",
    503: "Too slow",
}


def error_response(
    request: HtmxHttpRequest, error: Exception, *, target: str = FLASH_TARGET
) -> HttpResponse:
    """The error page, or for HTMX the error fragment swapped into ``target``; nothing changed."""
    status = status_for(error)
    message = str(error)
    # The page goes on with "Nothing was changed.": a rule's message ends its sentence.
    if message and message[-1] not in ".!?":
        message += "."
    context = {"status": status, "title": TITLES.get(status, "Error"), "message": message}
    if request.htmx:
        response = render(request, "claims/error.html#error", context, status=status)
        return reswap(retarget(response, target), "innerHTML")
    return render(request, "claims/error.html", context, status=status)
