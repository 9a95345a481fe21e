"""Silent engines (derived at read time, never written), the floor of live engines, and
engines found by their worker name; each read a fixed number of queries."""

from __future__ import annotations

from typing import Any

import pytest

from claims.models import ClaimEvent, Engine, EngineStatus, PendingRedrive
from claims.protocol.timing import ClaimTiming
from claims.selectors import claim_list
from claims.selectors.audit import AuditFilters, audit_page
from claims.selectors.engines.health import (
    SILENT,
    SilentHolding,
    display_status,
    engine_floor_alert,
    healthy_engine_count,
    is_silent,
    silent_holdings,
    silent_holdings_of,
)
from claims.selectors.engines.listing import engine_detail, engine_list
from claims.selectors.engines.liveness import silent_before_ms
from claims.selectors.engines.names import engine_labels
from claims.selectors.fleet.overview import overview
from claims.selectors.queues.redrives import redrive_page
from tests.factories import bulk_held_claims

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW_MS = 1_800_000_000_000
SILENT_AFTER_MS = 30_000 + 2 * 5_000  # TTL + 2 x renew interval


def engine(engine_id: str, *, heard_ms_ago: int = 0, **fields: Any) -> Engine:
    values: dict[str, Any] = {
        "hostname": "host-1",
        "pid": 100,
        "started_at_ms": NOW_MS - 600_000,
        "heartbeat_at_ms": NOW_MS - heard_ms_ago,
        "status": EngineStatus.ACTIVE,
    }
    values.update(fields)
    return Engine.objects.create(engine_id=engine_id, **values)


def test_silent_starts_just_past_ttl_plus_two_renew_intervals() -> None:
    assert silent_before_ms(NOW_MS, TIMING) == NOW_MS - SILENT_AFTER_MS
    edge = NOW_MS - SILENT_AFTER_MS
    assert not is_silent("active", edge, NOW_MS, TIMING)
    assert is_silent("active", edge - 1, NOW_MS, TIMING)
    assert is_silent("disposing", edge - 1, NOW_MS, TIMING)


@pytest.mark.parametrize("status", ["dead", "stopped"])
def test_dead_and_stopped_engines_keep_their_status(status: str) -> None:
    """Silent is for engines still recorded as live; dead stays the 3 x TTL bookkeeping."""
    assert display_status(status, 0, NOW_MS, TIMING) == status


def test_a_silent_engine_is_derived_not_written() -> None:
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)

    rows = engine_list(now_ms=NOW_MS, timing=TIMING).rows

    assert [(r.engine.engine_id, r.display_status, r.silent) for r in rows] == [
        ("e-quiet", SILENT, True)
    ]
    assert Engine.objects.get().status == EngineStatus.ACTIVE


def test_silent_holdings_count_claims_and_the_takeover_time() -> None:
    """The last claim can be taken over at its expiry plus grace."""
    bulk_held_claims(["wf-1"], engine="e-1", expires_at_ms=NOW_MS - 5_000, claimed_at_ms=0)
    bulk_held_claims(["wf-2"], engine="e-1", expires_at_ms=NOW_MS - 2_000, claimed_at_ms=0)

    found = silent_holdings(["e-1", "e-empty"], TIMING)

    assert found == {
        "e-1": SilentHolding(2, NOW_MS - 2_000 + TIMING.grace_ms),
        "e-empty": SilentHolding(0, None),
    }


def test_engine_rows_carry_the_silent_engines_holdings() -> None:
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1_000)
    engine("e-ok")
    bulk_held_claims(["wf-1"], engine="e-quiet", expires_at_ms=NOW_MS, claimed_at_ms=0)

    rows = {r.engine.engine_id: r for r in engine_list(now_ms=NOW_MS, timing=TIMING).rows}

    assert (rows["e-quiet"].holding, rows["e-quiet"].takeover_at_ms) == (
        1,
        NOW_MS + TIMING.grace_ms,
    )
    assert (rows["e-ok"].silent, rows["e-ok"].takeover_at_ms) == (False, None)


def test_engine_list_puts_live_engines_first_and_the_rest_in_history() -> None:
    engine("e-dead", status=EngineStatus.DEAD, heard_ms_ago=200_000)
    engine("e-stopped", status=EngineStatus.STOPPED)
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)
    engine("e-live")

    listing = engine_list(now_ms=NOW_MS, timing=TIMING)

    assert {r.engine.engine_id for r in listing.live_rows} == {"e-quiet", "e-live"}
    assert [r.engine.engine_id for r in listing.history_rows] == ["e-dead", "e-stopped"]


def test_engine_list_costs_one_more_query_only_when_some_are_silent(
    django_assert_num_queries: Any,
) -> None:
    for n in range(10):
        engine(f"e-{n}")
    # No fresh fleet snapshot here: the holdings are counted (one query more than with one).
    with django_assert_num_queries(4):
        engine_list(now_ms=NOW_MS, timing=TIMING)
    for n in range(10):
        engine(f"e-quiet-{n}", heard_ms_ago=SILENT_AFTER_MS + 1)
    with django_assert_num_queries(5):
        engine_list(now_ms=NOW_MS, timing=TIMING)


def test_engine_detail_shows_silent() -> None:
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)

    detail = engine_detail("e-quiet", now_ms=NOW_MS, timing=TIMING)

    assert detail is not None
    assert detail.row.display_status == SILENT


def test_silent_holdings_of_reads_nothing_when_none_is_silent(
    django_assert_num_queries: Any,
) -> None:
    engines = [engine("e-1"), engine("e-2", status=EngineStatus.DEAD, heard_ms_ago=10**6)]
    with django_assert_num_queries(0):
        assert silent_holdings_of(engines, NOW_MS, TIMING) == {}


def test_healthy_engines_are_active_and_not_silent(django_assert_num_queries: Any) -> None:
    engine("e-ok")
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)
    engine("e-leaving", status=EngineStatus.DISPOSING)
    engine("e-dead", status=EngineStatus.DEAD)

    with django_assert_num_queries(1):
        assert healthy_engine_count(NOW_MS, TIMING) == 1


def test_the_floor_alert_fires_below_the_minimum_in_one_query(
    django_assert_num_queries: Any,
) -> None:
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)
    with django_assert_num_queries(1):
        alert = engine_floor_alert(NOW_MS, TIMING, 1)
    assert alert is not None
    assert alert.title == "No engine is running"

    engine("e-ok")
    assert engine_floor_alert(NOW_MS, TIMING, 1) is None
    assert engine_floor_alert(NOW_MS, TIMING, 2) is not None


def test_overview_counts_silent_engines() -> None:
    engine("e-quiet", heard_ms_ago=SILENT_AFTER_MS + 1)
    engine("e-ok")

    found = overview(now_ms=NOW_MS, timing=TIMING)

    assert found.engines_silent == 1
    assert found.engines_by_status["active"] == 2


def test_engine_labels_are_one_query(django_assert_num_queries: Any) -> None:
    engine("e-1", name="engine1@host", pid=41)
    engine("e-2", pid=42)

    with django_assert_num_queries(1):
        labels = engine_labels()

    assert (labels["e-1"].name, labels["e-1"].pid) == ("engine1@host", 41)
    assert (labels["e-2"].name, labels["e-2"].pid) == ("", 42)


def test_engine_filters_accept_an_exact_name(django_assert_num_queries: Any) -> None:
    """A name resolves to every engine id with that name (a restarted worker has several)."""
    engine("e-old", name="engine1@host", status=EngineStatus.STOPPED)
    engine("e-new", name="engine1@host")
    engine("e-other", name="engine2@host")
    bulk_held_claims(["wf-1"], engine="e-old", expires_at_ms=NOW_MS, claimed_at_ms=0)
    bulk_held_claims(["wf-2"], engine="e-new", expires_at_ms=NOW_MS, claimed_at_ms=0)
    bulk_held_claims(["wf-3"], engine="e-other", expires_at_ms=NOW_MS, claimed_at_ms=0)

    with django_assert_num_queries(1):
        page = claim_list(now_ms=NOW_MS, timing=TIMING, engine="engine1@host")
    assert [c.workflow_id for c in page.items] == ["wf-1", "wf-2"]
    by_id = claim_list(now_ms=NOW_MS, timing=TIMING, engine="e-other")
    assert [c.workflow_id for c in by_id.items] == ["wf-3"]
    assert claim_list(now_ms=NOW_MS, timing=TIMING, engine="engine1").items == []


def test_audit_and_redrive_filters_accept_a_name() -> None:
    engine("e-new", name="engine1@host")
    for engine_id in ("e-new", "e-other"):
        ClaimEvent.objects.create(
            workflow_id=f"wf-{engine_id}", kind="acquired", at_ms=NOW_MS, engine_id=engine_id
        )
        PendingRedrive.objects.create(
            engine_id=engine_id,
            workflow_id=f"wf-{engine_id}",
            epoch=1,
            first_failed_at_ms=NOW_MS,
            last_failed_at_ms=NOW_MS,
        )

    events = audit_page(AuditFilters(engine="engine1@host"), now_ms=NOW_MS)
    redrives = redrive_page(engine="engine1@host", limit=10)

    assert [e.engine_id for e in events.items] == ["e-new"]
    assert [r.engine_id for r in redrives.items] == ["e-new"]
