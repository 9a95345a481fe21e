"""Operator actions on a whole engine: release all its claims, drain, undrain.

GET shows the confirmation; POST performs it. The bulk release carries, per claim, the
epoch the operator saw (``claim=<workflow id>:<epoch>``): each is a compare-and-swap of its
own, and the result lists what was released and what had moved on (409 in its row).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from claims.http.htmx import HtmxHttpRequest
from claims.models import Engine
from claims.selectors.engines.actions import engine_get, engine_held_claims
from claims.services.claims import BULK_RELEASE_MAX, claims_force_release_for_engine
from claims.services.drain import engine_drain, engine_undrain

from .errors import BadInput, NotFound, Refused
from .inputs import engine_id_param, positive_int, reason_param, workflow_id_param
from .pages import operator_page, see_other
from .permissions import DRAIN_ENGINE, FORCE_CLAIM, action_refusal

TEMPLATE = "claims/engine_action.html"
TITLES = {
    "release": "Release all claims of this engine",
    "drain": "Drain engine",
    "undrain": "Undrain engine",
}


def _engine(engine_id: str) -> Engine:
    engine = engine_get(engine_id_param(engine_id))
    if engine is None:
        raise NotFound(f"no engine with id {engine_id!r}")
    return engine


def _context(request: HtmxHttpRequest, action: str, engine: Engine) -> dict[str, Any]:
    permission = FORCE_CLAIM if action == "release" else DRAIN_ENGINE
    return {
        "action": action,
        "title": TITLES[action],
        "engine": engine,
        "refusal": action_refusal(request.user, permission),
        "action_url": reverse(f"claims:engine_{action}", args=[engine.engine_id]),
        "values": {"reason": request.POST.get("reason", "")},
        "errors": {},
        "max_claims": BULK_RELEASE_MAX,
    }


def _seen_claims(values: list[str]) -> list[tuple[str, int]]:
    """The ``<workflow id>:<epoch>`` pairs the form carried (an id may hold ":")."""
    if len(values) > BULK_RELEASE_MAX:
        raise BadInput(f"at most {BULK_RELEASE_MAX} claims in one release")
    seen = []
    for value in values:
        workflow_id, sep, epoch = value.rpartition(":")
        if not sep:
            raise BadInput(f"a claim is <workflow id>:<epoch>; got {value[:60]!r}")
        seen.append((workflow_id_param(workflow_id), positive_int(epoch, what="epoch")))
    if not seen:
        raise BadInput("name at least one claim to release")
    return seen


def _form_error(request: HtmxHttpRequest, context: dict[str, Any], error: str) -> HttpResponse:
    context["errors"] = {"reason": error}
    return render(request, TEMPLATE, context, status=400)


@require_http_methods(["GET", "POST"])
@operator_page
def engine_release(request: HtmxHttpRequest, engine_id: str) -> HttpResponseBase:
    """Force release every claim the engine holds, at the epochs the operator saw."""
    engine = _engine(engine_id)
    context = _context(request, "release", engine)
    if request.method == "GET":
        context["held"] = engine_held_claims(engine.engine_id, limit=BULK_RELEASE_MAX)
        return render(request, TEMPLATE, context)
    if context["refusal"]:
        raise Refused(context["refusal"])
    seen = _seen_claims(request.POST.getlist("claim"))
    try:
        reason = reason_param(request.POST.get("reason", ""))
    except BadInput as error:
        context["held"] = engine_held_claims(engine.engine_id, limit=BULK_RELEASE_MAX)
        return _form_error(request, context, str(error))
    # A bad pair is an InvalidInputError: operator_page answers it 400, as BadInput.
    outcomes = claims_force_release_for_engine(
        engine.engine_id, seen, actor=request.user.get_username(), reason=reason
    )
    context["outcomes"] = outcomes
    context["released"] = sum(o.status == "released" for o in outcomes)
    return render(request, TEMPLATE, context)


@require_http_methods(["GET", "POST"])
@operator_page
def engine_drain_action(request: HtmxHttpRequest, engine_id: str, action: str) -> HttpResponseBase:
    """Drain (no new claims, drives to their checkpoint, claims released) or undrain (back
    to acquiring and taking over); the URL names which."""
    engine = _engine(engine_id)
    context = _context(request, action, engine)
    if request.method == "GET":
        return render(request, TEMPLATE, context)
    if context["refusal"]:
        raise Refused(context["refusal"])
    try:
        reason = reason_param(request.POST.get("reason", ""))
    except BadInput as error:
        return _form_error(request, context, str(error))
    perform = engine_drain if action == "drain" else engine_undrain
    perform(engine.engine_id, actor=request.user.get_username(), reason=reason)
    messages.success(
        request,
        f"Engine {engine.engine_id} drains: it takes no new claims and releases what it holds"
        if action == "drain"
        else f"Engine {engine.engine_id} is undrained: it acquires and takes over again",
    )
    return see_other(reverse("claims:engine", args=[engine.engine_id]))
