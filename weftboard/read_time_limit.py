"""No read a user can request runs unbounded: each statement of a GET or HEAD served by a
view (the pages, the JSON API, the admin, /metrics) stops after WEFTBOARD_READ_TIMEOUT_MS
(claims.store.time_limit; 0 turns the limit off).

Only reads: a write keeps whatever time its locks take, since cutting it short would leave
the client unsure whether it landed. On PostgreSQL the limit's transaction opens at the
request's first statement, so a request that reads nothing (/healthz, a redirect to the
sign-in page) still touches no database. A read stopped by the limit answers an error
page with 503 (the error fragment for HTMX), logged once as a warning; the API answers
its own JSON 503 (weftboard.api). A streamed response (the audit CSV) reads while it
streams, under a limit of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from typing import Any, cast

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from claims.http.htmx import HtmxHttpRequest
from claims.store.time_limit import (
    is_statement_timeout,
    opens_first,
    set_statement_timeout,
    statement_time_limit,
)

READ_METHODS = frozenset({"GET", "HEAD"})
logger = logging.getLogger("weftboard.reads")
# Set on the request while its read limit is open, and when a statement was stopped.
_OPEN_LIMIT = "_weftboard_read_limit"
_STOPPED = "_weftboard_read_stopped"


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
        limit: _RequestLimit | None = request.__dict__.pop(_OPEN_LIMIT, None)
        if limit is None:
            return response
        limit.close()
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
        if request.method in READ_METHODS and ms > 0:
            setattr(request, _OPEN_LIMIT, _RequestLimit(ms))

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


class _RequestLimit:
    """The read limit of one request. PostgreSQL: the limit's transaction (or savepoint)
    opens just before the request's first statement, at the depth of transactions the
    request began in, so every transaction the view opens later nests inside it; a
    statement that comes first inside a transaction of the view's own is limited within
    that transaction, and the limit opens at the next statement outside it. SQLite: at
    once, as it reads nothing to set up."""

    def __init__(self, ms: int) -> None:
        self.ms = ms
        self.stack = ExitStack()
        self.opened = connection.vendor != "postgresql"
        if self.opened:
            self.stack.enter_context(statement_time_limit(ms, per_statement=True))
        else:
            self.depth = len(connection.atomic_blocks)
            self.stack.enter_context(connection.execute_wrapper(self._open_before_reading))
            # A limit of the view's own (the claims search) nests inside this one.
            self.stack.enter_context(opens_first(self._open_if_outside_transactions))

    def _open_if_outside_transactions(self) -> bool:
        if not self.opened and len(connection.atomic_blocks) == self.depth:
            self.opened = True
            self.stack.enter_context(statement_time_limit(self.ms, per_statement=True))
        return self.opened

    def _open_before_reading(self, execute: Callable[..., Any], *args: Any) -> Any:
        if not self._open_if_outside_transactions():
            set_statement_timeout(connection, self.ms)  # until the view's transaction ends
        return execute(*args)

    def close(self) -> None:
        """Commit the read's transaction, or roll back one a stopped statement aborted."""
        self.stack.close()


def _streamed_under_limit(content: Iterable[bytes]) -> Iterator[bytes]:
    with statement_time_limit(read_timeout_ms(), per_statement=True):
        yield from content
