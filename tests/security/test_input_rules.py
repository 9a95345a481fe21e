"""One rule for times, one for ids, one for structure, whatever interface takes the input:
a value outside them is a 422 in the API and a 400 on the pages, naming the rule, and
changes nothing; a row another program wrote outside them still renders."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client

from claims.models import BackfillJob, Workflow, WorkflowClaim, WorkflowStatus
from claims.protocol.text import JSON_MAX_DEPTH
from claims.protocol.times import MAX_TIME_MS, MIN_TIME_MS
from tests import factories

pytestmark = pytest.mark.django_db

API = "/api/v1"


@pytest.fixture
def root(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root"))
    return client


def post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, body, content_type="application/json")


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def cursor_of(payload: list[Any]) -> str:
    # ensure_ascii keeps a lone surrogate as its \ud800 escape, as an edited cursor would.
    text = json.dumps(payload)
    return "k1." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# -- times -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "run_at",
    [
        "9999-12-31T23:59:59-14:00",  # 10000-01-01T13:59:59Z
        "9999-12-31T23:59:59.999999-00:01",
    ],
)
def test_a_backfill_past_year_9999_in_utc_is_refused_and_backfills_keep_working(root, run_at):
    response = post(root, f"{API}/backfills", {"run_at": run_at})

    assert response.status_code == 422
    assert "9999-12-31T23:59:59.999Z" in response.json()["detail"]
    assert not BackfillJob.objects.exists()
    assert root.get("/backfills/").status_code == 200
    assert post(root, f"{API}/backfills", {}).status_code == 201


def test_the_admin_schedule_form_refuses_a_time_past_year_9999(root):
    response = root.post(
        "/admin/claims/backfilljob/schedule/", {"run_at": "9999-12-31T23:59:59-14:00"}
    )

    assert response.status_code == 200  # the form again, with the error beside the field
    assert "9999-12-31T23:59:59.999Z" in response.content.decode()
    assert not BackfillJob.objects.exists()


@pytest.mark.parametrize("bound", ["since_ms", "until_ms"])
@pytest.mark.parametrize("value", [MAX_TIME_MS + 1, 2**63, -(2**63)])
def test_an_api_time_filter_outside_the_time_rule_is_a_422(root, bound, value):
    response = root.get(f"{API}/workflows?{bound}={value}")

    assert response.status_code == 422


def test_the_api_time_filters_take_the_whole_range(root):
    query = f"since_ms={MIN_TIME_MS}&until_ms={MAX_TIME_MS}"
    assert root.get(f"{API}/workflows?{query}").status_code == 200


@pytest.mark.parametrize(
    "since",
    ["٢٠٢٦-12-03T09:30", "10000-01-01T00:00Z", "0000-12-31T23:59Z", "2026-12-03T09:30+14:00"],
)
def test_a_page_time_filter_outside_the_time_rule_is_a_400(root, since):
    response = root.get("/workflows/", {"since": since})

    assert response.status_code == 400
    assert "UTC" in response.content.decode()


# -- ids -------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["drain", "undrain", "claims/release"])
def test_a_nul_in_an_engine_id_path_is_a_422_in_json(root, action):
    body = {"reason": "r", "claims": [{"workflow_id": "w", "expected_epoch": 1}]}

    response = post(root, f"{API}/engines/a%00b/{action}", body)

    assert response.status_code == 422
    assert response.json()["detail"] == "an engine id must not contain control characters"


@pytest.mark.parametrize("value", ["x\x00", "\ud800", "a" * 300])
def test_an_edited_keyset_cursor_is_refused_on_the_api_and_the_page(root, value):
    factories.make_claim("wf-1", engine="a")
    cursor = cursor_of(["holder", "a", value])

    api = root.get(f"{API}/claims", {"sort": "holder", "cursor": cursor})
    page = root.get("/claims/", {"sort": "holder", "cursor": cursor})

    assert api.status_code == 422
    assert "cursor is damaged" in api.json()["detail"]
    assert page.status_code == 400
    assert "cursor is damaged" in page.content.decode()


@pytest.mark.parametrize("value", [2**64, -(2**70), 1.5, True])
def test_a_cursor_holding_a_number_no_column_holds_is_refused(root, value):
    cursor = cursor_of(["epoch", value, "wf-1"])

    assert root.get(f"{API}/claims", {"sort": "epoch", "cursor": cursor}).status_code == 422
    assert root.get("/claims/", {"sort": "epoch", "cursor": cursor}).status_code == 400


@pytest.mark.parametrize("cursor", ["9" * 40 + ":wf-1", "1:wf\x00", "١٢:wf-1"])
def test_a_workflows_cursor_outside_the_rules_is_refused(root, cursor):
    assert root.get(f"{API}/workflows", {"cursor": cursor}).status_code == 422
    assert root.get("/workflows/", {"cursor": cursor}).status_code == 400


# Times another program wrote (or a garbled row holds): before 1970, past the time rule,
# and the ends of a 64-bit column.
STORED_TIMES = [-1, MIN_TIME_MS - 1, MAX_TIME_MS + 1, 2**63 - 1, -(2**63)]


def next_page(client: Client, path: str, params: dict[str, str]) -> Any:
    """The page after the first, by the cursor the first page wrote."""
    first = client.get(path, params)
    assert first.status_code == 200
    cursor = first.context["page"].next_cursor
    assert cursor is not None
    return client.get(path, {**params, "cursor": cursor})


@pytest.mark.parametrize("sort", ["updated", "created"])
@pytest.mark.parametrize("at_ms", STORED_TIMES)
def test_the_workflows_page_takes_back_the_cursor_it_wrote_whatever_the_row_holds(
    root, sort, at_ms
):
    for n in range(51):  # one more than a page
        factories.make_workflow(f"wf-{n:02d}", created_at_ms=at_ms, updated_at_ms=at_ms)

    second = next_page(root, "/workflows/", {"sort": sort})

    assert second.status_code == 200
    assert [row.workflow_id for row in second.context["page"].items] == ["wf-00"]


@pytest.mark.parametrize("sort", ["expires_at", "-expires_at", "claimed_at", "-claimed_at"])
@pytest.mark.parametrize("at_ms", [2**53, *STORED_TIMES])
def test_the_claims_page_takes_back_the_cursor_it_wrote_whatever_the_row_holds(root, sort, at_ms):
    for n in range(51):
        factories.make_claim(f"wf-{n:02d}")
    WorkflowClaim.objects.update(holder_expires_at_ms=at_ms, holder_claimed_at_ms=at_ms)

    second = next_page(root, "/claims/", {"state": "all", "sort": sort})

    assert second.status_code == 200
    expected = "wf-00" if sort.startswith("-") else "wf-50"
    assert [row.workflow_id for row in second.context["page"].items] == [expected]


@pytest.mark.parametrize("workflow_id", [".", ".."])
def test_dot_segment_workflow_ids_are_refused_at_creation(root, workflow_id):
    response = post(
        root, f"{API}/workflows", {"workflow_type": "order", "workflow_id": workflow_id}
    )

    assert response.status_code == 422
    assert f"must not be {workflow_id!r}" in json.dumps(response.json())
    assert not Workflow.objects.exists()


# -- structure -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [JSON_MAX_DEPTH + 1, 900, 920, 100_000])
def test_input_nested_past_the_limit_is_a_422_and_starts_nothing(root, depth):
    # Written out by hand: the JSON encoder itself cannot write 100,000 levels.
    note = "[" * (depth - 1) + "1" + "]" * (depth - 1)
    body = f'{{"workflow_type": "order", "input": {{"note": {note}}}}}'

    response = post(root, f"{API}/workflows", body)

    assert response.status_code == 422
    assert f"more than {JSON_MAX_DEPTH} levels" in json.dumps(response.json())
    assert not Workflow.objects.exists()


def test_input_at_the_depth_limit_starts(root):
    body = {"workflow_type": "order", "input": {"note": nested(JSON_MAX_DEPTH - 1)}}

    assert post(root, f"{API}/workflows", body).status_code == 201


def test_brackets_inside_strings_do_not_count_as_depth(root):
    body = {"workflow_type": "order", "input": {"note": "[" * 5_000 + '{\\"' * 100}}

    assert post(root, f"{API}/workflows", body).status_code == 201


# -- the runtime and the demo types ------------------------------------------------


def test_a_parked_time_no_date_can_show_still_renders(root):
    """A wake-up past year 9999 (written before the rule, or by another program)."""
    wake_at = 10**303
    factories.make_workflow(
        "far",
        status=WorkflowStatus.RUNNING,
        state={"input": {}, "steps": {}, "park": {"sleep": 0, "wake_at_ms": wake_at}},
    )

    response = root.get("/workflows/far/")

    assert response.status_code == 200
    assert f"{wake_at} ms" in response.content.decode()


@pytest.mark.parametrize(
    ("workflow_type", "input"),
    [
        ("ledger", {"steps": 1e9}),
        ("ledger", {"steps": 10**9}),
        ("ledger", {"step_delay_ms": 10**7}),
        ("ledger", {"sleep": 1e300}),
        ("order", {"sleep": 1e300}),
        ("order", {"items": 10**12}),
        ("invoice", {"lines": list(range(1_000))}),
        ("invoice", {"lines": [10**20]}),
    ],
)
def test_demo_types_refuse_input_outside_their_bounds(root, workflow_type, input):
    response = post(root, f"{API}/workflows", {"workflow_type": workflow_type, "input": input})

    assert response.status_code == 422
    assert "input." in response.json()["detail"]
    assert not Workflow.objects.exists()


def test_the_engine_id_rule_is_the_services_too(root):
    """The page and the API check first; the service checks whatever calls it."""
    from claims.protocol.errors import InvalidInputError
    from claims.services.drain import engine_drain

    # No row: PostgreSQL cannot store that id, and the rule is asked before any lookup.
    with pytest.raises(InvalidInputError, match="control characters"):
        engine_drain("e\x00", actor="root", reason="r")
