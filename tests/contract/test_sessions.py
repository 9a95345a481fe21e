"""The engine-lease mode's session lease, on both stores: one row per engine, renewed by one
conditional statement; closed for good by its engine or, once expired, by a takeover
(docs/design.md §12)."""

from __future__ import annotations

from typing import Any

import pytest

from claims.protocol import ClaimTiming
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.session_lease import EngineSessionLease, close_expired_session
from claims.protocol.sessions import SessionRow, derive_session_state
from claims.protocol.testing import FakeClock

from .stores import GRACE_MS, START_MS, TTL_MS, Arrangement, CountingStore
from .test_lost_answers import LostAnswers

T0 = START_MS
EXPIRY = T0 + TTL_MS


@pytest.fixture
def lease(store: Any, clock: FakeClock, timing: ClaimTiming) -> Any:
    def make(engine_id: str = "engine-a", *, on: Any = None) -> EngineSessionLease:
        return EngineSessionLease(
            store if on is None else on, engine_id=engine_id, clock=clock, timing=timing
        )

    return make


def test_a_new_engine_opens_its_first_session_at_epoch_one(store: Any, lease: Any) -> None:
    result = lease().open()

    assert (result.status, result.epoch, result.expires_at_ms) == ("opened", 1, EXPIRY)
    assert store.read_session("engine-a") == SessionRow("engine-a", 1, EXPIRY, T0, T0)


def test_opening_again_starts_the_next_epoch_and_ends_the_old_session(
    store: Any, lease: Any, clock: FakeClock
) -> None:
    first = lease()
    first.open()
    clock.advance(1_000)

    again = lease().open()

    assert (again.status, again.epoch) == ("opened", 2)
    assert first.renew().status == "lost"
    row = store.read_session("engine-a")
    assert (row.epoch, row.started_at_ms, row.closed_at_ms) == (2, T0 + 1_000, None)


def test_a_renewal_is_one_statement_and_moves_the_expiry(
    store: Any, lease: Any, clock: FakeClock
) -> None:
    counting = CountingStore(store)
    session = lease(on=counting)
    session.open()
    counting.calls.clear()
    clock.advance(5_000)

    result = session.renew()

    assert (result.status, result.epoch, result.expires_at_ms) == ("renewed", 1, EXPIRY + 5_000)
    assert counting.calls == ["cas_renew_session"]
    row = store.read_session("engine-a")
    assert (row.expires_at_ms, row.renewed_at_ms) == (EXPIRY + 5_000, T0 + 5_000)
    assert session.renewed_at_ms == T0 + 5_000


def test_the_local_deadline_follows_the_last_renewal(lease: Any, clock: FakeClock) -> None:
    session = lease()
    assert not session.within_deadline()
    session.open()
    clock.advance(TTL_MS - 1)
    assert session.within_deadline()
    session.renew()
    clock.advance(TTL_MS - 1)
    assert session.within_deadline()
    clock.advance(1)
    assert not session.within_deadline()


@pytest.mark.parametrize(
    ("after_expiry_ms", "state", "closable"),
    [
        (-1, "live", False),
        (0, "live", False),
        (1, "in-grace", False),
        (GRACE_MS, "in-grace", False),
        (GRACE_MS + 1, "expired", True),
    ],
)
def test_only_an_expired_session_may_be_closed_for_takeover_and_no_earlier(
    store: Any,
    lease: Any,
    clock: FakeClock,
    timing: ClaimTiming,
    after_expiry_ms: int,
    state: str,
    closable: bool,
) -> None:
    lease().open()
    clock.set(EXPIRY + after_expiry_ms)
    row = store.read_session("engine-a")

    assert derive_session_state(row, clock(), timing) == state
    closed = close_expired_session(store, row, now_ms=clock(), timing=timing, by="engine-b")

    assert closed is closable
    after = store.read_session("engine-a")
    assert after.closed_at_ms == (clock() if closable else None)
    assert after.closed_by == ("engine-b" if closable else "")


def test_a_renewal_after_a_takeover_closed_the_session_is_told_it_lost_it(
    store: Any, lease: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    paused = lease()
    paused.open()
    clock.set(EXPIRY + GRACE_MS + 1)
    row = store.read_session("engine-a")
    assert close_expired_session(store, row, now_ms=clock(), timing=timing, by="engine-b")

    result = paused.renew()

    assert (result.status, result.epoch) == ("lost", 1)
    assert paused.epoch is None
    assert not paused.within_deadline()
    assert paused.renew().status == "not-open"
    assert store.read_session("engine-a").expires_at_ms == EXPIRY
    assert paused.open().epoch == 2


def test_a_late_renewal_of_an_expired_session_nobody_closed_keeps_it(
    store: Any, lease: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    """As a late claim renewal does in the per-workflow mode: expiry alone takes nothing."""
    paused = lease()
    paused.open()
    clock.set(EXPIRY + GRACE_MS + 60_000)

    assert paused.renew().status == "renewed"
    row = store.read_session("engine-a")
    assert derive_session_state(row, clock(), timing) == "live"
    assert not close_expired_session(store, row, now_ms=clock(), timing=timing, by="engine-b")


def test_a_renewal_that_lands_first_makes_the_takeover_close_fail(
    store: Any, lease: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    """The takeover judged the row it read; the renewal changed the expiry it compares."""
    session = lease()
    session.open()
    clock.set(EXPIRY + GRACE_MS + 1)
    read_by_takeover = store.read_session("engine-a")
    assert session.renew().status == "renewed"

    closed = close_expired_session(
        store, read_by_takeover, now_ms=clock(), timing=timing, by="engine-b"
    )

    assert not closed
    assert store.read_session("engine-a").closed_at_ms is None
    assert session.renew().status == "renewed"


def test_closing_at_shutdown_ends_the_session_for_good(
    store: Any, lease: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    session = lease()
    session.open()
    clock.advance(1_000)

    assert session.close().status == "closed"

    row = store.read_session("engine-a")
    assert (row.closed_at_ms, row.closed_by) == (T0 + 1_000, "engine-a")
    assert derive_session_state(row, clock(), timing) == "closed"
    assert session.renew().status == "not-open"
    stale = lease()  # a second object for the same engine, as a stale thread would hold
    assert stale.close().status == "not-open"


@pytest.mark.parametrize(
    "garbled",
    [
        SessionRow("engine-a", 1, -1, T0, T0),
        SessionRow("engine-a", 1, MAX_SAFE_INTEGER + 1, T0, T0),
        SessionRow("engine-a", 1, EXPIRY, -5, T0),
        SessionRow("engine-a", 1, EXPIRY, T0, MAX_SAFE_INTEGER + 1),
    ],
    ids=["negative-expiry", "expiry-past-2^53", "negative-renewal", "start-past-2^53"],
)
def test_a_garbled_session_row_is_invalid_whatever_the_time(
    arrange: Arrangement, clock: FakeClock, timing: ClaimTiming, garbled: SessionRow
) -> None:
    arrange.put_session(garbled)

    row = arrange.store.read_session("engine-a")

    assert row == garbled
    assert derive_session_state(row, clock(), timing) == "invalid"


def test_a_missing_session_row_is_invalid(
    store: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    assert store.read_session("nobody") is None
    assert derive_session_state(None, clock(), timing) == "invalid"


# -- statements whose answer was lost ---------------------------------------------------


def test_a_renewal_that_committed_with_its_answer_lost_is_settled_by_a_read(
    store: Any, lease: Any, clock: FakeClock
) -> None:
    broken = LostAnswers(store)
    session = lease(on=broken)
    session.open()
    clock.advance(5_000)
    with broken.breaking("cas_renew_session"):
        session.renew()
    clock.advance(5_000)

    result = session.renew()

    assert (result.status, result.expires_at_ms) == ("renewed", EXPIRY + 10_000)
    assert store.read_session("engine-a").expires_at_ms == EXPIRY + 10_000


def test_a_renewal_that_never_reached_the_database_leaves_the_session_as_it_was(
    store: Any, lease: Any, clock: FakeClock
) -> None:
    broken = LostAnswers(store)
    session = lease(on=broken)
    session.open()
    clock.advance(5_000)
    with broken.breaking("cas_renew_session", "fail"):
        session.renew()
    assert store.read_session("engine-a").expires_at_ms == EXPIRY
    clock.advance(5_000)

    assert session.renew().status == "renewed"
    assert store.read_session("engine-a").expires_at_ms == EXPIRY + 10_000


def test_a_renewal_in_doubt_does_not_hide_a_takeover_that_closed_the_session(
    store: Any, lease: Any, clock: FakeClock, timing: ClaimTiming
) -> None:
    broken = LostAnswers(store)
    session = lease(on=broken)
    session.open()
    with broken.breaking("cas_renew_session", "fail"):
        session.renew()
    clock.set(EXPIRY + GRACE_MS + 1)
    row = store.read_session("engine-a")
    assert close_expired_session(store, row, now_ms=clock(), timing=timing, by="engine-b")

    assert session.renew().status == "lost"


def test_an_open_whose_answer_was_lost_is_followed_by_the_next_epoch(
    store: Any, lease: Any
) -> None:
    broken = LostAnswers(store)
    session = lease(on=broken)
    with broken.breaking("cas_open_session"):
        session.open()
    assert session.epoch is None

    result = session.open()

    assert (result.status, result.epoch) == ("opened", 2)
    assert store.read_session("engine-a").epoch == 2
