"""Set-based takeovers: grant_many, takeover_many and the reclaim pass's batch path."""

from __future__ import annotations

from claims.protocol import run_reclaim_pass
from claims.protocol.records import ClaimEventRecord, GrantPlan, Holder

from .stores import RENEW_INTERVAL_MS, START_MS, TTL_MS, CountingStore, InterposedStore

EXPIRED_AT = START_MS - TTL_MS  # long past expiry + grace at START_MS


def dead_holder(epoch: int, engine: str = "dead") -> Holder:
    return Holder(engine, epoch, EXPIRED_AT, EXPIRED_AT - TTL_MS)


def plan(workflow_id: str, epoch: int, observed: Holder | None, engine: str = "a") -> GrantPlan:
    new = Holder(engine, epoch + 1, START_MS + TTL_MS, START_MS)
    event = ClaimEventRecord(workflow_id, "takeover", epoch, epoch + 1, engine, START_MS)
    return GrantPlan(workflow_id, epoch, observed, new, event)


def test_grant_many_applies_only_plans_whose_row_is_unchanged(store, arrange):
    """Each plan is a CAS: rows still as observed are granted at epoch + 1, others untouched."""
    arrange.put_row("same", epoch=3, holder=dead_holder(3))
    arrange.put_row("moved", epoch=4, holder=dead_holder(4))
    arrange.put_row("renewed", epoch=2, holder=dead_holder(2))

    granted = store.grant_many(
        [
            plan("same", 3, dead_holder(3)),
            plan("moved", 3, dead_holder(3)),  # the epoch moved on since it was observed
            plan("renewed", 2, Holder("dead", 2, EXPIRED_AT - 1, EXPIRED_AT - TTL_MS)),
            plan("absent", 1, dead_holder(1)),
        ]
    )

    assert granted == {"same"}
    assert arrange.read("same").epoch == 4
    assert arrange.read("same").holder == Holder("a", 4, START_MS + TTL_MS, START_MS)
    assert arrange.read("moved").holder == dead_holder(4)
    assert arrange.read("renewed").holder == dead_holder(2)
    assert arrange.read("absent") is None


def test_grant_many_compares_null_holder_columns_too(store, arrange):
    """A partially null (invalid) holder is matched column by column, nulls included."""
    garbage = Holder(None, 7, None, 5)
    arrange.put_row("garbage", epoch=7, holder=garbage)

    assert store.grant_many([plan("garbage", 7, Holder("x", 7, None, 5))]) == set()
    assert store.grant_many([plan("garbage", 7, garbage)]) == {"garbage"}
    assert arrange.read("garbage").epoch == 8


def test_grant_many_writes_one_event_per_grant_and_none_for_misses(store, arrange):
    """Only granted plans leave a takeover event."""
    arrange.put_row("w1", epoch=1, holder=dead_holder(1))
    arrange.put_row("w2", epoch=5, holder=dead_holder(5))

    store.grant_many([plan("w1", 1, dead_holder(1)), plan("w2", 4, dead_holder(4))])

    assert arrange.events("w1") == [("takeover", 1, 2, "a")]
    assert arrange.events("w2") == []


def test_takeover_many_judges_each_id_like_takeover(registry, arrange, clock):
    """Expired and invalid holders are taken; live ones are not-expired; no holder is no-claim."""
    arrange.put_row("expired", epoch=2, holder=dead_holder(2))
    arrange.put_row("invalid", epoch=9, holder=Holder("", 9, 1, 1))
    arrange.put_row("live", epoch=1, holder=Holder("b", 1, START_MS + 1, START_MS))
    arrange.put_row("free", epoch=3, holder=None)
    a = registry("a")

    results = a.takeover_many(["expired", "invalid", "live", "free", "nothing"])

    assert {wf: r.status for wf, r in results.items()} == {
        "expired": "acquired",
        "invalid": "acquired",
        "live": "not-expired",
        "free": "no-claim",
        "nothing": "no-claim",
    }
    assert results["expired"].epoch == 3
    assert results["invalid"].epoch == 10
    assert a.held_workflow_ids() == ["expired", "invalid"]


def test_takeover_many_respects_the_grace_boundary(registry, arrange, clock):
    """At exactly expires + 2 x renew interval a holder is alive; one ms later it is taken."""
    expires = START_MS - 2 * RENEW_INTERVAL_MS
    arrange.put_row("wf", epoch=1, holder=Holder("b", 1, expires, expires - TTL_MS))
    a = registry("a")

    assert a.takeover_many(["wf"])["wf"].status == "not-expired"
    clock.advance(1)
    assert a.takeover_many(["wf"])["wf"].status == "acquired"


def test_reclaim_pass_takes_over_many_stale_holders_and_drives_each_once(
    registry, reclaim_target, arrange, workflows
):
    """A pass over many dead holders reclaims each, counts one takeover each, drives each once."""
    ids = [f"wf-{n:03d}" for n in range(30)]
    for wf in ids:
        workflows.put(wf)
        arrange.put_row(wf, epoch=1, holder=dead_holder(1))
    driven: list[str] = []
    a = registry("a")
    target = reclaim_target(a, on_reclaimed=driven.append)

    result = run_reclaim_pass(target)

    assert result.reclaimed_count == 30
    assert sorted(driven) == ids
    assert a.metrics.snapshot()["attempts"]["takeover"] == 30
    assert all(arrange.read(wf).holder.engine_id == "a" for wf in ids)
    assert all(arrange.read(wf).epoch == 2 for wf in ids)


def test_batch_releases_grants_of_workflows_no_longer_running(
    registry, reclaim_target, arrange, workflows
):
    """A taken-over workflow that is no longer running is released at once and not driven."""
    workflows.put("done", status="completed")
    arrange.put_row("done", epoch=1, holder=dead_holder(1))
    driven: list[str] = []
    target = reclaim_target(registry("a"), on_reclaimed=driven.append)

    assert target.attempt_batch(["done"]) == {"done": "not-eligible"}
    assert driven == []
    assert arrange.read("done").holder is None
    assert arrange.read("done").epoch == 2


def test_batch_records_a_failed_drive_as_a_pending_redrive(
    registry, reclaim_target, arrange, workflows
):
    """A drive that raises keeps the claim, records the re-drive and reports the error."""
    workflows.put("wf")
    arrange.put_row("wf", epoch=1, holder=dead_holder(1))

    def explode(workflow_id: str) -> None:
        raise RuntimeError("boom")

    a = registry("a")
    target = reclaim_target(a, on_reclaimed=explode)

    result = run_reclaim_pass(target)

    assert result.outcomes == [("wf", "error")]
    assert target.pending_redrives == {"wf": 2}
    assert a.current_epoch("wf") == 2


def test_batch_skips_unregistered_types_without_any_grant(
    registry, reclaim_target, arrange, workflows
):
    """A candidate of a type this engine cannot run is not-eligible and stays with its holder."""
    workflows.put("wf", workflow_type="other")
    arrange.put_row("wf", epoch=1, holder=dead_holder(1))
    target = reclaim_target(registry("a"), is_type_registered=lambda t: t == "demo")

    assert target.attempt_batch(["wf"]) == {"wf": "not-eligible"}
    assert arrange.read("wf").holder == dead_holder(1)


def test_acquire_many_grants_free_rows_inserts_new_ids_and_loses_to_holders(
    registry, arrange, clock
):
    """Rows with no holder go to epoch + 1, new ids start at 1, any holder present wins."""
    arrange.put_row("free", epoch=4, holder=None)
    arrange.put_row("held", epoch=2, holder=dead_holder(2, engine="b"))
    a = registry("a")

    results = a.acquire_many(["free", "new", "held"])

    assert {wf: (r.status, r.epoch) for wf, r in results.items()} == {
        "free": ("acquired", 5),
        "new": ("acquired", 1),
        "held": ("lost-race", None),
    }
    assert results["held"].held_by == "b"
    assert arrange.read("new").holder == Holder("a", 1, START_MS + TTL_MS, START_MS)
    assert arrange.events("new") == [("acquired", None, 1, "a")]
    assert arrange.events("free") == [("acquired", 4, 5, "a")]


def test_insert_many_never_overwrites_an_existing_row(store, arrange):
    """An id that already has a row is not inserted again, whatever its holder."""
    arrange.put_row("taken", epoch=9, holder=None)
    new = Holder("a", 1, START_MS + TTL_MS, START_MS)

    inserted = store.insert_many(
        [GrantPlan("taken", 0, None, new, None), GrantPlan("fresh", 0, None, new, None)]
    )

    assert inserted == {"fresh"}
    assert arrange.read("taken").epoch == 9
    assert arrange.read("taken").holder is None


def test_reclaim_pass_acquires_ownerless_running_workflows_set_based(
    registry, reclaim_target, arrange, workflows
):
    """Running workflows with no holder (with or without a claim row) are acquired and driven."""
    for n in range(10):
        workflows.put(f"row-{n}")
        arrange.put_row(f"row-{n}", epoch=3, holder=None)
        workflows.put(f"norow-{n}")
    driven: list[str] = []
    a = registry("a")

    result = run_reclaim_pass(reclaim_target(a, on_reclaimed=driven.append))

    assert result.reclaimed_count == 20
    assert len(driven) == 20
    assert a.metrics.snapshot()["attempts"]["acquired"] == 20
    assert arrange.read("row-0").epoch == 4
    assert arrange.read("norow-0").epoch == 1


def test_a_takeover_the_batch_loses_is_left_to_the_next_pass_not_retried_one_by_one(
    registry, reclaim_target, arrange, workflows, store
):
    """Between the batch's read and its grant, engine b takes one row and another row
    changes but stays stale: both are settled "lost-race" in this pass, neither driven nor
    retried (no single takeover is sent); the next pass takes the still-stale one."""
    ids = ["wf-1", "wf-2", "wf-3"]
    for wf in ids:
        workflows.put(wf)
        arrange.put_row(wf, epoch=1, holder=dead_holder(1))

    def competitor() -> None:
        arrange.put_row("wf-1", epoch=2, holder=Holder("b", 2, START_MS + TTL_MS, START_MS))
        arrange.put_row("wf-2", epoch=2, holder=dead_holder(2, engine="also-dead"))

    counted = CountingStore(InterposedStore(store, "grant_many", competitor))
    driven: list[str] = []
    a = registry("a", on=counted)
    target = reclaim_target(a, on=counted, on_reclaimed=driven.append)

    first = run_reclaim_pass(target)

    assert dict(first.outcomes) == {"wf-1": "lost-race", "wf-2": "lost-race", "wf-3": "reclaimed"}
    assert driven == ["wf-3"]
    assert "cas_grant" not in counted.calls  # no single-row compare-and-swap
    assert a.metrics.snapshot()["attempts"]["lost_race"] == 2

    second = run_reclaim_pass(target)

    assert dict(second.outcomes) == {"wf-2": "reclaimed"}
    assert arrange.read("wf-1").holder.engine_id == "b"
    assert arrange.read("wf-2").holder.engine_id == "a"
    assert arrange.read("wf-2").epoch == 3
