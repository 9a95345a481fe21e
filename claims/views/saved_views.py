"""Saved views on the list pages: the strip of saved queries above a list (each one click
from its ``?query=``), and the forms that save the current query or delete one's own.

The rules are claims.services.saved_queries'; these views only turn its refusals into
the pages' answers (another's private query is 404, as in the API).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBase
from django.urls import reverse
from django.views.decorators.http import require_POST

from claims.conf import read_only_reason
from claims.http.htmx import HtmxHttpRequest
from claims.models import BulkList, SavedQuery
from claims.selectors.saved_queries import saved_queries_for
from claims.services.saved_queries import saved_query_create, saved_query_delete

from .errors import NotFound, Refused
from .pages import operator_page, see_other

T = TypeVar("T")


def saved_views(request: HtmxHttpRequest, list_name: BulkList) -> dict[str, Any]:
    """The strip's context. The saved queries are read when the strip is drawn (one query
    on the full page); a live fragment, which does not draw it, reads nothing."""
    return {
        "saved_views": saved_queries_for(request.user, list_name),
        "saved_list": list_name.value,
        "saved_views_read_only": read_only_reason(),
    }


def list_url(list_name: str, query: str = "") -> str:
    url = reverse(f"claims:{list_name}")
    return f"{url}?{urlencode({'query': query})}" if query else url


def _as_page_refusal(write: Callable[[], T]) -> T:
    try:
        return write()
    except PermissionDenied as error:
        raise Refused(str(error)) from error
    except SavedQuery.DoesNotExist as error:
        raise NotFound(str(error)) from error


@require_POST
@operator_page
def saved_view_create(request: HtmxHttpRequest) -> HttpResponseBase:
    """Save the query under a name, then show the list under it."""
    form = request.POST
    saved = _as_page_refusal(
        lambda: saved_query_create(
            request.user,
            name=form.get("name", ""),
            list_name=form.get("list_name", ""),
            query=form.get("query", ""),
            shared=form.get("shared") == "on",
        )
    )
    return see_other(list_url(saved.list_name, saved.query))


@require_POST
@operator_page
def saved_view_delete(request: HtmxHttpRequest, saved_query_id: int) -> HttpResponseBase:
    """Delete one of one's own saved queries, then show its list."""
    saved = _as_page_refusal(lambda: saved_query_delete(request.user, saved_query_id))
    return see_other(list_url(saved.list_name))
