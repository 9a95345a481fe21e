"""A mass failure on the real engine machinery (claims.engine.local): a reclaim pass that
took some and ran out of budget marks the engine behind, holds its new drives back, and is
followed by catch-up passes (no discovery) until a tick is due (docs/design.md §4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from claims.engine.local import LocalEngine
from claims.models import WorkflowClaim

from .conftest import START_MS, TTL_MS, registered_local_engine

pytestmark = pytest.mark.django_db

GRANT_MS = 5  # what each set-based grant costs on the test's clock


@pytest.fixture
def local(clock: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEngine]:
    with registered_local_engine("e-catch", clock) as engine:
        grant_many = engine.store.grant_many
        insert_many = engine.store.insert_many

        def slow(write: Any) -> Any:
            def timed(plans: Any) -> Any:
                clock.advance(GRANT_MS)
                return write(plans)

            return timed

        monkeypatch.setattr(engine.store, "grant_many", slow(grant_many))
        monkeypatch.setattr(engine.store, "insert_many", slow(insert_many))
        engine.target.chunk_size = 2
        engine.target.pass_budget_ms = 1
        yield engine


def stranded(start: Any, count: int) -> list[str]:
    """Running workflows whose holder, a dead engine, expired long before the clock's start:
    the stale-holder source's alone (the scan reads only workflows with no holder)."""
    ids = [start("ledger") for _ in range(count)]
    lapsed = START_MS - 10 * TTL_MS
    for workflow_id in ids:
        WorkflowClaim.objects.update_or_create(
            workflow_id=workflow_id,
            defaults={
                "epoch": 1,
                "holder_engine_id": "e-dead",
                "holder_epoch": 1,
                "holder_expires_at_ms": lapsed,
                "holder_claimed_at_ms": lapsed - TTL_MS,
                "holder_session_epoch": None,
            },
        )
    return ids


def held_by(engine_id: str) -> int:
    return WorkflowClaim.objects.filter(holder_engine_id=engine_id).count()


def test_a_pass_out_of_budget_is_followed_by_catch_up_passes(local, start):
    stranded(start, 5)

    first = local.run_reclaim()

    assert (first["reclaimed"], first["deferred"], first["catch_up"]) == (2, 3, False)
    assert local._catch_up_due()
    assert local._drives._behind_until > 0  # new drives wait while it is behind

    second = local.run_reclaim_catch_up()

    assert (second["reclaimed"], second["deferred"], second["catch_up"]) == (2, 1, True)
    third = local.run_reclaim_catch_up()
    assert (third["reclaimed"], third["deferred"]) == (1, 0)
    assert not local._catch_up_due()
    assert local._drives._behind_until == 0  # caught up: the drives go on
    assert held_by("e-catch") == 5


def test_a_due_tick_runs_a_full_pass_instead_of_catching_up(local, start):
    stranded(start, 3)
    local.run_reclaim()
    assert local._catch_up_due()

    local.trigger()

    assert not local._catch_up_due()


def test_a_pass_that_takes_nothing_holds_no_drive_back(local, start, monkeypatch):
    """Candidates nobody can take (a type this engine does not run) never mark it behind."""
    stranded(start, 3)
    local.target._is_type_registered = lambda workflow_type: False
    local.target.pass_budget_ms = 0

    summary = local.run_reclaim()

    # The one chunk every pass takes was attempted, and none of it was eligible.
    assert (summary["attempted"], summary["reclaimed"], summary["deferred"]) == (2, 0, 1)
    assert not local._catch_up_due()
    assert local._drives._behind_until == 0
