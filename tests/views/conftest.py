"""Users and rows for the page tests; times are relative to the fleet clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.test import Client

from claims.fleet_clock import fleet_clock
from claims.models import (
    ClaimEvent,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from tests import factories
from tests.conftest import _signed_in

TTL_MS = 30_000
RENEW_MS = 5_000
HTMX = {"HTTP_HX_REQUEST": "true"}


def now_ms() -> int:
    return fleet_clock()()


def htmx(target: str | None = None) -> dict[str, str]:
    """Headers of an HTMX request, optionally naming the element it swaps."""
    return {**HTMX, **({"HTTP_HX_TARGET": target} if target else {})}


def make_engine(engine_id: str, *, status: str = EngineStatus.ACTIVE, **fields: Any) -> Engine:
    now = now_ms()
    values: dict[str, Any] = {
        "hostname": "host-1",
        "pid": 100,
        "queue": f"engine.{engine_id}",
        "started_at_ms": now - 60_000,
        "heartbeat_at_ms": now,
        "status": status,
        "clock_skew_ms": 3,
        "clock_error_ms": 1,
    }
    values.update(fields)
    return Engine.objects.create(engine_id=engine_id, **values)


def make_workflow(
    workflow_id: str, *, status: str = WorkflowStatus.RUNNING, **fields: Any
) -> Workflow:
    defaults = {
        "state": {"input": {}, "steps": {}},
        "created_ago_ms": 10_000,
        "updated_ago_ms": 5_000,
    }
    return factories.make_workflow(workflow_id, status=status, **{**defaults, **fields})


def make_claim(workflow_id: str, **fields: Any) -> WorkflowClaim:
    """A claim row (tests.factories), expiring one TTL from now unless said otherwise."""
    return factories.make_claim(workflow_id, **{"expires_in_ms": TTL_MS, **fields})


def make_event(workflow_id: str, kind: str, **fields: Any) -> ClaimEvent:
    values: dict[str, Any] = {"at_ms": now_ms(), "engine_id": "e-1", "reason": ""}
    values.update(fields)
    return ClaimEvent.objects.create(workflow_id=workflow_id, kind=kind, **values)


@pytest.fixture(autouse=True)
def _claim_settings(settings: Any) -> None:
    settings.WEFT_CLAIM_TTL = f"{TTL_MS}ms"
    settings.WEFT_CLAIM_RENEW_INTERVAL = f"{RENEW_MS}ms"
    settings.WEFTBOARD_READ_ONLY = ""


@pytest.fixture
def operator(django_user_model: Any) -> Any:
    return factories.make_user("alice", ("force_claim", "cancel_workflow", "suspend_workflow"))


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    return factories.make_user("victor")


@pytest.fixture
def signed_in_as(db: None) -> Callable[..., Client]:
    """Sign in a new user ``name`` holding just the claims permissions ``codenames``."""

    def sign_in(name: str, *codenames: str) -> Client:
        return _signed_in(factories.make_user(name, codenames))

    return sign_in


@pytest.fixture
def adopt_send() -> Iterator[mock.MagicMock]:
    """The broker boundary: the adopt message is captured instead of sent."""
    with mock.patch("claims.tasks.adopt.apply_async") as send:
        yield send
