"""Operator actions on one workflow: force release, force takeover, cancel.

GET shows the confirmation (the precondition the write will assert and its effect);
POST performs it. Release and takeover compare-and-swap on the epoch the operator saw:
when it moved, the answer is 409 with the fresh state and a new form in place of the old.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget, trigger_client_event

from claims.models import TERMINAL_STATUSES, Workflow
from claims.notify import claim_force_takeover_and_notify
from claims.protocol.errors import (
    ClaimConfigError,
    InvalidTransitionError,
    StaleEpochError,
)
from claims.selectors.engines import live_engine_ids
from claims.selectors.workflow_detail import claim_view
from claims.services import claim_force_release, workflow_cancel
from weftboard.http import HtmxHttpRequest

from .errors import BadInput, NotFound, Refused, error_response
from .inputs import (
    engine_id_param,
    optional_positive_int,
    positive_int,
    reason_param,
    workflow_id_param,
)
from .pages import fleet_now, operator_page
from .permissions import CANCEL_WORKFLOW, FORCE_CLAIM, action_refusal

ACTION_TARGET = "#action-panel"
TEMPLATE = "claims/action.html"
TITLES = {"release": "Force release", "takeover": "Force takeover", "cancel": "Cancel workflow"}


def _context(
    request: HtmxHttpRequest, action: str, workflow_id: str, **extra: Any
) -> dict[str, Any]:
    now, timing = fleet_now()
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    claim = claim_view(workflow_id, now_ms=now, timing=timing)
    if workflow is None and claim is None:
        raise NotFound(f"no workflow and no claim with id {workflow_id!r}")
    permission = CANCEL_WORKFLOW if action == "cancel" else FORCE_CLAIM
    refusal = action_refusal(request.user, permission)
    # Not allowed (403) comes first; then what the workflow's state rules out (409).
    refusal_status = 403
    if refusal is None:
        refusal_status = 409
        if action == "cancel" and workflow is None:
            refusal = "the workflow was purged; only its claim row is kept"
        elif action == "cancel" and workflow is not None and workflow.status in TERMINAL_STATUSES:
            refusal = f"the workflow is already {workflow.status}"
        elif action != "cancel" and claim is None:
            refusal = "this workflow has never been claimed"
        elif action == "release" and claim is not None and claim.state == "ownerless":
            refusal = "nobody holds this claim: there is nothing to release"
        elif action == "takeover" and (workflow is None or workflow.status in TERMINAL_STATUSES):
            status = "purged" if workflow is None else workflow.status
            refusal = f"the workflow is {status}: no engine needs to drive it"
    context: dict[str, Any] = {
        "action": action,
        "title": TITLES[action],
        "workflow_id": workflow_id,
        "workflow": workflow,
        "claim": claim,
        # What the operator sees, and the form sends back; 0: never claimed (cancel only).
        "expected_epoch": (0 if action == "cancel" else None) if claim is None else claim.epoch,
        "now": now,
        "timing": timing,
        "refusal": refusal,
        "refusal_status": refusal_status,
        "engines": live_engine_ids() if action == "takeover" else [],
        "errors": {},
        "values": {},
    }
    context.update(extra)
    return context


def _form(request: HtmxHttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    if request.htmx:
        response = render(request, TEMPLATE + "#panel", context, status=status)
        return reswap(retarget(response, ACTION_TARGET), "innerHTML") if status >= 400 else response
    return render(request, TEMPLATE, context, status=status)


def _done(
    request: HtmxHttpRequest, workflow_id: str, message: str, context: dict[str, Any]
) -> HttpResponseBase:
    if request.htmx:
        response = render(request, TEMPLATE + "#done", {**context, "message": message})
        return trigger_client_event(response, "claimChanged", {"workflow_id": workflow_id})
    messages.success(request, message)
    response = HttpResponseRedirect(reverse("claims:workflow", args=[workflow_id]))
    response.status_code = 303  # See Other: the browser GETs the workflow page
    return response


def _perform(
    request: HtmxHttpRequest, action: str, workflow_id: str, context: dict[str, Any]
) -> HttpResponseBase:
    post = request.POST
    actor = request.user.get_username()
    values = {"reason": post.get("reason", ""), "target": post.get("target_engine_id", "")}
    context["values"] = values
    errors: dict[str, str] = {}
    try:
        reason = reason_param(values["reason"])
    except BadInput as error:
        errors["reason"] = str(error)
    # A malformed epoch is not a form slip but a bad request: nothing to re-offer.
    raw_epoch = post.get("expected_epoch", "")
    if action == "cancel" and raw_epoch.strip() == "0":
        expected: int | None = 0  # the workflow had no claim when the operator saw it
    else:
        expected = positive_int(raw_epoch, what="expected_epoch")
    target = ""
    if action == "takeover":
        try:
            target = engine_id_param(values["target"].strip())
            if target not in context["engines"]:
                raise BadInput(f"engine {target!r} is not a live engine")
        except BadInput as error:
            errors["target"] = str(error)
    if errors:
        context["errors"] = errors
        if expected is not None:
            context["expected_epoch"] = expected
        return _form(request, context, status=400)
    old = context["claim"]
    try:
        if action == "release":
            assert expected is not None
            epoch = claim_force_release(
                workflow_id, expected_epoch=expected, actor=actor, reason=reason
            )
            holder = old.holder_engine_id if old and old.holder_engine_id else None
            message = f"Released: epoch {expected} → {epoch}" + (
                f"; engine {holder} is deposed on its next write" if holder else ""
            )
        elif action == "takeover":
            assert expected is not None
            epoch = claim_force_takeover_and_notify(
                workflow_id,
                expected_epoch=expected,
                target_engine_id=target,
                actor=actor,
                reason=reason,
            )
            message = f"Taken over: epoch {expected} → {epoch}; engine {target} adopts it"
        else:
            workflow_cancel(workflow_id, actor=actor, reason=reason, expected_epoch=expected)
            message = "Cancelled; its claim moved to the next epoch"
    except (StaleEpochError, InvalidTransitionError) as error:
        fresh = _context(request, action, workflow_id, values=values)
        if isinstance(error, StaleEpochError):
            fresh.update(stale=True, seen_epoch=expected)
        else:
            fresh.update(conflict=str(error))
        # The live parts of the page refresh too, so everything shows the fresh state.
        return trigger_client_event(
            _form(request, fresh, status=409), "claimChanged", {"workflow_id": workflow_id}
        )
    except ClaimConfigError as error:
        context["errors"] = {"target" if action == "takeover" else "reason": str(error)}
        return _form(request, context, status=400)
    return _done(request, workflow_id, message, context)


def _action(request: HtmxHttpRequest, action: str, workflow_id: str) -> HttpResponseBase:
    try:
        workflow_id = workflow_id_param(workflow_id)
        context = _context(request, action, workflow_id)
        if request.method == "GET":
            seen = optional_positive_int(request.GET, "epoch", what="epoch")
            current = context["expected_epoch"]
            if seen is not None and current is not None and seen != current:
                context.update(stale=True, seen_epoch=seen)
                return _form(request, context, status=409)
            return _form(request, context)
        if context["refusal"]:
            if context["refusal_status"] == 403:
                raise Refused(context["refusal"])
            return _form(request, context, status=409)
        return _perform(request, action, workflow_id, context)
    except BadInput as error:
        return error_response(request, error, target=ACTION_TARGET)


@require_http_methods(["GET", "POST"])
@operator_page
def claim_release(request: HtmxHttpRequest, workflow_id: str) -> HttpResponseBase:
    """Epoch + 1 with no holder; the old holder is deposed on its next write."""
    return _action(request, "release", workflow_id)


@require_http_methods(["GET", "POST"])
@operator_page
def claim_takeover(request: HtmxHttpRequest, workflow_id: str) -> HttpResponseBase:
    """Epoch + 1 granted to a chosen live engine, which is told to adopt and drive it."""
    return _action(request, "takeover", workflow_id)


@require_http_methods(["GET", "POST"])
@operator_page
def workflow_cancel_action(request: HtmxHttpRequest, workflow_id: str) -> HttpResponseBase:
    """External terminal transition: cancelled, and the claim rotated in the same commit."""
    return _action(request, "cancel", workflow_id)
