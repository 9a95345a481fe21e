"""One workflow: its claim, epoch timeline, checkpoints and the actions on it."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from claims.fleet_clock import fleet_now
from claims.http.htmx import HtmxHttpRequest
from claims.models import TERMINAL_STATUSES
from claims.selectors.workflows.detail import workflow_detail

from .errors import NotFound
from .inputs import workflow_id_param
from .pages import operator_page, render_page
from .permissions import CANCEL_WORKFLOW, FORCE_CLAIM, SUSPEND_WORKFLOW, action_refusal


@require_GET
@operator_page
def workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    """Two live fragments (summary and history) around a panel for the action forms."""
    workflow_id = workflow_id_param(workflow_id)
    now, timing = fleet_now()
    detail = workflow_detail(workflow_id, now_ms=now, timing=timing)
    if detail is None:
        raise NotFound(f"no workflow and no claim with id {workflow_id!r}")
    running = detail.workflow is not None and detail.workflow.status not in TERMINAL_STATUSES
    context = {
        "d": detail,
        "timing": timing,
        "claim_refusal": action_refusal(request.user, FORCE_CLAIM),
        "cancel_refusal": action_refusal(request.user, CANCEL_WORKFLOW)
        or (None if running else "the workflow is not running"),
        # Suspend is offered on a running workflow, resume on a suspended one.
        "suspend_refusal": action_refusal(request.user, SUSPEND_WORKFLOW),
    }
    return render_page(
        request,
        "claims/workflow.html",
        context,
        fragments=["workflow-summary", "workflow-history"],
    )
