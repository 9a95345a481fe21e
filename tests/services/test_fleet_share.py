"""Beat's reads for the fleet (claims/services/fleet_share.py), against the engines' own
reads on the same rows: while a share says quiet, no stale-holder read finds anything, and
every list it carries is what the engine's own read would answer; a list past its bound is
left out, and the engines read that part themselves."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import transaction

from claims.models import (
    ClaimEvent,
    EngineSession,
    ReclaimCursor,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol import fleet_share as share_module
from claims.protocol.fleet_share import FleetShare
from claims.services import fleet_share
from claims.services.fleet_share import fleet_shares, look_back_ms
from claims.store import OrmClaimStore
from tests.factories import make_session
from tests.services.test_kept_fleet_counts import ENGINES, NOW, TIMING, write_something

pytestmark = pytest.mark.django_db

N = 30
LOOK_BACK_MS = look_back_ms(TIMING)


@pytest.fixture(autouse=True)
def _fresh_beat_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's beat starts without memory of the session pairs or the marks."""
    monkeypatch.setattr(fleet_share, "_store", None)


def heard_at(now_ms: int, engine_ids: list[str] = ENGINES) -> None:
    """Engine rows heard from at ``now_ms``: beat reads the moves of those only."""
    from tests.factories import make_engine

    for engine_id in engine_ids:
        make_engine(engine_id, heartbeat_at_ms=now_ms)


def random_sessions(rng: random.Random, now_ms: int, *, healthy: bool) -> dict[str, int]:
    """A session row per engine, in a random state; the epoch each names."""
    epochs = {}
    for engine_id in ENGINES:
        shapes = ["live", "live", "soon"]
        if not healthy:
            shapes += ["in-grace", "dead", "closed", "none"]
        shape = rng.choice(shapes)
        expires = {
            "live": now_ms + 20_000,
            "soon": now_ms - TIMING.grace_ms + 2_500,
            "in-grace": now_ms - 3_000,
            "dead": now_ms - 20_000,
            "closed": now_ms + 20_000,
        }.get(shape)
        epochs[engine_id] = rng.choice([1, 2])
        if expires is not None:
            make_session(
                engine_id,
                epoch=epochs[engine_id],
                expires_at_ms=expires,
                at_ms=now_ms,
                closed_at_ms=now_ms - 1_000 if shape == "closed" else None,
            )
    return epochs


def random_fleet(seed: int) -> None:
    """Healthy fleets (every holder live, some lapsing within the interval) on even seeds;
    on odd ones, any holder shape, as the kept-counts test writes them."""
    rng = random.Random(seed)
    healthy = seed % 2 == 0
    heard_at(NOW)
    epochs = random_sessions(rng, NOW, healthy=healthy)
    if healthy:
        for i in range(N):
            engine_id = rng.choice(ENGINES)
            shape = rng.choice(["lease", "lease", "lapsing", "session", "session", "none"])
            lease = {
                "holder_engine_id": engine_id,
                "holder_epoch": 1,
                "holder_expires_at_ms": NOW + 20_000,
                "holder_claimed_at_ms": NOW - rng.choice([1_000, 600_000]),
                "holder_session_epoch": None,
            }
            if shape == "lapsing":
                lease["holder_expires_at_ms"] = NOW - TIMING.grace_ms + 3_000
            elif shape == "session":
                lease["holder_expires_at_ms"] = None
                lease["holder_session_epoch"] = epochs[engine_id]
            elif shape == "none":
                lease = dict.fromkeys(lease)
            WorkflowClaim.objects.create(workflow_id=f"wf-{i}", epoch=1, **lease)
            Workflow.objects.create(
                workflow_id=f"wf-{i}",
                workflow_type="order",
                status=rng.choice([WorkflowStatus.RUNNING, WorkflowStatus.COMPLETED]),
                state={},
                created_at_ms=NOW - 60_000,
                updated_at_ms=NOW - 60_000,
            )
    else:
        for _ in range(4 * N):
            write_something(rng, NOW, N)
    for workflow in Workflow.objects.filter(status=WorkflowStatus.RUNNING):
        # Parked for a while, due soon, or due now.
        Workflow.objects.filter(pk=workflow.pk).update(
            due_at_ms=NOW + rng.choice([-1_000, 0, 2_000, 86_400_000])
        )
    for i in range(rng.randrange(5)):
        ClaimEvent.objects.create(
            workflow_id=f"wf-{rng.randrange(N)}",
            kind=rng.choice(["takeover", "forced_release", "acquired", "released"]),
            epoch_before=1,
            epoch_after=2 + i,
            engine_id=rng.choice(ENGINES),
            at_ms=NOW - rng.choice([1_000, LOOK_BACK_MS + 1_000]),
            # Moved from an engine of the fleet, from one gone, or from none known.
            holder_before=rng.choice([*ENGINES, "e-gone", None]),
        )


def due_of(engine_id: str, now_ms: int) -> tuple[str, ...]:
    named = set(
        WorkflowClaim.objects.filter(holder_engine_id=engine_id).values_list(
            "workflow_id", flat=True
        )
    )
    due = Workflow.objects.filter(status=WorkflowStatus.RUNNING, due_at_ms__lte=now_ms).order_by(
        "due_at_ms", "workflow_id"
    )
    return tuple(wf for wf in due.values_list("workflow_id", flat=True) if wf in named)


@pytest.mark.parametrize("seed", range(12))
def test_a_share_is_what_each_engines_own_reads_would_answer(seed: int) -> None:
    random_fleet(seed)
    shares = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)
    store = OrmClaimStore()
    grace = TIMING.grace_ms

    share = shares[ENGINES[0]]
    stale_now = store.find_stale_holders(expired_before_ms=NOW - grace).count
    if share.quiet_until_ms is None:
        # Not quiet: something is stale now, or a claim or live session lapses within
        # the interval.
        soonest = NOW + TIMING.renew_interval_ms
        lapsing = WorkflowClaim.objects.filter(holder_expires_at_ms__lt=soonest - grace).exists()
        lapsing |= EngineSession.objects.filter(
            closed_at_ms__isnull=True,
            expires_at_ms__gte=NOW - grace,
            expires_at_ms__lt=soonest - grace,
        ).exists()
        assert stale_now or lapsing
    else:
        assert NOW < share.quiet_until_ms <= NOW + TIMING.renew_interval_ms
        for at in [*range(NOW, share.quiet_until_ms, 250), share.quiet_until_ms - 1]:
            found = OrmClaimStore().find_stale_holders(expired_before_ms=at - grace)
            assert found.count == 0, (at, found)
        assert share.quiet_at(share.quiet_until_ms - 1)

    assert share.unheld == tuple(store.list_unheld_running_indexed())
    assert share.moves_since_ms == NOW - LOOK_BACK_MS
    for engine_id in ENGINES:
        mine = shares[engine_id]
        own_moves = store.read_claim_moves(since_ms=NOW - LOOK_BACK_MS, moved_from=engine_id)
        assert sorted(mine.moves or ()) == sorted(own_moves)
        assert mine.due == due_of(engine_id, NOW)
        assert mine.grants_since_ms == NOW - LOOK_BACK_MS
        granted = store.list_granted_to(engine_id=engine_id, claimed_since_ms=NOW - LOOK_BACK_MS)
        assert sorted(mine.grants or ()) == granted


def test_the_shares_say_quiet_in_some_fleets_and_not_in_others() -> None:
    """The property above is not vacuous: both answers occur over its seeds."""
    answers = set()
    for seed in range(12):
        fleet_share._store = None
        with transaction.atomic():
            random_fleet(seed)
            share = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)[ENGINES[0]]
            answers.add(share.quiet_until_ms is not None)
            transaction.set_rollback(True)
    assert answers == {True, False}


def test_an_idle_fleet_is_quiet_until_the_next_tick() -> None:
    """Live sessions and claims that lapse well after the interval, a dead session naming
    nothing (unclosed: nobody had claims of it to take over), parked workflows."""
    heard_at(NOW)
    for engine_id in ENGINES[:2]:
        make_session(engine_id, epoch=1, expires_at_ms=NOW + 20_000, at_ms=NOW)
    make_session(ENGINES[2], epoch=1, expires_at_ms=NOW - 60_000, at_ms=NOW - 60_000)
    for i in range(4):
        WorkflowClaim.objects.create(
            workflow_id=f"wf-{i}",
            epoch=1,
            holder_engine_id=ENGINES[i % 2],
            holder_epoch=1,
            holder_claimed_at_ms=NOW - 600_000,
            holder_session_epoch=1,
        )

    shares = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)

    for share in shares.values():
        assert share.quiet_until_ms == NOW + TIMING.renew_interval_ms
        assert (share.unheld, share.scanned, share.moves, share.grants, share.due) == (
            (),
            (),
            (),
            (),
            (),
        )


def test_a_claim_lapsing_within_the_interval_bounds_the_quiet_time() -> None:
    make_session(ENGINES[0], epoch=1, expires_at_ms=NOW + 20_000, at_ms=NOW)
    expires = NOW - TIMING.grace_ms + 1_500
    WorkflowClaim.objects.create(
        workflow_id="wf-1",
        epoch=1,
        holder_engine_id=ENGINES[1],
        holder_epoch=1,
        holder_expires_at_ms=expires,
        holder_claimed_at_ms=NOW - 20_000,
    )
    share = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)[ENGINES[0]]
    assert share.quiet_until_ms == expires + TIMING.grace_ms
    assert OrmClaimStore().find_stale_holders(expired_before_ms=expires + 1).count == 1


def test_a_closed_session_naming_claims_is_not_quiet() -> None:
    make_session(ENGINES[0], epoch=1, expires_at_ms=NOW + 20_000, at_ms=NOW, closed_at_ms=NOW)
    WorkflowClaim.objects.create(
        workflow_id="wf-1",
        epoch=1,
        holder_engine_id=ENGINES[0],
        holder_epoch=1,
        holder_claimed_at_ms=NOW - 20_000,
        holder_session_epoch=1,
    )
    share = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)[ENGINES[1]]
    assert share.quiet_until_ms is None


def test_an_engine_not_heard_from_lately_is_left_out_of_the_moves_and_spoils_no_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind a mass failure, an engine killed a moment ago is still ticked, and its claims
    move by the thousand: beat reads none of those, so the live engines' shares hold."""
    monkeypatch.setattr(share_module, "SHARE_LIMIT", 2)
    monkeypatch.setattr(fleet_share, "SHARE_LIMIT", 2)
    live, silent = ENGINES[0], ENGINES[1]
    heard_at(NOW, [live])
    heard_at(NOW - 60_000, [silent])
    for i in range(50):
        moved_from = live if i == 0 else silent
        ClaimEvent.objects.create(
            workflow_id=f"wf-{i}",
            kind="takeover",
            epoch_before=1,
            epoch_after=2,
            engine_id=ENGINES[2],
            at_ms=NOW - 1_000,
            holder_before=moved_from,
        )

    shares = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=[live, silent])

    assert shares[live].moves == (("wf-0", 2),)
    assert shares[silent].moves is None  # it reads its own, if it is alive after all


def test_lists_past_their_bound_are_left_for_the_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(share_module, "SHARE_LIMIT", 2)
    monkeypatch.setattr(fleet_share, "SHARE_LIMIT", 2)
    for i in range(3):
        Workflow.objects.create(
            workflow_id=f"wf-{i}",
            workflow_type="order",
            status="running",
            state={},
            created_at_ms=NOW - 60_000,
            updated_at_ms=NOW - 60_000,  # not parked, and due a renew interval after this
        )
        WorkflowClaim.objects.create(
            workflow_id=f"wf-{i}",
            epoch=1,
            holder_engine_id=ENGINES[0],
            holder_epoch=1,
            holder_expires_at_ms=NOW + 60_000,
            holder_claimed_at_ms=NOW,
        )
        ClaimEvent.objects.create(
            workflow_id=f"wf-{i}", kind="takeover", epoch_before=1, epoch_after=2, at_ms=NOW
        )

    shares = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)

    mine, other = shares[ENGINES[0]], shares[ENGINES[1]]
    assert (mine.due, mine.grants, mine.grants_since_ms) == (None, None, None)
    assert (other.due, other.grants) == ((), ())
    assert (mine.moves, mine.moves_since_ms) == (None, None)


# -- the fan-out ---------------------------------------------------------------------------


def test_the_fan_out_sends_each_live_engine_its_share_and_ticks_without_one_on_failure(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from claims import tasks
    from claims.models import EngineStatus
    from tests.factories import make_engine

    settings.WEFT_CLAIM_TTL = "30s"
    settings.WEFT_CLAIM_RENEW_INTERVAL = "5s"
    make_engine("e-live")
    make_engine("e-gone", status=EngineStatus.DEAD)
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        tasks.engine_tick,
        "apply_async",
        lambda kwargs, queue, expires: sent.append((queue, kwargs)),
    )

    assert tasks.fan_out_ticks() == 1
    [(queue, kwargs)] = sent
    share = FleetShare.from_json(kwargs["share"])
    assert queue == "engine.e-live"
    assert share is not None
    assert share.quiet_until_ms is not None  # nothing held, nothing stale

    def broken(**_: Any) -> Any:
        raise RuntimeError("database gone")

    monkeypatch.setattr(fleet_share, "fleet_shares", broken)
    sent.clear()
    assert tasks.fan_out_ticks() == 1
    assert sent == [("engine.e-live", {})]


def test_the_fan_out_reads_on_the_databases_clock_whichever_worker_runs_it(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The fan-out lands on any worker. One whose clock is far behind (calibration lost, a
    host clock stepped back) must not send a due list as of its own time: the engines'
    wake takes the list as it stands, and what came due since would wait for a tick run
    elsewhere."""
    from claims import fleet_clock, tasks
    from claims.protocol.offset_clock import OffsetClock
    from tests.factories import make_claim, make_engine, make_workflow

    settings.WEFT_CLAIM_TTL = "30s"
    settings.WEFT_CLAIM_RENEW_INTERVAL = "5s"
    make_engine("e-live")
    make_workflow("wf-due", updated_ago_ms=60_000, due_at_ms=fleet_clock.database_now_ms() - 1)
    make_claim("wf-due", engine="e-live")
    behind = OffsetClock(skew_ms=-60_000)
    behind.calibrate(fleet_clock.database_now_ms)
    monkeypatch.setattr(fleet_clock, "_clock", behind)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(
        tasks.engine_tick, "apply_async", lambda kwargs, queue, expires: sent.append(kwargs)
    )

    assert tasks.fan_out_ticks() == 1

    share = FleetShare.from_json(sent[0]["share"])
    assert share is not None
    assert share.due == ("wf-due",)
    assert abs(share.read_at_ms - fleet_clock.database_now_ms()) < 5_000


def test_past_its_time_budget_beat_leaves_the_rest_to_the_engines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ticks wait for beat's reads: once the budget is spent, the parts not read are
    left out (the quiet proof is always read: it comes first), and the scan cursor stays."""
    monkeypatch.setattr(fleet_share, "READ_BUDGET", 0.0)
    share = fleet_shares(now_ms=NOW, timing=TIMING, engine_ids=ENGINES)[ENGINES[0]]
    assert share.quiet_until_ms == NOW + TIMING.renew_interval_ms
    assert (share.unheld, share.scanned, share.moves, share.grants, share.due) == ((None,) * 5)
    assert not ReclaimCursor.objects.exists()
