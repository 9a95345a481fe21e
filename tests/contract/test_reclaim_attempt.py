"""ReclaimTarget.attempt(wf) for workflows this engine does not hold (docs/design.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from claims.protocol import TAKEOVER_MAX_ATTEMPTS, ClaimRow, Holder

from .stores import GRACE_MS, START_MS, TTL_MS, CountingStore, InterposedStore

T0 = START_MS
EXPIRY = T0 + TTL_MS
CAS_METHODS = ("cas_insert", "cas_grant", "cas_rotate", "cas_renew", "cas_release", "renew_many")
NOT_RUNNING = ("pending", "suspended", "completed", "failed", "cancelled", "timed_out")


def attempts(registry) -> dict[str, int]:
    return registry.metrics.snapshot()["attempts"]


def cas_calls(counting: CountingStore) -> list[str]:
    return [name for name in counting.calls if name in CAS_METHODS]


class AfterGrantStore:
    """Delegates to a real store; runs ``hook`` right after the first grant that applied."""

    def __init__(self, inner: Any, hook: Any) -> None:
        self.inner = inner
        self._hook = hook

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("cas_insert", "cas_grant"):
            return attr

        def granted_then_hook(*args: Any, **kwargs: Any) -> Any:
            applied = attr(*args, **kwargs)
            hook, self._hook = self._hook, None
            if applied and hook is not None:
                hook()
            return applied

        return granted_then_hook


class AlwaysLosingStore:
    """Every read shows an expired foreign holder and every grant loses the race."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.grants = 0

    def read_claim(self, workflow_id: str) -> ClaimRow:
        return ClaimRow(workflow_id, 1, Holder("b", 1, T0 - GRACE_MS - 1, T0 - GRACE_MS - 1))

    def cas_grant(self, *args: Any, **kwargs: Any) -> bool:
        self.grants += 1
        return False

    def cas_insert(self, *args: Any, **kwargs: Any) -> bool:
        self.grants += 1
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def stall_and_lapse(registry, clock, workflow_id: str = "wf"):
    """Engine b acquires ``workflow_id`` and then stalls until its claim is past the grace."""
    b = registry("b")
    assert b.acquire(workflow_id).status == "acquired"
    clock.set(EXPIRY + GRACE_MS + 1)
    return b


def reclaimable_by(path: str, registry, workflows, clock) -> int:
    """A running "wf" that a's grant will reach by ``path``: a takeover from b, stalled past
    the grace, or a first acquire; returns the epoch the grant gives it."""
    workflows.put("wf")
    if path == "takeover":
        stall_and_lapse(registry, clock)
        return 2
    return 1


# -- no I/O, no CAS -------------------------------------------------------------------------


@pytest.mark.parametrize("arranged", ["expired foreign holder", "type check", "held re-drive"])
def test_attempt_while_disposing_is_not_eligible_without_any_store_call(
    registry, store, arrange, workflows, reclaim_target, clock, arranged
):
    """A disposing target answers not-eligible and makes no store call at all, on every path."""
    workflows.put("wf", workflow_type="order")
    counting = CountingStore(store)
    a = registry("a", on=counting)
    driven: list[str] = []
    kwargs: dict[str, Any] = {"on_reclaimed": driven.append}
    if arranged == "type check":
        kwargs["is_type_registered"] = lambda t: t == "order"
    if arranged == "held re-drive":

        def drive(workflow_id: str) -> None:
            driven.append(workflow_id)
            raise RuntimeError("runtime down")

        kwargs["on_reclaimed"] = drive
    else:
        stall_and_lapse(registry, clock)
    target = reclaim_target(a, on=counting, **kwargs)
    if arranged == "held re-drive":
        with pytest.raises(RuntimeError):
            target.attempt("wf")
        driven.clear()
    before = arrange.read("wf")
    counting.calls.clear()
    target.mark_disposing()

    assert target.attempt("wf") == "not-eligible"
    assert counting.calls == []
    assert driven == []
    assert arrange.read("wf") == before


@pytest.mark.parametrize("arranged", ["expired foreign holder", "no claim"])
def test_attempt_of_unregistered_type_is_not_eligible_without_any_cas(
    registry, store, arrange, workflows, reclaim_target, clock, arranged
):
    """A workflow whose type this engine cannot run is not-eligible, decided before any CAS."""
    workflows.put("wf", workflow_type="invoice")
    if arranged == "expired foreign holder":
        stall_and_lapse(registry, clock)
    before = arrange.read("wf")
    asked = []

    def is_type_registered(workflow_type):
        asked.append(workflow_type)
        return workflow_type == "order"

    counting = CountingStore(store)
    a = registry("a", on=counting)
    target = reclaim_target(a, on=counting, is_type_registered=is_type_registered)

    assert target.attempt("wf") == "not-eligible"
    assert asked == ["invoice"]
    assert cas_calls(counting) == []
    assert "read_claim" not in counting.calls
    assert arrange.read("wf") == before
    assert a.held_workflow_ids() == []


def test_attempt_of_registered_type_goes_ahead(registry, arrange, workflows, reclaim_target):
    """The same check lets a workflow of a registered type through to the claim."""
    workflows.put("wf", workflow_type="order")
    a = registry("a")
    target = reclaim_target(a, is_type_registered=lambda t: t == "order")

    assert target.attempt("wf") == "reclaimed"
    assert a.current_epoch("wf") == 1


# -- takeover ------------------------------------------------------------------------------


def test_attempt_takes_over_an_expired_foreign_claim_and_drives_it(
    registry, arrange, workflows, reclaim_target, clock
):
    """An expired foreign claim is taken over at epoch + 1, counted as takeover, and driven."""
    workflows.put("wf")
    arrange.put_row("wf", epoch=6, holder=Holder("b", 6, EXPIRY, T0))
    clock.set(EXPIRY + GRACE_MS + 1)
    now = clock()
    driven: list[str] = []
    a = registry("a")

    status = reclaim_target(a, on_reclaimed=driven.append).attempt("wf")

    assert status == "reclaimed"
    assert driven == ["wf"]
    assert arrange.read("wf") == ClaimRow("wf", 7, Holder("a", 7, now + TTL_MS, now))
    assert a.current_epoch("wf") == 7
    assert attempts(a) == {
        "acquired": 0,
        "takeover": 1,
        "lost_race": 0,
        "deposed": 0,
        "backoff_skipped": 0,
    }
    assert arrange.events("wf") == [("takeover", 6, 7, "a")]


def test_attempt_of_a_live_foreign_claim_is_not_eligible(
    registry, arrange, workflows, reclaim_target, clock
):
    """A foreign claim that has not expired is not-eligible, untouched and not driven."""
    workflows.put("wf")
    registry("b").acquire("wf")
    clock.set(EXPIRY + GRACE_MS)
    before = arrange.read("wf")
    driven: list[str] = []
    a = registry("a")

    assert reclaim_target(a, on_reclaimed=driven.append).attempt("wf") == "not-eligible"
    assert driven == []
    assert arrange.read("wf") == before
    assert sum(attempts(a).values()) == 0


# -- no claim ------------------------------------------------------------------------------


@pytest.mark.parametrize("arranged", ["no row", "released row"])
def test_attempt_acquires_a_running_workflow_nobody_holds(
    registry, arrange, workflows, reclaim_target, arranged
):
    """A running workflow with no holder is acquired (epoch + 1, or 1), counted, and driven."""
    workflows.put("wf")
    expected_epoch = 1
    if arranged == "released row":
        arrange.put_row("wf", epoch=4, holder=None)
        expected_epoch = 5
    driven: list[str] = []
    a = registry("a")

    status = reclaim_target(a, on_reclaimed=driven.append).attempt("wf")

    assert status == "reclaimed"
    assert driven == ["wf"]
    assert arrange.read("wf") == ClaimRow(
        "wf", expected_epoch, Holder("a", expected_epoch, EXPIRY, T0)
    )
    assert attempts(a)["acquired"] == 1
    assert attempts(a)["takeover"] == 0


@pytest.mark.parametrize("status", [*NOT_RUNNING, "missing"])
def test_attempt_of_an_unheld_workflow_that_is_not_running_is_not_eligible(
    registry, store, arrange, workflows, reclaim_target, status
):
    """Nobody holds it, but it is not running (or gone): not-eligible, with no CAS and no row."""
    if status != "missing":
        workflows.put("wf", status=status)
    counting = CountingStore(store)
    driven: list[str] = []
    a = registry("a", on=counting)

    assert reclaim_target(a, on=counting, on_reclaimed=driven.append).attempt("wf") == (
        "not-eligible"
    )
    assert cas_calls(counting) == []
    assert arrange.read("wf") is None
    assert driven == []
    assert sum(attempts(a).values()) == 0


# -- lost races and backoff -------------------------------------------------------------------


def test_attempt_retries_a_lost_race_five_times_then_answers_lost_race(
    registry, store, workflows, reclaim_target
):
    """A takeover that keeps losing is retried exactly 5 times, each counted, then lost-race."""
    workflows.put("wf")
    losing = AlwaysLosingStore(store)
    driven: list[str] = []
    a = registry("a", on=losing)

    status = reclaim_target(a, on=losing, on_reclaimed=driven.append).attempt("wf")

    assert status == "lost-race"
    assert losing.grants == TAKEOVER_MAX_ATTEMPTS == 5
    assert attempts(a)["lost_race"] == 5
    assert attempts(a)["takeover"] == 0
    assert driven == []
    assert a.held_workflow_ids() == []


def test_attempt_retries_after_losing_the_acquire_race_and_then_succeeds(
    registry, store, arrange, workflows, reclaim_target
):
    """Losing the insert race to an engine that then releases is retried: acquired at epoch 2."""
    workflows.put("wf")
    b = registry("b")

    def b_acquires_and_releases():
        b.acquire("wf")
        b.release("wf")

    a = registry("a", on=InterposedStore(store, "cas_insert", b_acquires_and_releases))

    assert reclaim_target(a).attempt("wf") == "reclaimed"
    assert a.current_epoch("wf") == 2
    assert attempts(a)["lost_race"] == 1
    assert attempts(a)["acquired"] == 1


def test_attempt_after_a_lost_renewal_is_backoff_skipped_without_reading(
    registry, store, arrange, workflows, reclaim_target, clock
):
    """Within one renew interval of a lost renewal the attempt is backoff-skipped, with no read."""
    workflows.put("wf")
    counting = CountingStore(store)
    a = registry("a", on=counting)
    a.acquire("wf")
    lost_at = clock.advance(TTL_MS + GRACE_MS + 1)
    assert registry("b").takeover("wf").status == "acquired"
    assert a.renew("wf").status == "lost"
    clock.set(lost_at + 4_999)
    counting.calls.clear()

    status = reclaim_target(a, on=counting).attempt("wf")

    assert status == "backoff-skipped"
    assert attempts(a)["backoff_skipped"] == 1
    assert "read_claim" not in counting.calls
    assert cas_calls(counting) == []
    assert arrange.read("wf").holder.engine_id == "b"


# -- the grant, then a second look --------------------------------------------------------------


@pytest.mark.parametrize("path", ["takeover", "acquire"])
def test_grant_of_a_workflow_that_stopped_running_is_released_and_not_driven(
    registry, store, arrange, workflows, reclaim_target, clock, path
):
    """If the workflow stops running between the grant and the confirming read, it is released."""
    epoch = reclaimable_by(path, registry, workflows, clock)
    driven: list[str] = []
    grant_store = AfterGrantStore(store, lambda: workflows.set_status("wf", "completed"))
    a = registry("a", on=grant_store)

    status = reclaim_target(a, on=grant_store, on_reclaimed=driven.append).attempt("wf")

    assert status == "not-eligible"
    assert driven == []
    assert arrange.read("wf") == ClaimRow("wf", epoch, None)
    assert a.held_workflow_ids() == []
    grant_event = ("takeover", 1, 2, "a") if path == "takeover" else ("acquired", None, 1, "a")
    assert arrange.events("wf")[-2:] == [grant_event, ("released", epoch, epoch, "a")]
    assert attempts(a)["takeover" if path == "takeover" else "acquired"] == 1


@pytest.mark.parametrize("path", ["takeover", "acquire"])
def test_grant_landing_after_disposal_began_is_released_at_once_and_never_driven(
    registry, store, arrange, workflows, reclaim_target, clock, path
):
    """A CAS that lands after mark_disposing() is released at once and never driven."""
    epoch = reclaimable_by(path, registry, workflows, clock)
    driven: list[str] = []
    holder: dict[str, Any] = {}
    counting = CountingStore(AfterGrantStore(store, lambda: holder["target"].mark_disposing()))
    a = registry("a", on=counting)
    target = holder["target"] = reclaim_target(a, on=counting, on_reclaimed=driven.append)

    assert target.attempt("wf") == "not-eligible"
    grant = "cas_grant" if path == "takeover" else "cas_insert"
    assert counting.calls[counting.calls.index(grant) + 1 :] == ["cas_release"]
    assert driven == []
    assert arrange.read("wf") == ClaimRow("wf", epoch, None)
    assert a.held_workflow_ids() == []
    assert [kind for kind, *_ in arrange.events("wf")][-2:] == [
        "takeover" if path == "takeover" else "acquired",
        "released",
    ]
