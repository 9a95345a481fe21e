"""The event log and the registry's local reads (docs/design.md §2 ClaimEvent, §3)."""

from __future__ import annotations

from claims.protocol import rotate_claim

from .stores import GRACE_MS, RENEW_INTERVAL_MS, START_MS, TTL_MS

T0 = START_MS


def test_each_transition_writes_exactly_one_event_and_renewals_none(
    registry, arrange, clock, store
):
    """Every grant, release, rotation and deposition logs one event with its epochs."""
    a, b = registry("a"), registry("b")

    a.acquire("wf")
    clock.advance(RENEW_INTERVAL_MS)
    a.renew("wf")
    a.release("wf")
    b.acquire("wf")
    clock.set(clock() + TTL_MS + GRACE_MS + 1)
    a.takeover("wf")
    b.renew("wf")
    rotate_claim(store, "wf", clock=clock)
    a.renew("wf")
    b.acquire("wf")
    b.renew("wf")
    b.release("wf")

    assert arrange.events("wf") == [
        ("acquired", None, 1, "a"),
        ("released", 1, 1, "a"),
        ("acquired", 1, 2, "b"),
        ("takeover", 2, 3, "a"),
        ("deposed", 2, None, "b"),
        ("rotated", 3, 4, None),
        ("deposed", 3, None, "a"),
        ("acquired", 4, 5, "b"),
        ("released", 5, 5, "b"),
    ]


def test_failed_attempts_write_no_event(registry, arrange, clock):
    """Lost races, not-expired, no-claim, backoff and not-held answers leave the log untouched."""
    a, b = registry("a"), registry("b")
    a.takeover("wf")
    b.acquire("wf")
    a.acquire("wf")
    a.takeover("wf")
    a.renew("wf")
    a.release("wf")
    b.release("wf", expected_epoch=7)

    assert arrange.events("wf") == [("acquired", None, 1, "b")]


def test_events_are_per_workflow(registry, arrange):
    """Each workflow's log holds only its own transitions."""
    a = registry("a")
    a.acquire("wf1")
    a.acquire("wf2")
    a.release("wf1")

    assert arrange.events("wf1") == [("acquired", None, 1, "a"), ("released", 1, 1, "a")]
    assert arrange.events("wf2") == [("acquired", None, 1, "a")]


def test_held_workflow_ids_are_in_grant_order(registry, clock, store):
    """held_workflow_ids lists claims in grant order; a re-grant moves an id to the end."""
    a = registry("a")
    for wf in ("c", "a", "b"):
        a.acquire(wf)
    assert a.held_workflow_ids() == ["c", "a", "b"]

    a.release("a")
    assert a.held_workflow_ids() == ["c", "b"]
    a.acquire("a")
    assert a.held_workflow_ids() == ["c", "b", "a"]

    clock.set(clock() + TTL_MS + GRACE_MS + 1)
    a.takeover("c")
    assert a.held_workflow_ids() == ["b", "a", "c"]


def test_current_epoch_follows_grants_and_releases(registry, clock, store):
    """current_epoch is the cached epoch while held and None otherwise."""
    a, b = registry("a"), registry("b")
    assert a.current_epoch("wf") is None

    a.acquire("wf")
    assert a.current_epoch("wf") == 1
    a.release("wf")
    assert a.current_epoch("wf") is None

    rotate_claim(store, "wf", clock=clock)
    b.acquire("wf")
    assert b.current_epoch("wf") == 3
    assert a.current_epoch("wf") is None


def test_current_epoch_is_local_and_stale_until_the_next_renewal(registry, clock, store):
    """A deposed engine still reports its cached epoch until its renewal learns of the loss."""
    a = registry("a")
    a.acquire("wf")
    rotate_claim(store, "wf", clock=clock)

    assert a.current_epoch("wf") == 1
    assert a.renew("wf").status == "lost"
    assert a.current_epoch("wf") is None
