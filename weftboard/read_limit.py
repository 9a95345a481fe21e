"""No read a user can request runs unbounded: every GET and HEAD served by a view (the
pages, the JSON API, the admin, /metrics) stops each statement after
WEFTBOARD_READ_TIMEOUT_MS (weftboard.time_limit; 0 turns the limit off).

Only reads: a write keeps whatever time its locks take, since cutting it short would leave
the client unsure whether it landed. /healthz never touches the database and is exempt.
A read stopped by the limit answers an error page with 503 (the error fragment for HTMX),
logged once as a warning; the API answers its own JSON 503 (weftboard.api). A streamed
response (the audit CSV) reads while it streams, under a limit of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from typing import Any, TypeVar, cast

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from weftboard.http import HtmxHttpRequest
from weftboard.time_limit import is_statement_timeout, statement_time_limit

READ_METHODS = frozenset({"GET", "HEAD"})
logger = logging.getLogger("weftboard.reads")
# Set on the request while its read limit is open, and when a statement was stopped.
_OPEN_LIMIT = "_weftboard_read_limit"
_STOPPED = "_weftboard_read_stopped"

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def read_limit_exempt(view: View) -> View:
    """A view that never reads the database: no transaction is opened for it."""
    view.read_limit_exempt = True  # type: ignore[attr-defined]
    return view


def read_timeout_ms() -> int:
    return int(settings.WEFTBOARD_READ_TIMEOUT_MS)


def stopped_message(ms: int) -> str:
    return (
        f"reading this took longer than {ms:,} ms, the limit on one read "
        "(WEFTBOARD_READ_TIMEOUT_MS), and was stopped; narrow it (a filter, a search, a "
        "shorter time range or a smaller page) or try again in a moment"
    )


def mark_logged(response: HttpResponseBase) -> HttpResponseBase:
    """Keep Django from logging the 503 again as an error: it was logged once already."""
    setattr(response, "_has_been_logged", True)  # noqa: B010 (django.utils.log's flag)
    return response


def log_stopped(request: HttpRequest, ms: int) -> None:
    logger.warning(
        "read stopped after %d ms (WEFTBOARD_READ_TIMEOUT_MS): method=%s path=%r",
        ms,
        request.method,
        request.path,
    )


class ReadTimeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        limit: ExitStack | None = request.__dict__.pop(_OPEN_LIMIT, None)
        if limit is None:
            return response
        limit.close()  # commits the read's transaction, or rolls back a stopped one
        if request.__dict__.pop(_STOPPED, False):
            return self._stopped(request)
        if isinstance(response, StreamingHttpResponse) and not response.is_async:
            content = cast(Iterator[bytes], response.streaming_content)
            response.streaming_content = _streamed_under_limit(content)
        return response

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> None:
        ms = read_timeout_ms()
        if (
            request.method not in READ_METHODS
            or ms <= 0
            or getattr(view, "read_limit_exempt", False)
        ):
            return
        limit = ExitStack()
        try:
            limit.enter_context(statement_time_limit(ms, per_statement=True))
        except DatabaseError:
            return  # no database: the view meets the same failure and answers it its way
        setattr(request, _OPEN_LIMIT, limit)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not hasattr(request, _OPEN_LIMIT) or not is_statement_timeout(exception):
            return None
        setattr(request, _STOPPED, True)
        # Answered by __call__ once the transaction has ended: the error page reads too.
        return HttpResponse(status=503)

    @staticmethod
    def _stopped(request: HttpRequest) -> HttpResponseBase:
        from claims.views.errors import TooSlow, error_response

        ms = read_timeout_ms()
        log_stopped(request, ms)
        # After HtmxMiddleware, whose request.htmx picks the error fragment or the page.
        page = error_response(cast(HtmxHttpRequest, request), TooSlow(stopped_message(ms)))
        return mark_logged(page)


def _streamed_under_limit(content: Iterable[bytes]) -> Iterator[bytes]:
    with statement_time_limit(read_timeout_ms(), per_statement=True):
        yield from content
