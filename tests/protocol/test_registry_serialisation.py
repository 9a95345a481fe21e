"""Serialisation inside one engine: concurrent renew, release and re-grant (docs/design.md §3).

These run real threads against the memory store. A store subclass parks a call
on an Event so each interleaving is forced, not hoped for; where a test must know
that a thread has reached a wait inside the registry, it polls the registry's
private bookkeeping (``_renewals``, ``_releasing``) with a timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimResult,
    ClaimRow,
    ClaimTiming,
    Holder,
    rotate_claim,
)
from claims.protocol.testing import FakeClock, MemoryClaimStore

TIMEOUT_S = 10
T0 = 1_000_000
TTL_MS = 30_000
RENEW_INTERVAL_MS = 5_000
PAST_GRACE = T0 + TTL_MS + 2 * RENEW_INTERVAL_MS + 1


class ParkingStore(MemoryClaimStore):
    """A memory store that can park cas_renew or cas_release until the test lets them go.

    ``park_renew`` = "before" parks ahead of the compare-and-swap, "after" once it
    has been applied. Every call and its arguments are recorded.
    """

    def __init__(self) -> None:
        super().__init__()
        self.park_renew: str | None = None
        self.park_release = False
        self.entered = threading.Event()
        self.go = threading.Event()
        self.renew_calls: list[tuple[str, Holder, int]] = []
        self.release_calls: list[tuple[str, Holder, bool]] = []

    def _park(self) -> None:
        self.entered.set()
        assert self.go.wait(TIMEOUT_S), "the test never let the parked call go"

    def cas_renew(self, workflow_id: str, *, held: Holder, expires_at_ms: int) -> bool:
        self.renew_calls.append((workflow_id, held, expires_at_ms))
        if self.park_renew == "before":
            self._park()
        applied = super().cas_renew(workflow_id, held=held, expires_at_ms=expires_at_ms)
        if self.park_renew == "after":
            self._park()
        return applied

    def cas_release(self, workflow_id: str, *, held: Holder, event: Any) -> bool:
        if self.park_release:
            self._park()
        applied = super().cas_release(workflow_id, held=held, event=event)
        self.release_calls.append((workflow_id, held, applied))
        return applied


class Worker(threading.Thread):
    """Runs one call on its own thread and keeps its result or error."""

    def __init__(self, call: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._call = call
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._call()
        except BaseException as exc:  # reported by the test, not swallowed
            self.error = exc

    def outcome(self) -> Any:
        self.join(TIMEOUT_S)
        assert not self.is_alive(), "worker did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def parked_in_store(store: Any, call: Callable[[], Any]) -> Worker:
    """A Worker running ``call``, returned once the call is parked inside the store."""
    worker = Worker(call)
    worker.start()
    assert store.entered.wait(TIMEOUT_S)
    return worker


def wait_until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.001)


def count_joiners(registry: ClaimRegistry, workflow_id: str) -> threading.Semaphore:
    """Release a semaphore each time a caller starts waiting on the id's in-flight renewal."""
    flight = registry._renewals[workflow_id]
    joined = threading.Semaphore(0)
    original_wait = flight.wait

    def counting_wait(*args: str) -> ClaimResult:
        joined.release()
        return original_wait(*args)

    flight.wait = counting_wait  # type: ignore[method-assign,assignment]
    return joined


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store() -> ParkingStore:
    return ParkingStore()


@pytest.fixture
def make_registry(store, clock) -> Callable[..., ClaimRegistry]:
    timing = ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)

    def make(engine_id: str, **kwargs: Any) -> ClaimRegistry:
        return ClaimRegistry(store, engine_id=engine_id, clock=clock, timing=timing, **kwargs)

    return make


def test_concurrent_renewals_of_one_id_share_one_store_call(store, make_registry, clock):
    """Five concurrent renewals of one id make a single cas_renew and all get its result."""
    a = make_registry("a")
    a.acquire("wf")
    clock.advance(1_000)
    store.park_renew = "before"
    first = parked_in_store(store, lambda: a.renew("wf"))

    joined = count_joiners(a, "wf")
    others = [Worker(lambda: a.renew("wf")) for _ in range(4)]
    for worker in others:
        worker.start()
    for _ in others:
        assert joined.acquire(timeout=TIMEOUT_S), "a renewal did not join the flight"
    store.go.set()

    results = [worker.outcome() for worker in [first, *others]]

    assert len(store.renew_calls) == 1
    expected = ClaimResult("renewed", "wf", epoch=1, expires_at_ms=T0 + 1_000 + TTL_MS)
    assert all(result == expected for result in results)
    assert all(result is results[0] for result in results)
    assert a._renewals == {}


def test_concurrent_renewals_share_a_store_error(store, make_registry, clock):
    """When the shared cas_renew raises, every caller waiting on it gets that same error."""
    a = make_registry("a")
    a.acquire("wf")
    boom = ConnectionError("database went away")
    entered, go = threading.Event(), threading.Event()

    def failing_renew(workflow_id, *, held, expires_at_ms):
        entered.set()
        go.wait(TIMEOUT_S)
        raise boom

    store.cas_renew = failing_renew
    first = Worker(lambda: a.renew("wf"))
    first.start()
    assert entered.wait(TIMEOUT_S)
    joined = count_joiners(a, "wf")
    second = Worker(lambda: a.renew("wf"))
    second.start()
    assert joined.acquire(timeout=TIMEOUT_S), "the second renewal did not join the flight"
    go.set()

    for worker in (first, second):
        with pytest.raises(ConnectionError) as raised:
            worker.outcome()
        assert raised.value is boom
    assert a.current_epoch("wf") == 1
    assert a._renewals == {}


def test_renewal_after_release_began_is_not_held(store, make_registry):
    """While a release is in progress, a new renewal of that id answers not-held with no CAS."""
    a = make_registry("a")
    a.acquire("wf")
    store.park_release = True
    releasing = parked_in_store(store, lambda: a.release("wf"))

    assert a.renew("wf") == ClaimResult("not-held", "wf")
    assert store.renew_calls == []

    store.go.set()
    assert releasing.outcome() == ClaimResult("released", "wf", epoch=1)
    assert store.read_claim("wf") == ClaimRow("wf", 1, None)


def test_release_waits_for_in_flight_renewal_then_releases_what_it_wrote(
    store, make_registry, clock
):
    """A release waits out an in-flight renewal and conditions on the renewed expiry."""
    a = make_registry("a")
    a.acquire("wf")
    clock.advance(2_000)
    renewed_expiry = T0 + 2_000 + TTL_MS
    store.park_renew = "after"
    renewing = parked_in_store(store, lambda: a.renew("wf"))

    releasing = release_waiting(a, "wf")
    assert a.renew("wf") == ClaimResult("not-held", "wf")
    assert store.release_calls == []
    assert releasing.is_alive()

    store.go.set()

    assert renewing.outcome() == ClaimResult("renewed", "wf", epoch=1, expires_at_ms=renewed_expiry)
    assert releasing.outcome() == ClaimResult("released", "wf", epoch=1)
    assert store.release_calls == [("wf", Holder("a", 1, renewed_expiry, T0), True)]
    assert store.read_claim("wf") == ClaimRow("wf", 1, None)
    assert len(store.renew_calls) == 1
    assert a.held_workflow_ids() == []


def test_release_after_a_lost_in_flight_renewal_is_not_held(store, make_registry, clock):
    """If the renewal it waited for was lost, the release answers not-held and writes nothing."""
    lost = []
    a = make_registry("a", on_claim_lost=lost.append)
    a.acquire("wf")
    clock.set(PAST_GRACE)
    make_registry("b").takeover("wf")
    store.park_renew = "before"
    renewing = parked_in_store(store, lambda: a.renew("wf"))
    releasing = release_waiting(a, "wf")

    store.go.set()

    assert renewing.outcome().status == "lost"
    assert releasing.outcome().status == "not-held"
    assert store.release_calls == []
    assert lost == ["wf"]


@pytest.mark.parametrize("regrant", ["takeover after expiry", "acquire after rotation"])
def test_stale_renewal_failure_leaves_a_newer_grant_alone(store, make_registry, clock, regrant):
    """A renewal whose CAS fails after the id was re-granted at a newer epoch changes nothing."""
    lost = []
    metrics = ClaimMetrics()
    a = make_registry("a", on_claim_lost=lost.append, metrics=metrics)
    a.acquire("wf")
    store.park_renew = "before"
    renewing = parked_in_store(store, lambda: a.renew("wf"))

    store.park_renew = None
    if regrant == "takeover after expiry":
        clock.set(PAST_GRACE)
        assert a.takeover("wf").epoch == 2
        new_epoch = 2
    else:
        rotate_claim(store, "wf", clock=clock)
        assert a.acquire("wf").epoch == 3
        new_epoch = 3
    new_entry = a.held_claim("wf")
    events_before = store.events

    store.go.set()
    result = renewing.outcome()

    assert result.status == "lost"
    assert a.held_claim("wf") is new_entry
    assert a.current_epoch("wf") == new_epoch
    assert a.held_workflow_ids() == ["wf"]
    assert not a.in_cooldown("wf", clock())
    assert lost == []
    assert metrics.snapshot()["attempts"]["deposed"] == 0
    assert store.events == events_before
    assert a.renew("wf").status == "renewed"
    assert store.read_claim("wf").holder.epoch == new_epoch


class ParkedReadStore(ParkingStore):
    """Parks read_claim after it has read the row, once, when ``park_read`` is set."""

    park_read = False

    def read_claim(self, workflow_id: str) -> ClaimRow | None:
        row = super().read_claim(workflow_id)
        if self.park_read:
            self.park_read = False
            self._park()
        return row


def test_adopt_racing_a_renewal_of_the_same_claim_does_not_depose_the_engine(clock):
    """A repeated adopt whose read predates a renewal must not cache the stale expiry."""
    # The registry caches the values it last wrote; if adopt overwrites the cache
    # with the expiry it read before a renewal, the engine's next renewal fails
    # although nobody else touched the row (a redelivered adopt message does this).
    store = ParkedReadStore()
    lost = []
    a = ClaimRegistry(
        store,
        engine_id="a",
        clock=clock,
        timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
        on_claim_lost=lost.append,
    )
    a.acquire("wf")
    store.park_read = True
    adopting = parked_in_store(store, lambda: a.adopt("wf", 1))

    clock.advance(RENEW_INTERVAL_MS)
    assert a.renew("wf").status == "renewed"
    store.go.set()
    adopting.outcome()

    assert a.held_claim("wf") == store.read_claim("wf").holder
    clock.advance(RENEW_INTERVAL_MS)
    assert a.renew("wf").status == "renewed"
    assert lost == []


def release_waiting(registry: Any, workflow_id: str) -> Worker:
    """A Worker releasing ``workflow_id``, returned once the registry has it as releasing."""
    worker = Worker(lambda: registry.release(workflow_id))
    worker.start()
    wait_until(lambda: workflow_id in registry._releasing)
    return worker
