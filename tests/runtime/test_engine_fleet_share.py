"""An engine given beat's share with its tick (claims/engine/local.py): with nothing to take,
forget or wake it sends no statement at all; a share older than an interval is not used,
nor one used already. (With something to take, it reads its own row first:
tests/runtime/test_dead_engine.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.engine.local import LocalEngine
from claims.protocol.fleet_share import FleetShare
from claims.services.workflows import workflow_start

from .conftest import RENEW_INTERVAL_MS, registered_local_engine

pytestmark = pytest.mark.django_db


@pytest.fixture
def local(clock: Any) -> Iterator[LocalEngine]:
    with registered_local_engine("e-share", clock) as engine:
        engine.run_reclaim()  # its first pass: the full audit, the cursor made
        clock.advance(RENEW_INTERVAL_MS)
        yield engine


def quiet(clock: Any, **parts: Any) -> FleetShare:
    fields: dict[str, Any] = {
        "unheld": (),
        "scanned": (),
        "moves_since_ms": 0,
        "moves": (),
        "grants_since_ms": 0,
        "grants": (),
        "due": (),
        **parts,
    }
    return FleetShare(read_at_ms=clock(), quiet_until_ms=clock() + RENEW_INTERVAL_MS, **fields)


def statements(run: Any) -> tuple[Any, int]:
    with CaptureQueriesContext(connection) as queries:
        result = run()
    return result, len(queries)


def test_an_idle_engine_given_a_quiet_share_sends_no_statement(local, clock):
    local.trigger(quiet(clock))

    reclaim, sent_by_reclaim = statements(local.run_reclaim)
    wake, sent_by_wake = statements(local.run_wake)

    assert (sent_by_reclaim, sent_by_wake) == (0, 0)
    assert (reclaim["status"], reclaim["attempted"], wake["driven"]) == ("completed", 0, 0)

    local.trigger()  # a tick without a share: the engine reads for itself
    _, own_reclaim = statements(local.run_reclaim)
    _, own_wake = statements(local.run_wake)
    assert own_reclaim > 0
    assert own_wake > 0


def test_the_wake_pass_drives_what_beat_found_due_that_this_engine_holds(local, clock):
    mine = workflow_start(workflow_type="ledger", engine_id="e-share", clock=clock).workflow_id
    assert local.registry.adopt(mine, 1).status == "adopted"
    driven: list[str] = []
    local.submit_drive = driven.append

    local.trigger(quiet(clock, due=(mine, "wf-held-elsewhere")))
    wake, sent = statements(local.run_wake)

    assert (wake["driven"], driven, sent) == (1, [mine], 0)


def test_a_share_older_than_an_interval_is_not_used(local, clock):
    local.trigger(quiet(clock))
    clock.advance(RENEW_INTERVAL_MS)

    _, sent_by_wake = statements(local.run_wake)
    assert sent_by_wake > 0


def test_a_share_is_used_once(local, clock):
    local.trigger(quiet(clock))
    statements(local.run_wake)
    _, again = statements(local.run_wake)
    assert again > 0


def test_a_page_beat_read_is_not_dropped_with_a_share_no_pass_took(local, clock):
    """Beat moved the scan cursor past the page: a later tick, or an old share, still
    brings it to the next reclaim pass."""
    local.trigger(quiet(clock, scanned=("wf-stray",)))
    local.trigger(quiet(clock, scanned=("wf-later",)))
    taken = local._take_share("reclaim")
    assert taken is not None
    assert taken.scanned == ("wf-stray", "wf-later")

    local.trigger(quiet(clock, scanned=("wf-old",)))
    local.trigger()  # a tick without a share
    clock.advance(RENEW_INTERVAL_MS)
    old = local._take_share("reclaim")
    assert old is not None
    assert old == FleetShare(read_at_ms=old.read_at_ms, scanned=("wf-old",))


def test_the_reclaim_pass_runs_at_the_tick_only_for_work_and_a_quiet_half_interval(local, clock):
    half = RENEW_INTERVAL_MS // 2
    local.trigger(quiet(clock))
    assert not local._share_has_work_now()  # nothing to take: keep the wait
    local.trigger(quiet(clock, unheld=("wf-marked",)))
    assert local._share_has_work_now()
    lapsing = FleetShare(
        read_at_ms=clock(), quiet_until_ms=clock() + half, unheld=("wf-marked",), scanned=()
    )
    local.trigger(lapsing)
    assert not local._share_has_work_now()  # the waiting pass might find a lapse
