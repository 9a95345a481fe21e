"""The page and the API refuse alike: every operator action, sent through its page and
through its API route with the same refused input, is refused by both, by the same rule,
and changes nothing.

One table: each action (the five on a workflow, the three on an engine, scheduling a
backfill) x each refusal that applies to it (read-only mode, a missing reason, a stale
epoch, an unknown workflow or engine, a workflow row deleted under its claim, no
permission, the target's state). Each row names the status each surface answers and the
text of the rule each shows: the same text where both word the rule alike, else the
part each says in its own words (the page's sentence, the API's short detail).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from claims.conf import read_only_reason
from claims.fleet_clock import fleet_clock
from claims.models import (
    BackfillJob,
    ClaimEvent,
    Engine,
    EngineEvent,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol.errors import InvalidInputError
from claims.protocol.text import check_reason
from claims.views import action_kinds
from tests import factories
from tests.conftest import _signed_in

pytestmark = pytest.mark.django_db

API = "/api/v1"
REASON = "a good reason"
READ_ONLY = "maintenance window"
BACKFILL_SCHEDULE = reverse("admin:claims_backfilljob_schedule")

# The scene: wf-run is running, claimed by e-1 at epoch 41; wf-susp is suspended, its
# claim ownerless at epoch 7; wf-gone's workflow row was deleted, its claim row (held by
# e-1 at epoch 9) is kept. e-1 and e-2 are live, e-3 is draining.
EPOCHS = {"wf-run": 41, "wf-susp": 7, "wf-gone": 9}


@pytest.fixture(autouse=True)
def scene(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    settings.WEFTBOARD_READ_ONLY = ""
    # A refused backfill never reaches a broker; nor would an accepted one here.
    monkeypatch.setattr("claims.services.backfills._enqueue", lambda job_id, eta: None)
    cache.clear()
    now = fleet_clock()()
    factories.make_engine("e-1")
    factories.make_engine("e-2")
    factories.make_engine("e-3", drain_requested_at_ms=now)
    factories.make_workflow("wf-run")
    factories.make_claim("wf-run", epoch=EPOCHS["wf-run"], engine="e-1")
    factories.make_workflow("wf-susp", status=WorkflowStatus.SUSPENDED)
    factories.make_claim("wf-susp", epoch=EPOCHS["wf-susp"], engine=None)
    factories.make_claim("wf-gone", epoch=EPOCHS["wf-gone"], engine="e-1")
    yield
    cache.clear()


def _operator() -> Client:
    # Staff with every write permission: the backfill's page is the admin's.
    perms = (*factories.WRITE_PERMISSIONS, "drain_engine", "view_backfilljob")
    return _signed_in(factories.make_user("operator", perms, is_staff=True))


def _viewer() -> Client:
    # Staff who may look at backfills, so the admin answers its own 403, not a login page.
    return _signed_in(factories.make_user("viewer", ("view_backfilljob",), is_staff=True))


def state() -> tuple[Any, ...]:
    """Everything an action could change."""
    return (
        sorted(WorkflowClaim.objects.values_list("workflow_id", "epoch", "holder_engine_id")),
        sorted(Workflow.objects.values_list("workflow_id", "status")),
        sorted(Engine.objects.values_list("engine_id", "status", "drain_requested_at_ms")),
        ClaimEvent.objects.count(),
        EngineEvent.objects.count(),
        sorted(BackfillJob.objects.values_list("pk", "status")),
    )


# -- the actions, each through both surfaces --------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """What one request sends: the same on the page and in the API."""

    target: str  # a workflow or engine id
    epoch: int
    reason: str = REASON


@dataclass(frozen=True)
class Action:
    permission: str
    target: str  # the workflow or engine it acts on when the refusal names none
    page: Callable[[Client, Sent], Any]
    api: Callable[[Client, Sent], Any]


def _api_post(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(API + path, body, content_type="application/json")


def _workflow_action(action: str, api_path: str, **extra: str) -> tuple[Callable, Callable]:
    def page(client: Client, sent: Sent) -> Any:
        body = {"expected_epoch": str(sent.epoch), "reason": sent.reason}
        return client.post(f"/{action}/{sent.target}", {**body, **extra})

    def api(client: Client, sent: Sent) -> Any:
        body = {"expected_epoch": sent.epoch, "reason": sent.reason}
        return _api_post(client, f"/workflows/{sent.target}{api_path}", {**body, **extra})

    return page, api


def _engine_release() -> tuple[Callable, Callable]:
    def page(client: Client, sent: Sent) -> Any:
        body = {"claim": [f"wf-run:{sent.epoch}"], "reason": sent.reason}
        return client.post(f"/engine-release/{sent.target}", body)

    def api(client: Client, sent: Sent) -> Any:
        claims = [{"workflow_id": "wf-run", "expected_epoch": sent.epoch}]
        body = {"claims": claims, "reason": sent.reason}
        return _api_post(client, f"/engines/{sent.target}/claims/release", body)

    return page, api


def _engine_drain(action: str) -> tuple[Callable, Callable]:
    def page(client: Client, sent: Sent) -> Any:
        return client.post(f"/engine-{action}/{sent.target}", {"reason": sent.reason})

    def api(client: Client, sent: Sent) -> Any:
        return _api_post(client, f"/engines/{sent.target}/{action}", {"reason": sent.reason})

    return page, api


def _backfill_schedule() -> tuple[Callable, Callable]:
    def page(client: Client, sent: Sent) -> Any:
        return client.post(BACKFILL_SCHEDULE, {"run_at": ""})

    def api(client: Client, sent: Sent) -> Any:
        return _api_post(client, "/backfills", {})

    return page, api


ACTIONS: dict[str, Action] = {
    "release": Action(
        "claims.force_claim", "wf-run", *_workflow_action("release", "/claim/release")
    ),
    "takeover": Action(
        "claims.force_claim",
        "wf-run",
        *_workflow_action("takeover", "/claim/takeover", target_engine_id="e-2"),
    ),
    "cancel": Action("claims.cancel_workflow", "wf-run", *_workflow_action("cancel", "/cancel")),
    "suspend": Action(
        "claims.suspend_workflow", "wf-run", *_workflow_action("suspend", "/suspend")
    ),
    "resume": Action("claims.suspend_workflow", "wf-susp", *_workflow_action("resume", "/resume")),
    "engine-release": Action("claims.force_claim", "e-1", *_engine_release()),
    "drain": Action("claims.drain_engine", "e-1", *_engine_drain("drain")),
    "undrain": Action("claims.drain_engine", "e-3", *_engine_drain("undrain")),
    "backfill-schedule": Action("claims.schedule_backfill", "", *_backfill_schedule()),
}
WORKFLOW_ACTIONS = ("release", "takeover", "cancel", "suspend", "resume")
ENGINE_ACTIONS = ("engine-release", "drain", "undrain")


# -- the refusals -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """How each surface answers: its status, and the rule's text it shows."""

    page_status: int
    api_status: int
    page_text: str
    api_text: str | None = None  # None: the same text as the page's


def _missing_reason_rule() -> str:
    try:
        check_reason("")
    except InvalidInputError as error:
        return str(error)
    raise AssertionError("an empty reason passed the reason rule")


def _refusal(action: str, refusal: str) -> tuple[Sent, Refused] | None:
    """What both surfaces are sent for ``refusal``, and how they refuse it; None where the
    refusal cannot apply to the action (an engine action has no workflow)."""
    kind = ACTIONS[action]
    target = kind.target
    epoch = EPOCHS.get(target, 41)
    on_workflow = action in WORKFLOW_ACTIONS
    on_engine = action in ENGINE_ACTIONS
    if refusal == "read-only":
        # The text is read after the switch is set (see the test).
        return Sent(target, epoch), Refused(403, 403, "<read-only>")
    if refusal == "no-permission":
        # The page says "you need", the API "this needs": the same permission named.
        return Sent(target, epoch), Refused(403, 403, f"the permission {kind.permission}")
    if refusal == "missing-reason" and (on_workflow or on_engine):
        # The page shows the reason rule beside the field; the API's schema refuses an
        # empty reason before the rule, naming the field.
        return Sent(target, epoch, reason=""), Refused(400, 422, _missing_reason_rule(), "reason")
    if refusal == "stale-epoch" and on_workflow:
        seen = epoch - 1
        return Sent(target, seen), Refused(
            409,
            409,
            f"it is now at epoch {epoch}",
            f"claim of workflow {target!r} is at epoch {epoch}, not the expected {seen}",
        )
    if refusal == "stale-epoch" and action == "engine-release":
        # The batch itself is answered (200); the moved claim's row is refused, unreleased.
        return Sent(target, epoch - 1), Refused(
            200, 200, f"moved on: now at epoch {epoch}", f"is at epoch {epoch}"
        )
    if refusal == "unknown-target" and on_workflow:
        return Sent("nope", 1), Refused(404, 404, "with id 'nope'")
    if refusal == "unknown-target" and on_engine:
        # The API's 404 for a missing engine row says only "not found" (weftboard/api.py).
        return Sent("e-none", 1), Refused(404, 404, "no engine with id 'e-none'", "not found")
    if refusal == "deleted-workflow-row" and on_workflow:
        # The claim row is kept; the page refuses every action on it (409, as any other
        # state that rules it out), the API answers 404: both by WorkflowNotFoundError.
        return Sent("wf-gone", EPOCHS["wf-gone"]), Refused(
            409, 404, "no workflow with id 'wf-gone'"
        )
    if refusal == "target-state" and action == "drain":
        return Sent("e-3", 1), Refused(409, 409, "engine e-3 is already draining")
    if refusal == "target-state" and action == "undrain":
        return Sent("e-1", 1), Refused(409, 409, "engine e-1 is already not draining")
    if refusal == "target-state" and action == "backfill-schedule":
        return Sent("", 1), Refused(
            302, 409, "a visibility backfill is already scheduled or running"
        )
    return None


REFUSALS = (
    "read-only",
    "missing-reason",
    "stale-epoch",
    "unknown-target",
    "deleted-workflow-row",
    "no-permission",
    "target-state",
)
CASES = [
    (action, refusal)
    for action in ACTIONS
    for refusal in REFUSALS
    if _refusal(action, refusal) is not None
]


def page_text(response: Any) -> str:
    """What the operator reads: the page, and the messages it queued (the admin's way)."""
    queued = " ".join(str(message) for message in get_messages(response.wsgi_request))
    return html.unescape(response.content.decode()) + " " + queued


def api_text(response: Any) -> str:
    return json.dumps(response.json())


def test_every_action_meets_every_refusal_that_applies_to_it():
    """The table is whole: each action is refused read-only and without the permission,
    each with a reason and a target is refused without them, each workflow action on a
    stale epoch and a deleted workflow row."""
    cases = set(CASES)
    for action in ACTIONS:
        assert {(action, "read-only"), (action, "no-permission")} <= cases
    for action in (*WORKFLOW_ACTIONS, *ENGINE_ACTIONS):
        assert {(action, "missing-reason"), (action, "unknown-target")} <= cases
    for action in WORKFLOW_ACTIONS:
        assert {(action, "stale-epoch"), (action, "deleted-workflow-row")} <= cases


@pytest.mark.parametrize(("action", "refusal"), CASES)
def test_the_page_and_the_api_refuse_alike(settings, action, refusal):
    case = _refusal(action, refusal)
    assert case is not None
    sent, expected = case
    kind = ACTIONS[action]
    client = _viewer() if refusal == "no-permission" else _operator()
    if refusal == "target-state" and action == "backfill-schedule":
        BackfillJob.objects.create(status="running", run_at=timezone.now())
    if refusal == "read-only":
        settings.WEFTBOARD_READ_ONLY = READ_ONLY
    before = state()

    page = kind.page(client, sent)
    after_page = state()
    api = kind.api(client, sent)

    text = read_only_reason() if refusal == "read-only" else expected.page_text
    assert text
    api_expected = text if refusal == "read-only" else (expected.api_text or text)
    assert (page.status_code, api.status_code) == (expected.page_status, expected.api_status)
    if not (refusal == "no-permission" and action == "backfill-schedule"):
        # Django's admin answers a missing permission with its bare 403 page.
        assert text in page_text(page)
    assert api_expected in api_text(api)
    assert after_page == before, "the page changed something it refused"
    assert state() == before, "the API changed something it refused"


@pytest.mark.parametrize("action", ["release", "takeover"])
def test_a_workflow_row_deleted_while_the_page_posts_is_refused_by_the_same_rule(
    monkeypatch, action
):
    """The row goes between the page's read and the service's write: the service refuses
    it (WorkflowNotFoundError), and the page answers as it would have from the start."""
    name = f"claim_force_{action}" + ("_and_notify" if action == "takeover" else "")
    real = getattr(action_kinds, name)

    def deleting_first(*args: Any, **kwargs: Any) -> Any:
        Workflow.objects.filter(workflow_id="wf-run").delete()
        return real(*args, **kwargs)

    monkeypatch.setattr(action_kinds, name, deleting_first)
    page, _ = _workflow_action(action, "", target_engine_id="e-2")
    response = page(_operator(), Sent("wf-run", EPOCHS["wf-run"]))

    assert response.status_code == 409
    assert "no workflow with id 'wf-run'" in page_text(response)
    claim = WorkflowClaim.objects.get(workflow_id="wf-run")
    assert (claim.epoch, claim.holder_engine_id) == (EPOCHS["wf-run"], "e-1")
    assert ClaimEvent.objects.count() == 0
