"""The read-only switch, for the admin: every write there is refused with the reason.

The services refuse every operator write while it is on (claims.services.rules), whatever
interface asked; the admin also has many writes of its own (users, groups, tokens, and
each model's add, change, delete and actions), so one middleware refuses every unsafe
request to it. Signing in and
out stay open: an operator must be able to look, and to leave.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse

from claims.conf import read_only_reason

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ReadOnlyAdminMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in SAFE_METHODS and self._is_admin_write(request.path):
            reason = read_only_reason()
            if reason is not None:
                body = render_to_string("admin/read_only.html", {"reason": reason}, request=request)
                return HttpResponse(body, status=403)
        return self.get_response(request)

    @staticmethod
    def _is_admin_write(path: str) -> bool:
        admin_root = reverse("admin:index")
        open_paths = (reverse("admin:login"), reverse("admin:logout"))
        return path.startswith(admin_root) and path not in open_paths
