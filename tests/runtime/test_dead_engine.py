"""An engine that beat marked dead stays dead (claims/engine/death.py), on the real engine
machinery (claims.engine.local): woken after the mark, it acquires and takes over nothing,
releases by compare-and-swap what it still holds (a claim moved meanwhile is left to its
new holder), keeps its row dead, says so once in the log and hands its disposal to the
worker, which ends the process.

Its passes and disposal run on threads with connections of their own, so the test data
commits (transaction=True)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from claims.engine.local import LocalEngine
from claims.models import ClaimEvent, Engine, EngineSession, EngineStatus, WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming, OffsetClock
from claims.protocol.constants import EngineOwnershipMode
from claims.protocol.fleet_share import FleetShare
from claims.protocol.offset_clock import system_clock
from claims.services import engines
from claims.services.claims import claim_force_release
from claims.services.workflows import workflow_start
from claims.store import OrmClaimStore
from faults.processes import wait_until

from .conftest import RENEW_INTERVAL_MS, TTL_MS

pytestmark = pytest.mark.django_db(transaction=True)

ENGINE_ID = "e-revived"
TIMING = ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)


@pytest.fixture
def revived_row() -> None:
    engines.engine_register(engine_id=ENGINE_ID, queue=f"engine.{ENGINE_ID}", now_ms=system_clock())


@pytest.fixture
def revived(revived_row: None) -> Iterator[LocalEngine]:
    """A registered engine whose passes the test runs itself (no threads started)."""
    engine = LocalEngine(
        engine_id=ENGINE_ID, queue=f"engine.{ENGINE_ID}", timing=TIMING, clock=OffsetClock()
    )
    yield engine
    engine._drives.shutdown()
    engine._reclaim_pool.shutdown(wait=True)


def held_workflows(engine: LocalEngine, count: int) -> list[str]:
    """Workflows started claimed by ``engine`` (its registry adopts the claims), parked."""
    ids = []
    for _ in range(count):
        workflow = workflow_start(
            workflow_type="ledger", input={"steps": 1, "sleep": 600}, engine_id=engine.engine_id
        )
        assert engine.registry.adopt(workflow.workflow_id, 1).status == "adopted"
        ids.append(workflow.workflow_id)
    return ids


def ownerless_workflows(count: int) -> list[str]:
    return [
        workflow_start(workflow_type="ledger", input={"steps": 1}).workflow_id for _ in range(count)
    ]


def beat_marks_it_dead() -> None:
    """Beat's own task, run as if the engine had been silent past 3 x TTL."""
    silent_for = (engines.DEAD_AFTER_TTLS + 1) * TTL_MS
    assert engines.engines_mark_silent_dead(now_ms=system_clock() + silent_for, ttl_ms=TTL_MS) == 1


def still_dead() -> None:
    status = Engine.objects.get(engine_id=ENGINE_ID).status
    assert status == EngineStatus.DEAD, f"the engine beat marked dead is {status} again"


def holders(workflow_ids: list[str]) -> dict[str, str | None]:
    """Each workflow's holder; None too for a workflow never claimed (no claim row)."""
    rows = WorkflowClaim.objects.filter(workflow_id__in=workflow_ids)
    return {
        **dict.fromkeys(workflow_ids),
        **dict(rows.values_list("workflow_id", "holder_engine_id")),
    }


def last_event_id() -> int:
    return ClaimEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def grants_since(event_id: int) -> list[str]:
    """The claims the engine was granted (acquired or took over) after that event."""
    events = ClaimEvent.objects.filter(
        pk__gt=event_id, engine_id=ENGINE_ID, kind__in=["acquired", "takeover"]
    )
    return list(events.values_list("workflow_id", flat=True))


def revived_dead_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if getattr(record, "event", None) == "engine-revived-dead"
    ]


def test_a_revived_engine_acquires_nothing_and_releases_what_it_still_holds(
    revived: LocalEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="weftboard.claims")
    moved, *kept = held_workflows(revived, 3)
    # While it was paused, an operator moved one claim and another engine took it.
    claim_force_release(moved, expected_epoch=1, actor="operator", reason="engine paused")
    other = ClaimRegistry(OrmClaimStore(), engine_id="e-other", clock=OffsetClock(), timing=TIMING)
    assert other.acquire(moved).status == "acquired"
    waiting = ownerless_workflows(2)
    beat_marks_it_dead()
    marked_after = last_event_id()

    # It wakes: its reclaim pass finds it dead before it grants anything.
    assert revived.run_reclaim() == {"status": "dead"}

    assert holders(waiting) == dict.fromkeys(waiting)
    assert grants_since(marked_after) == []
    assert revived.is_disposing()  # drives pause at their next checkpoint
    assert revived.disposal is not None
    revived.disposal.join(30)
    assert not revived.disposal.is_alive()
    assert holders([moved, *kept]) == {moved: "e-other", **dict.fromkeys(kept)}
    released = ClaimEvent.objects.filter(engine_id=ENGINE_ID, kind="released")
    assert sorted(released.values_list("workflow_id", flat=True)) == sorted(kept)
    assert revived.registry.held_workflow_ids() == []
    assert Engine.objects.get(engine_id=ENGINE_ID).status == EngineStatus.DEAD
    assert revived_dead_lines(caplog) == [
        f"event=engine-revived-dead engine={ENGINE_ID} mode=workflow-lease "
        "found_by=reclaim-check status=dead then=release-and-exit"
    ]
    # Nothing more: another pass neither grants nor logs again.
    assert revived.run_reclaim() == {"status": "dead"}
    assert grants_since(marked_after) == []
    assert len(revived_dead_lines(caplog)) == 1


def test_a_revived_engine_given_beats_share_checks_its_row_before_it_grants(
    revived: LocalEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """Beat's share names work for it (a tick sent before beat wrote it off): the pass
    reads its own row before the first attempt, and grants nothing."""
    caplog.set_level(logging.INFO, logger="weftboard.claims")
    waiting = ownerless_workflows(2)
    beat_marks_it_dead()
    marked_after = last_event_id()
    now = system_clock()
    share = FleetShare(
        read_at_ms=now, quiet_until_ms=now + RENEW_INTERVAL_MS, unheld=tuple(waiting), scanned=()
    )

    revived.trigger(share)

    assert revived.run_reclaim() == {"status": "dead"}
    assert grants_since(marked_after) == []
    assert holders(waiting) == dict.fromkeys(waiting)
    assert revived.disposal is not None
    revived.disposal.join(30)
    assert [line.split(" found_by=")[1].split()[0] for line in revived_dead_lines(caplog)] == [
        "reclaim-check"
    ]


@pytest.mark.parametrize("mode", ["workflow-lease", "engine-lease"])
def test_a_running_engine_learns_from_its_heartbeat_and_leaves(
    mode: EngineOwnershipMode, caplog: pytest.LogCaptureFixture
) -> None:
    """Its own pass threads find out (the heartbeat after the first pass applies nothing),
    and it gives up what it held: per claim, or by closing its session."""
    caplog.set_level(logging.INFO, logger="weftboard.claims")
    engine = LocalEngine(
        engine_id=ENGINE_ID,
        queue=f"engine.{ENGINE_ID}",
        timing=TIMING,
        clock=OffsetClock(),
        mode=mode,
    )
    engine.start()
    try:
        held = held_workflows(engine, 2)
        waiting = ownerless_workflows(2)
        beat_marks_it_dead()
        marked_after = last_event_id()
        engine.trigger()

        disposal = wait_until(
            lambda: getattr(engine, "disposal", None),
            timeout_s=15,
            what="the engine to find itself dead",
            check=still_dead,
        )
        disposal.join(30)
        assert Engine.objects.get(engine_id=ENGINE_ID).status == EngineStatus.DEAD
    finally:
        if getattr(engine, "disposal", None) is None:  # it never found out: stop it anyway
            engine.dispose()

    if mode == "engine-lease":
        # Its claims still name the session, which it closed: takeover-eligible at once.
        assert EngineSession.objects.get(engine_id=ENGINE_ID).closed_at_ms is not None
    else:
        assert holders(held) == dict.fromkeys(held)
    assert holders(waiting) == dict.fromkeys(waiting)
    assert grants_since(marked_after) == []
    (line,) = revived_dead_lines(caplog)
    assert f"engine={ENGINE_ID} mode={mode} found_by=" in line


def test_the_worker_is_handed_the_disposal_once(revived_row: None) -> None:
    """The worker's callback (claims/engine/worker.py ends the process with it) runs once,
    with the thread that releases the claims, however many passes find out."""
    deaths: list[threading.Thread] = []
    engine = LocalEngine(
        engine_id=ENGINE_ID,
        queue=f"engine.{ENGINE_ID}",
        timing=TIMING,
        clock=OffsetClock(),
        on_dead=deaths.append,
    )
    beat_marks_it_dead()

    assert engine.run_reclaim() == {"status": "dead"}
    assert engine.run_reclaim() == {"status": "dead"}
    engine.death.found_dead(found_by="renew-heartbeat")

    assert deaths == [engine.disposal]
    deaths[0].join(30)
    assert not deaths[0].is_alive()
