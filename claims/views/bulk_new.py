"""Start a bulk job from a page: pick the action for the query a list page carried here,
see what it would do (the count, what its rules would refuse and why, the first rows),
then confirm with a reason; above TYPED_CONFIRMATION_ABOVE workflows the operator types
the count. A count that changed before the freeze asks again with both numbers.

GET shows the form and its preview; POST creates the job and sends the browser to the
job's page (303). Each drawn form carries a fresh random request key: the service returns
the job a key already made, so a double click or a form posted again makes one job.
"""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from claims.bulk import bulk_preview
from claims.bulk.actions import BULK_PERMISSION, permissions_for
from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.models import BulkAction, BulkList
from claims.protocol.errors import ClaimConfigError, InvalidInputError
from claims.query import Query, QueryError
from claims.selectors.engines.listing import live_engine_ids
from claims.services.bulk import (
    MAX_RATE_PER_S,
    TYPED_CONFIRMATION_ABOVE,
    BulkRequest,
    bulk_job_create,
)
from claims.services.errors import BulkCountChangedError, ReadOnlyError

from .errors import BadInput, Refused
from .inputs import engine_id_param, optional_choice, positive_int, reason_param
from .pages import operator_page, see_other
from .permissions import action_refusal
from .query_text import QueryInput, editable_text, query_input

TEMPLATE = "claims/bulk_new.html"
SPREAD = ""  # the takeover target that spreads the claims over the live engines
_REQUEST_KEY = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def act_on_all_link(list_name: str, picked: Query | None, typed: QueryInput) -> str:
    """The "Act on all…" link of a list page: what it shows (its filters and its query, as
    one query) carried to this form; "" while its query must be mended."""
    if typed.error is not None:
        return ""
    query = urlencode({"list": list_name, "query": editable_text(picked, typed.query)})
    return f"{reverse('claims:bulk_new')}?{query}"


def bulk_refusal(request: HtmxHttpRequest, action: str | None) -> str | None:
    """Why this user may not start (or steer) a bulk ``action`` now: read-only mode, then
    the bulk permission, then the action's own."""
    needed = permissions_for(action) if action else (BULK_PERMISSION,)
    for permission in sorted(needed, key=lambda p: p != BULK_PERMISSION):
        if refusal := action_refusal(request.user, permission):
            return refusal
    return None


def _picked(params: QueryDict) -> dict[str, Any]:
    """What the operator picked, each checked (a bad list or action is a bad request)."""
    action = optional_choice(params, "action", BulkAction.values)
    target = params.get("target_engine_id", SPREAD).strip()
    return {
        "list": optional_choice(params, "list", BulkList.values) or BulkList.CLAIMS,
        "action": action,
        "target": engine_id_param(target) if target and action == BulkAction.TAKEOVER else SPREAD,
        "rate": params.get("rate_per_s", "").strip(),
    }


def _context(request: HtmxHttpRequest, params: QueryDict) -> dict[str, Any]:
    """The form as picked; the preview is added by ``_with_preview``."""
    picked = _picked(params)
    typed: QueryInput = query_input(params)
    context: dict[str, Any] = {
        **picked,
        "query": typed,
        "lists": BulkList.values,
        "actions": BulkAction.values,
        "engines": live_engine_ids(),
        "refusal": bulk_refusal(request, picked["action"]),
        "typed_above": TYPED_CONFIRMATION_ABOVE,
        "request_key": secrets.token_urlsafe(24),
        "values": {"reason": params.get("reason", "")},
        "errors": {},
        "preview": None,
        "preview_error": None,
    }
    return context


def _with_preview(context: dict[str, Any]) -> dict[str, Any]:
    """What the action would do: two statements under the query budget."""
    typed: QueryInput = context["query"]
    if context["action"] and typed.query is not None:
        now, timing = fleet_now()
        try:
            context["preview"] = bulk_preview(
                context["list"], typed.query, context["action"], now_ms=now, timing=timing
            )
        except QueryError as error:  # read, but means nothing on this list: shown in place
            context["query"] = QueryInput(typed.text, None, error)
        except InvalidInputError as error:  # past the query budget: say so, preview nothing
            context["preview_error"] = str(error)
    preview = context["preview"]
    context["needs_typed_count"] = preview is not None and preview.count > TYPED_CONFIRMATION_ABOVE
    return context


@require_http_methods(["GET", "POST"])
@operator_page
def bulk_new(request: HtmxHttpRequest) -> HttpResponseBase:
    if request.method == "GET":
        context = _with_preview(_context(request, request.GET))
        status = 400 if context["query"].error else 200
        return render(request, TEMPLATE, context, status=status)
    context = _context(request, request.POST)
    if context["refusal"]:
        raise Refused(context["refusal"])
    return _create(request, context)


def _form_again(
    request: HtmxHttpRequest, context: dict[str, Any], status: int = 400
) -> HttpResponse:
    """The form again, with a fresh preview and what was wrong; nothing was created."""
    return render(request, TEMPLATE, _with_preview(context), status=status)


def _read_confirmation(request: HtmxHttpRequest, context: dict[str, Any]) -> BulkRequest | None:
    """The confirmed request, or None with the field errors set in the context."""
    post = request.POST
    errors: dict[str, str] = context["errors"]
    if context["query"].error is not None or context["query"].query is None:
        errors["query"] = "write a query that selects the workflows to act on"
    if not context["action"]:
        errors["action"] = "choose an action"
    reason = ""
    try:
        reason = reason_param(post.get("reason", ""))
    except BadInput as error:
        errors["reason"] = str(error)
    previewed = positive_int(post.get("previewed_count", ""), what="previewed_count")
    typed = post.get("typed_count", "").strip().replace(",", "")
    if previewed > TYPED_CONFIRMATION_ABOVE and typed != str(previewed):
        errors["typed_count"] = (
            f"type the number of workflows the preview counted, {previewed}, to confirm"
            if not typed
            else f"you typed {typed[:20]}; the preview counted {previewed}"
        )
    rate = None
    if context["rate"]:
        try:
            rate = positive_int(context["rate"], what="the rate")
            if rate > MAX_RATE_PER_S:
                raise BadInput(f"the rate must be at most {MAX_RATE_PER_S:,} items a second")
        except BadInput as error:
            errors["rate"] = str(error)
    if errors:
        return None
    return BulkRequest(
        list_name=context["list"],
        query=context["query"].text,
        action=context["action"],
        reason=reason,
        target_engine_id=context["target"] or None,
        expected_count=previewed,
        rate_per_s=rate,
        request_key=_request_key(post.get("request_key", "")),
    )


def _request_key(value: str) -> str:
    """The form's key, as the page drew it (URL-safe base64 of random bytes)."""
    if not _REQUEST_KEY.match(value):
        raise BadInput("the form's request key is missing or malformed; reload the page")
    return value


def _create(request: HtmxHttpRequest, context: dict[str, Any]) -> HttpResponseBase:
    ask = _read_confirmation(request, context)
    if ask is None:
        return _form_again(request, context)
    try:
        job = bulk_job_create(ask, actor=request.user.get_username())
    except BulkCountChangedError as error:
        context["count_changed"] = error
        return _form_again(request, context, status=409)
    except ReadOnlyError:
        raise  # a refusal (403), answered by operator_page
    except QueryError as error:  # what the query means on this list: shown under it
        context["query"] = QueryInput(context["query"].text, None, error)
        return _form_again(request, context)
    except (InvalidInputError, ClaimConfigError) as error:
        context["create_error"] = str(error)
        return _form_again(request, context)
    messages.success(
        request,
        f"Bulk job #{job.pk} will {job.action} {job.frozen_count:,} workflows; follow it here",
    )
    return see_other(reverse("claims:bulk_job", args=[job.pk]))
