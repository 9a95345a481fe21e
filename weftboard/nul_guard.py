"""A NUL byte in the path, a query parameter or a posted field of the admin or a sign-in
page is refused with 400 before any view runs.

PostgreSQL cannot hold NUL in text, so such a value would reach the database only to fail
there as a server error: an admin list filter such as ``?username__exact=%00`` does. Our
pages check their inputs with the shared rule (claims.protocol.text) and answer 400 in
the layout, and the API's schemas answer 422 in JSON by the same rule; this covers the
forms and query strings that are Django's own, on both databases.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

GUARDED = ("/admin/", "/login/", "/logout/")
MESSAGE = "A parameter holds a NUL character, which no field accepts. Nothing was changed.\n"


class NulGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The path too: the admin looks objects up by text primary keys taken from it.
        if request.path.startswith(GUARDED) and ("\x00" in request.path or _holds_nul(request)):
            return HttpResponse(MESSAGE, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _holds_nul(request: HttpRequest) -> bool:
    sources = [request.GET]
    if request.method == "POST" and request.content_type in {
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    }:
        sources.append(request.POST)
    return any(
        "\x00" in key or any("\x00" in value for value in values)
        for source in sources
        for key, values in source.lists()
    )
