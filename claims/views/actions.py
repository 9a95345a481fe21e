"""Operator actions on one workflow: force release, force takeover, cancel, suspend, resume.

GET shows the confirmation (the precondition the write will assert and its effect);
POST performs it. Each compare-and-swaps on the epoch the operator saw: when it moved,
the answer is 409 with the fresh state and a new form in place of the old.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget, trigger_client_event

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.protocol.errors import (
    ClaimConfigError,
    InvalidTransitionError,
    StaleEpochError,
    WorkflowNotFoundError,
)
from claims.protocol.transitions import is_expected_epoch
from claims.selectors.claims.ownership import claim_view
from claims.selectors.engines.listing import live_engine_ids
from claims.selectors.workflows.lookup import workflow_get
from claims.services.errors import ReadOnlyError

from .action_kinds import ACTIONS, ActionForm, ActionKind
from .errors import BadInput, NotFound, Refused, error_response
from .inputs import (
    engine_id_param,
    optional_positive_int,
    positive_int,
    reason_param,
    workflow_id_param,
)
from .pages import operator_page, see_other
from .permissions import action_refusal

ACTION_TARGET = "#action-panel"
TEMPLATE = "claims/action.html"


def _context(
    request: HtmxHttpRequest, action: str, workflow_id: str, **extra: Any
) -> dict[str, Any]:
    kind = ACTIONS[action]
    now, timing = fleet_now()
    workflow = workflow_get(workflow_id)
    claim = claim_view(workflow_id, now_ms=now, timing=timing)
    if workflow is None and claim is None:
        raise NotFound(f"no workflow and no claim with id {workflow_id!r}")
    # Not allowed (403) comes first; then what the workflow's state rules out (409).
    refusal = action_refusal(request.user, kind.permission)
    refusal_status = 403
    if refusal is None:
        refusal, refusal_status = kind.conflict(workflow, claim), 409
    context: dict[str, Any] = {
        "action": action,
        "title": kind.title,
        "workflow_id": workflow_id,
        "workflow": workflow,
        "claim": claim,
        # What the operator sees, and the form sends back.
        "expected_epoch": kind.unclaimed_epoch if claim is None else claim.epoch,
        # The action's own URL: the URL names are the ACTIONS keys.
        "action_url": reverse(f"claims:{action}", args=[workflow_id]),
        "now": now,
        "timing": timing,
        "refusal": refusal,
        "refusal_status": refusal_status,
        "engines": live_engine_ids() if kind.chooses_engine else [],
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
    return see_other(reverse("claims:workflow", args=[workflow_id]))


def _posted_epoch(kind: ActionKind, raw: str) -> int | None:
    """The epoch the operator saw. Malformed, it is not a form slip but a bad request
    (BadInput, 400): there is nothing to re-offer."""
    if kind.unclaimed_epoch is not None and raw.strip() == str(kind.unclaimed_epoch):
        return kind.unclaimed_epoch  # the workflow had no claim when the operator saw it
    return positive_int(raw, what="expected_epoch")


def _read_form(
    request: HtmxHttpRequest, kind: ActionKind, context: dict[str, Any]
) -> tuple[ActionForm, dict[str, str]]:
    """The posted form, and the field errors to show beside it (empty when it is good)."""
    post = request.POST
    values = {"reason": post.get("reason", ""), "target": post.get("target_engine_id", "")}
    context["values"] = values
    errors: dict[str, str] = {}
    reason = target = ""
    try:
        reason = reason_param(values["reason"])
    except BadInput as error:
        errors["reason"] = str(error)
    expected = _posted_epoch(kind, post.get("expected_epoch", ""))
    if kind.chooses_engine:
        try:
            target = engine_id_param(values["target"].strip())
            if target not in context["engines"]:
                raise BadInput(f"engine {target!r} is not a live engine")
        except BadInput as error:
            errors["target"] = str(error)
    form = ActionForm(
        actor=request.user.get_username(),
        reason=reason,
        expected_epoch=expected,
        target_engine_id=target,
    )
    return form, errors


def _perform(
    request: HtmxHttpRequest, action: str, workflow_id: str, context: dict[str, Any]
) -> HttpResponseBase:
    kind = ACTIONS[action]
    form, errors = _read_form(request, kind, context)
    if errors:
        context["errors"] = errors
        if form.expected_epoch is not None:
            context["expected_epoch"] = form.expected_epoch
        return _form(request, context, status=400)
    try:
        message = kind.perform(workflow_id, form, context["claim"])
    except (StaleEpochError, InvalidTransitionError, WorkflowNotFoundError) as error:
        # WorkflowNotFoundError: the row was deleted since it was read; the fresh state
        # refuses the action as it would have from the start (409, by the same rule).
        fresh = _context(request, action, workflow_id, values=context["values"])
        if isinstance(error, StaleEpochError):
            fresh.update(stale=True, seen_epoch=form.expected_epoch)
        else:
            fresh.update(conflict=str(error))
        # The live parts of the page refresh too, so everything shows the fresh state.
        return trigger_client_event(
            _form(request, fresh, status=409), "claimChanged", {"workflow_id": workflow_id}
        )
    except ReadOnlyError:
        raise  # a refusal, not a slip in the form: answered by workflow_action
    except ClaimConfigError as error:
        context["errors"] = {kind.error_field: str(error)}
        return _form(request, context, status=400)
    return _done(request, workflow_id, message, context)


@require_http_methods(["GET", "POST"])
@operator_page
def workflow_action(request: HtmxHttpRequest, workflow_id: str, action: str) -> HttpResponseBase:
    """One of ACTIONS on one workflow; the URL names the action (see claims/urls.py)."""
    try:
        workflow_id = workflow_id_param(workflow_id)
        context = _context(request, action, workflow_id)
        if request.method == "GET":
            seen = optional_positive_int(request.GET, "epoch", what="epoch")
            current = context["expected_epoch"]
            if seen is not None and current is not None and not is_expected_epoch(seen, current):
                context.update(stale=True, seen_epoch=seen)
                return _form(request, context, status=409)
            return _form(request, context)
        if context["refusal"]:
            if context["refusal_status"] == 403:
                raise Refused(context["refusal"])
            return _form(request, context, status=409)
        return _perform(request, action, workflow_id, context)
    except (BadInput, ReadOnlyError) as error:
        # The read-only switch was turned on after the page drew the form: 403 here too.
        return error_response(request, error, target=ACTION_TARGET)
