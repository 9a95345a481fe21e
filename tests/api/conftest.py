"""Users, tokens and rows for the API tests; times are relative to the fleet clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.core.cache import cache
from django.test import Client
from pytest_django import DjangoAssertNumQueries

from claims.fleet_clock import fleet_clock
from claims.models import ApiToken, ClaimEvent, Engine, Workflow, WorkflowClaim, WorkflowStatus
from claims.services.tokens import api_token_mint
from tests import factories

API = "/api/v1"


def url(path: str) -> str:
    return API + path


def wf_url(workflow_id: str, rest: str) -> str:
    """The URL of a workflow route, the id percent-encoded as a client would send it."""
    return f"{API}/workflows/{quote(workflow_id, safe='')}{rest}"


def post(client: Client, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    data = {} if body is None else body
    return client.post(path, data, content_type="application/json", headers=headers)


def now_ms() -> int:
    return fleet_clock()()


@pytest.fixture(autouse=True)
def _fresh_throttle() -> Iterator[None]:
    """Throttle history lives in the cache, which outlives a test's transaction."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def operator(django_user_model: Any) -> Any:
    return factories.make_user("operator", factories.WRITE_PERMISSIONS)


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("viewer", password="pw")


@pytest.fixture
def token_for() -> Callable[..., str]:
    """Mint a token for a user; returns the secret, as the admin shows it once."""

    def mint(user: Any, scope: str = "read", name: str = "ci") -> str:
        return api_token_mint(ApiToken(name=name, user=user, scope=scope))

    return mint


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def make_workflow(
    workflow_id: str, *, status: str = WorkflowStatus.RUNNING, workflow_type: str = "order"
) -> Workflow:
    return factories.make_workflow(workflow_id, status=status, workflow_type=workflow_type)


def make_claim(workflow_id: str, **fields: Any) -> WorkflowClaim:
    """A claim row (tests.factories), here at epoch 3 unless said otherwise."""
    return factories.make_claim(workflow_id, **{"epoch": 3, **fields})


def make_engine(engine_id: str, **fields: Any) -> Engine:
    """An engine row (tests.factories; ``fields`` as there), here heard from a second ago."""
    return factories.make_engine(engine_id, **{"heard_ago_ms": 1_000, **fields})


def claim_values(workflow_id: str) -> tuple[Any, ...]:
    return tuple(
        WorkflowClaim.objects.filter(workflow_id=workflow_id)
        .values_list(
            "epoch",
            "holder_engine_id",
            "holder_epoch",
            "holder_expires_at_ms",
            "holder_claimed_at_ms",
        )
        .get()
    )


def assert_rotated(response: Any, *, status: str, epoch: int, reason: str) -> None:
    """A 200 answering the workflow now ``status`` and its claim ownerless at ``epoch``, the
    one event a "rotated" by the operator giving ``reason``."""
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["workflow"]["status"] == status
    assert (body["claim"]["epoch"], body["claim"]["state"]) == (epoch, "ownerless")
    event = ClaimEvent.objects.get()
    assert (event.kind, event.actor, event.reason) == ("rotated", "operator", reason)


def assert_bad_query(client: Client, path: str) -> None:
    """A GET of ``path`` is refused as bad input: 422, saying why."""
    response = client.get(path)
    assert response.status_code == 422, response.content
    assert "detail" in response.json()


def listed_within(
    client: Client, path: str, queries: int, assert_max_num_queries: DjangoAssertNumQueries
) -> Any:
    """The JSON answer to a GET of ``path``, which must cost at most ``queries`` queries once
    a first GET has calibrated the process's fleet clock."""
    client.get(path)
    with assert_max_num_queries(queries):
        return client.get(path).json()
