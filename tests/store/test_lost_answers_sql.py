"""The ORM store under Django's ``execute_wrapper``: a claim statement runs, then the driver
raises as it does when the server's answer is lost. On PostgreSQL a transition and its
event are one statement, so what ran stays; the engine still settles it by reading."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from claims.models import WorkflowClaim
from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, run_renew_pass
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore

pytestmark = pytest.mark.django_db

TABLE = WorkflowClaim._meta.db_table


class LoseOneAnswer:
    """Runs the first statement that writes the claim table, then raises."""

    def __init__(self, verb: str) -> None:
        self.verb = verb
        self.spent = False

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not self.spent and self.verb in sql.upper() and TABLE in sql:
            self.spent = True
            raise OperationalError("server closed the connection unexpectedly")
        return result


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_000_000)


@pytest.fixture
def engine(clock):
    metrics, lost = ClaimMetrics(), []
    registry = ClaimRegistry(
        OrmClaimStore(),
        engine_id="a",
        clock=clock,
        timing=ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000),
        metrics=metrics,
        on_claim_lost=lost.append,
    )
    return registry, metrics, lost


def test_a_renewal_whose_answer_was_lost_is_not_taken_for_a_deposition(engine, clock):
    registry, metrics, lost = engine
    registry.acquire("wf")
    clock.advance(5_000)
    with connection.execute_wrapper(LoseOneAnswer("UPDATE")), pytest.raises(OperationalError):
        registry.renew("wf")
    clock.advance(5_000)

    assert registry.renew("wf").status == "renewed"
    assert (lost, metrics.snapshot()["attempts"]["deposed"]) == ([], 0)
    assert WorkflowClaim.objects.get(workflow_id="wf").holder_expires_at_ms == clock() + 30_000


def test_a_set_based_renewal_whose_answer_was_lost_deposes_nothing(engine, clock):
    registry, metrics, lost = engine
    ids = [f"wf-{n}" for n in range(10)]
    for workflow_id in ids:
        registry.acquire(workflow_id)
    clock.advance(5_000)
    with connection.execute_wrapper(LoseOneAnswer("UPDATE")):
        assert run_renew_pass(registry, metrics).failed_count == 10
    clock.advance(5_000)

    assert run_renew_pass(registry, metrics).renewed_count == 10
    assert (lost, registry.held_workflow_ids()) == ([], ids)


def test_an_acquire_whose_answer_was_lost_is_the_engines_on_the_next_call(engine, clock):
    registry, _, _ = engine
    with connection.execute_wrapper(LoseOneAnswer("INSERT")), pytest.raises(OperationalError):
        registry.acquire("wf")

    result = registry.acquire("wf")

    assert (result.status, result.epoch) == ("acquired", 1)
    assert WorkflowClaim.objects.get(workflow_id="wf").holder_engine_id == "a"
