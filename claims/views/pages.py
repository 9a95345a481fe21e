"""What every operator page shares: login, the error mapping, and full page or fragment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from claims.http.htmx import HtmxHttpRequest
from claims.protocol.errors import ClaimError

from .errors import BadInput, error_response

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def operator_page(view: View) -> View:
    """Login required (an HTMX request is sent to the login page whole, never swapped
    into a fragment), and the error vocabulary mapped to 4xx error fragments."""

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            page = back_after_login(request)
            if request.htmx:
                return HttpResponseClientRedirect(f"{settings.LOGIN_URL}?next={quote(page)}")
            return redirect_to_login(page)
        try:
            return view(request, *args, **kwargs)
        except (BadInput, ClaimError) as error:
            return error_response(request, error)

    return wrapper  # type: ignore[return-value]


# The longest ``next`` a sign-in carries back, escaped: far under what a redirect may hold
# (Django refuses one past 16,384 characters) and what browsers and proxies take.
NEXT_MAX_LENGTH = 2_000


def back_after_login(request: HtmxHttpRequest) -> str:
    """The page to return to after signing in: for an HTMX request the page it came from
    (its HX-Current-URL, when that names this site), else the URL asked for. When that is
    too long for a redirect, its path alone, or else the overview."""
    page = None
    if request.htmx:
        try:
            page = request.htmx.current_url_abs_path
        except ValueError:  # a header no URL parser reads, such as "http://["
            page = None
    page = page or request.get_full_path()
    path = page.partition("?")[0]
    for candidate in (page, path):
        if len(quote(candidate)) <= NEXT_MAX_LENGTH:
            return candidate
    return reverse("claims:overview")


def see_other(url: str) -> HttpResponseRedirect:
    """303 after a POST that changed something: the browser GETs ``url``, and a reload
    does not post the form again."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An HTMX swap wants a fragment; a history restore wants the whole page back."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(
    request: HtmxHttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    fragments: Sequence[str],
    status: int = 200,
) -> HttpResponse:
    """The full page, or for HTMX the fragment whose id is the request's target
    (the first fragment when the target is not one of them)."""
    if wants_fragment(request):
        target = request.htmx.target
        template += "#" + (target if target and target in fragments else fragments[0])
    return render(request, template, context, status=status)
