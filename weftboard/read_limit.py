"""The read limit for the pages: every GET of a signed-in user counts against
WEFTBOARD_READ_RATE (claims.http.user_limits.READS), and one over it answers 429 with a page,
or for an htmx poll a notice, that says when reading resumes.

Not counted here: the API, which counts its reads itself once it knows the token's user
(claims.api.access); /metrics (its own token) and /healthz; static files; signing in and
out (django-axes guards the sign-in); and anonymous requests, which the pages send to
the sign-in page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from claims.http.htmx import HtmxHttpRequest
from claims.http.user_limits import READS
from claims.views.errors import TooManyRequests, error_response

READ_METHODS = frozenset({"GET", "HEAD"})
UNCOUNTED_PATHS = frozenset({"/metrics", "/healthz", "/login/", "/logout/"})
UNCOUNTED_PREFIXES = ("/api/", "/admin/login/", "/admin/logout/")


def counts_as_a_page_read(request: HttpRequest) -> bool:
    path = request.path
    if request.method not in READ_METHODS or path in UNCOUNTED_PATHS:
        return False
    static = "/" + str(settings.STATIC_URL).lstrip("/")
    if path.startswith((*UNCOUNTED_PREFIXES, static)):
        return False
    return bool(request.user.is_authenticated)


class ReadRateMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if counts_as_a_page_read(request):
            verdict = READS.check(request)
            if not verdict.admitted:
                return too_many_reads(request, verdict.wait_s)
        return self.get_response(request)


def too_many_reads(request: HttpRequest, wait_s: float | None) -> HttpResponse:
    wait = max(1, math.ceil(wait_s or 1))
    rate = READS.rate()
    over = f"More than {rate.limit} reads in {_window(rate.seconds)}" if rate else "Too many reads"
    error = TooManyRequests(
        f"{over} by your user (open tabs polling, or a script). Reading resumes in {wait} s."
    )
    # HtmxMiddleware, before this one, has set request.htmx.
    response = error_response(cast(HtmxHttpRequest, request), error)
    response["Retry-After"] = str(wait)
    return response


def _window(seconds: int) -> str:
    return {1: "a second", 60: "a minute", 3_600: "an hour", 86_400: "a day"}[seconds]
