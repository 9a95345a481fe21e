"""Claim statements that committed but whose answer was lost, and failures between a grant
and its drive: the engine settles what happened by reading the row, never by guessing.

``LostAnswers`` runs a chosen store call for real and then raises as the database driver
does when the connection breaks before the reply arrives; ``Outage`` fails calls before
they reach the store. Both stand in front of either store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import pytest

from claims.protocol import ClaimMetrics, ClaimRegistry, Holder, SessionLeases, run_renew_pass
from claims.protocol.session_lease import EngineSessionLease

from .stores import GRACE_MS, RENEW_INTERVAL_MS, START_MS, TTL_MS

T0 = START_MS
EXPIRY = T0 + TTL_MS


class AnswerLost(ConnectionError):
    """server closed the connection unexpectedly (after it committed)."""


class LostAnswers:
    """Delegates to a real store. Each name in ``lose`` runs once for real, then raises;
    each name in ``fail`` raises once without running; ``late`` runs a call's statement
    only after the next ``read_claim`` returned (a statement the server finished later)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lose: set[str] = set()
        self.fail: set[str] = set()
        self.late: set[str] = set()
        self._landing: list[Callable[[], Any]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.fail:
                self.fail.discard(name)
                raise AnswerLost(f"{name}: the connection broke before the statement")
            if name in self.late:
                self.late.discard(name)
                self._landing.append(lambda: attr(*args, **kwargs))
                raise AnswerLost(f"{name}: no answer; the server is still at it")
            result = attr(*args, **kwargs)
            if name == "read_claim" and self._landing:
                self._landing.pop()()
            if name in self.lose:
                self.lose.discard(name)
                raise AnswerLost(f"{name}: committed, answer lost")
            return result

        return call

    @contextlib.contextmanager
    def breaking(
        self, method: str, how: Literal["lose", "fail", "late"] = "lose"
    ) -> Iterator[None]:
        """The store's next ``method`` call goes wrong as ``how`` says (see the class), and
        the block, which makes that call, must raise ``AnswerLost`` for it."""
        {"lose": self.lose, "fail": self.fail, "late": self.late}[how].add(method)
        with pytest.raises(AnswerLost):
            yield


@pytest.fixture
def broken(store: Any) -> LostAnswers:
    return LostAnswers(store)


def engine(
    registry: Callable[..., Any],
    broken: LostAnswers,
    *,
    holding: Iterable[str] = (),
    **kwargs: Any,
) -> tuple[Any, ClaimMetrics, list[str]]:
    """Engine a on the broken store, with its metrics and the claims it was told it lost;
    it has acquired the workflows in ``holding``."""
    lost: list[str] = []
    metrics = ClaimMetrics()
    a = registry("a", on=broken, metrics=metrics, on_claim_lost=lost.append, **kwargs)
    for workflow_id in holding:
        assert a.acquire(workflow_id).status == "acquired"
    return a, metrics, lost


def a_ghost_row_of_a(
    registry: Callable[..., Any], arrange: Any, workflows: Any
) -> tuple[Any, list[str]]:
    """A running workflow whose live row, at epoch 7, names engine a, which does not hold
    it; returns a and the list its reclaim target's drives go to."""
    workflows.put("wf")
    arrange.put_row("wf", epoch=7, holder=Holder("a", 7, T0 + TTL_MS, T0))
    return registry("a"), []


# -- 1. a renewal whose answer was lost ----------------------------------------------------


def test_a_renewal_whose_answer_was_lost_is_followed_by_a_renewal_not_a_deposition(
    registry, broken, arrange, clock
):
    a, metrics, lost = engine(registry, broken, holding=["wf"])
    clock.advance(RENEW_INTERVAL_MS)
    with broken.breaking("cas_renew"):
        a.renew("wf")
    clock.advance(RENEW_INTERVAL_MS)

    result = a.renew("wf")

    assert result.status == "renewed"
    assert lost == []
    assert metrics.snapshot()["attempts"]["deposed"] == 0
    assert arrange.read("wf").holder == Holder("a", 1, clock() + TTL_MS, T0)
    assert a.held_claim("wf") == Holder("a", 1, clock() + TTL_MS, T0)
    assert [e[0] for e in arrange.events("wf")] == ["acquired"]


def test_a_renewal_that_never_reached_the_database_is_simply_sent_again(
    registry, broken, arrange, clock
):
    a, _, lost = engine(registry, broken, holding=["wf"])
    with broken.breaking("cas_renew", how="fail"):
        a.renew("wf")

    assert a.renew("wf").status == "renewed"
    assert lost == []


def test_a_renewal_the_server_finished_after_the_read_is_still_recognised(
    registry, broken, arrange, clock
):
    """The read that settles the doubt sees the old row; the statement lands just after;
    the renewal's compare-and-swap then misses, and a second read finds it mine."""
    a, metrics, lost = engine(registry, broken, holding=["wf"])
    clock.advance(RENEW_INTERVAL_MS)
    with broken.breaking("cas_renew", how="late"):
        a.renew("wf")
    clock.advance(RENEW_INTERVAL_MS)

    assert a.renew("wf").status == "renewed"
    assert lost == []
    assert metrics.snapshot()["attempts"]["deposed"] == 0
    assert arrange.read("wf").holder == Holder("a", 1, clock() + TTL_MS, T0)


def test_a_renewal_in_doubt_that_someone_else_overtook_is_a_deposition(
    registry, broken, arrange, clock
):
    a, metrics, lost = engine(registry, broken, holding=["wf"])
    with broken.breaking("cas_renew", how="fail"):
        a.renew("wf")
    clock.advance(TTL_MS + GRACE_MS + 1)
    assert registry("b").takeover("wf").status == "acquired"

    assert a.renew("wf").status == "lost"
    assert lost == ["wf"]
    assert metrics.snapshot()["attempts"]["deposed"] == 1


# -- 2. the set-based renewal ---------------------------------------------------------------


def test_a_renew_pass_whose_statement_answer_was_lost_renews_every_claim_next_pass(
    registry, broken, arrange, clock
):
    ids = [f"wf-{n:02d}" for n in range(20)]
    a, metrics, lost = engine(registry, broken, holding=ids)
    clock.advance(RENEW_INTERVAL_MS)
    broken.lose.add("renew_many")
    first = run_renew_pass(a, metrics)
    assert first.failed_count == 20
    clock.advance(RENEW_INTERVAL_MS)

    second = run_renew_pass(a, metrics)

    assert second.renewed_count == 20
    assert lost == []
    assert metrics.snapshot()["attempts"]["deposed"] == 0
    assert a.held_workflow_ids() == ids
    assert {arrange.read(wf).holder.expires_at_ms for wf in ids} == {clock() + TTL_MS}


def test_a_renew_pass_statement_that_landed_late_does_not_depose_its_chunk(
    registry, broken, arrange, clock
):
    a, metrics, lost = engine(registry, broken, holding=[f"wf-{n:02d}" for n in range(5)])
    clock.advance(RENEW_INTERVAL_MS)
    broken.lose.add("renew_many")
    run_renew_pass(a, metrics)
    broken.late.add("read_claims")  # the settling read fails; the next pass reads again
    clock.advance(RENEW_INTERVAL_MS)
    run_renew_pass(a, metrics)
    clock.advance(RENEW_INTERVAL_MS)

    assert run_renew_pass(a, metrics).renewed_count == 5
    assert lost == []


# -- 3. a grant whose answer was lost ----------------------------------------------------------


def test_an_acquire_whose_answer_was_lost_is_recognised_by_the_next_acquire(
    registry, broken, arrange, clock
):
    a, _, _ = engine(registry, broken)
    with broken.breaking("cas_insert"):
        a.acquire("wf")
    assert a.held_workflow_ids() == []

    result = a.acquire("wf")

    assert (result.status, result.epoch) == ("acquired", 1)
    assert a.held_workflow_ids() == ["wf"]
    assert [e[0] for e in arrange.events("wf")] == ["acquired"]
    assert a.renew("wf").status == "renewed"


def test_a_takeover_whose_answer_was_lost_is_recognised_by_the_next_takeover(
    registry, broken, arrange, clock
):
    arrange.put_row("wf", epoch=4, holder=Holder("b", 4, EXPIRY, T0))
    clock.set(EXPIRY + GRACE_MS + 1)
    a, _, _ = engine(registry, broken)
    with broken.breaking("cas_grant"):
        a.takeover("wf")

    result = a.takeover("wf")

    assert (result.status, result.epoch) == ("acquired", 5)
    assert arrange.read("wf").epoch == 5
    assert a.renew("wf").status == "renewed"


@pytest.mark.parametrize("method", ["grant_many", "insert_many"])
def test_set_based_grants_whose_answer_was_lost_are_recognised(
    registry, broken, arrange, clock, method
):
    a, _, _ = engine(registry, broken)
    ids = ["wf-1", "wf-2", "wf-3"]
    if method == "grant_many":
        for workflow_id in ids:
            arrange.put_row(workflow_id, epoch=2, holder=None)
    with broken.breaking(method):
        a.acquire_many(ids)

    again = a.acquire_many(ids)

    assert {wf: r.status for wf, r in again.items()} == dict.fromkeys(ids, "acquired")
    assert sorted(a.held_workflow_ids()) == ids


def test_the_reclaim_pass_drives_a_workflow_whose_grant_answer_was_lost_within_one_pass(
    registry, broken, arrange, workflows, reclaim_target, clock
):
    """The attempt fails; the next discovery lists the id (its grant is in doubt), and the
    attempt finds the claim its own and drives it, without waiting for it to expire."""
    workflows.put("wf")
    a, _, _ = engine(registry, broken)
    driven: list[str] = []
    target = reclaim_target(a, on=broken, on_reclaimed=driven.append)
    broken.lose.add("acquire_many")
    broken.lose.discard("acquire_many")
    with broken.breaking("insert_many"):
        target.attempt_batch(target.list_candidates())
    clock.advance(RENEW_INTERVAL_MS)

    candidates = target.list_candidates()
    assert "wf" in candidates
    assert target.attempt("wf") == "reclaimed"
    assert driven == ["wf"]
    assert a.current_epoch("wf") == 1


def test_an_acquisition_whose_answer_was_lost_counts_as_acquired_when_a_takeover_finds_it(
    registry, broken, arrange, workflows, reclaim_target, clock
):
    """The grant that landed was an acquisition; the attempt that finds it goes through the
    takeover path. The counters say what happened: one acquisition, no takeover."""
    workflows.put("wf")
    a, metrics, _ = engine(registry, broken)
    target = reclaim_target(a, on=broken, on_reclaimed=lambda _wf: None)
    with broken.breaking("insert_many"):
        target.attempt_batch(target.list_candidates())
    clock.advance(RENEW_INTERVAL_MS)

    assert target.attempt("wf") == "reclaimed"

    attempts = metrics.snapshot()["attempts"]
    assert (attempts["acquired"], attempts["takeover"]) == (1, 0)
    assert [event[0] for event in arrange.events("wf")] == ["acquired"]


# -- 4. a failure between a grant and its drive ---------------------------------------------


def reclaiming_expired_rows_of_b(ids, registry, broken, arrange, workflows, reclaim_target, clock):
    """Engine a's reclaim target over workflows whose claims b held and let expire past
    grace; returns the target and the list of workflows it drives."""
    for workflow_id in ids:
        workflows.put(workflow_id)
        arrange.put_row(workflow_id, epoch=2, holder=Holder("b", 2, EXPIRY, T0))
    clock.set(EXPIRY + GRACE_MS + 1)
    a, _, _ = engine(registry, broken)
    driven: list[str] = []
    return a, reclaim_target(a, on=broken, on_reclaimed=driven.append), driven


@contextlib.contextmanager
def first_call_breaks(broken: LostAnswers, method: str) -> Iterator[None]:
    """The store's ``method`` loses its connection on its next call only: the read that
    confirms a workflow still runs, made after its grant."""
    real = getattr(broken.inner, method)
    calls = 0

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise AnswerLost(f"{method}: the connection broke")
        return real(*args, **kwargs)

    setattr(broken.inner, method, failing_once)
    try:
        yield
    finally:
        delattr(broken.inner, method)


def test_a_failed_confirm_read_after_a_grant_leaves_a_redrive_driven_next_pass(
    registry, broken, arrange, workflows, reclaim_target, clock
):
    a, target, driven = reclaiming_expired_rows_of_b(
        ["wf"], registry, broken, arrange, workflows, reclaim_target, clock
    )
    with first_call_breaks(broken, "read_workflow"), pytest.raises(AnswerLost):
        target.attempt("wf")
    assert a.current_epoch("wf") == 3
    assert target.pending_redrives == {"wf": 3}
    clock.advance(RENEW_INTERVAL_MS)

    assert "wf" in target.list_candidates()
    assert target.attempt("wf") == "reclaimed"
    assert driven == ["wf"]
    assert target.pending_redrives == {}


def test_a_failed_confirm_read_in_the_set_based_path_leaves_redrives(
    registry, broken, arrange, workflows, reclaim_target, clock
):
    ids = ["wf-1", "wf-2"]
    _, target, driven = reclaiming_expired_rows_of_b(
        ids, registry, broken, arrange, workflows, reclaim_target, clock
    )
    with first_call_breaks(broken, "read_workflows"):
        settled = target.attempt_batch(ids)
    assert all(isinstance(outcome, AnswerLost) for outcome in settled.values())
    assert target.pending_redrives == {"wf-1": 3, "wf-2": 3}

    for workflow_id in target.list_candidates():
        target.attempt(workflow_id)

    assert sorted(driven) == ids
    assert target.pending_redrives == {}


# -- ghosts: rows naming this engine that it does not hold ----------------------------------


def test_a_live_row_naming_this_engine_that_it_does_not_hold_is_adopted_and_driven(
    registry, arrange, workflows, reclaim_target, clock
):
    """As after a forced takeover to this engine whose adopt order was lost."""
    a, driven = a_ghost_row_of_a(registry, arrange, workflows)
    target = reclaim_target(a, on_reclaimed=driven.append)

    assert target.list_candidates() == ["wf"]
    assert target.attempt("wf") == "reclaimed"

    assert driven == ["wf"]
    assert a.current_epoch("wf") == 7
    assert arrange.read("wf").epoch == 7  # taken back, not taken over
    assert arrange.events("wf")[-1] == ("adopted", 7, 7, "a")


def test_the_reclaim_pass_itself_adopts_and_drives_a_live_row_naming_this_engine(
    registry, arrange, workflows, reclaim_target, clock
):
    """The pass tries its candidates set-based first: a live row naming me must not be
    settled there as merely not expired, but taken back at its epoch in the same pass."""
    from claims.protocol import run_reclaim_pass

    a, driven = a_ghost_row_of_a(registry, arrange, workflows)

    result = run_reclaim_pass(reclaim_target(a, on_reclaimed=driven.append))

    assert result.outcomes == [("wf", "reclaimed")]
    assert driven == ["wf"]
    assert a.current_epoch("wf") == 7
    assert arrange.events("wf")[-1] == ("adopted", 7, 7, "a")


def test_discovery_asks_for_rows_naming_this_engine_once_per_audit_interval(
    registry, arrange, workflows, reclaim_target, clock
):
    workflows.put("wf")
    arrange.put_row("wf", epoch=6, holder=Holder("b", 6, T0 + TTL_MS, T0))
    a = registry("a")
    target = reclaim_target(a)
    assert target.list_candidates() == []
    arrange.put_row("wf", epoch=7, holder=Holder("a", 7, T0 + TTL_MS, T0))

    assert target.list_candidates() == []  # within the interval since the last look
    clock.advance(TTL_MS // 3)
    assert target.list_candidates() == ["wf"]


def test_after_the_first_look_the_audit_reads_recent_grants_and_all_rows_now_and_then(
    registry, arrange, workflows, reclaim_target, clock
):
    """A row naming this engine granted since the last look (less a TTL) is found at the next
    audit; one whose claim time lies further back only at the next full audit."""
    from claims.protocol.discovery import FULL_AUDIT_EVERY

    workflows.put_many(["wf-old", "wf-new"])
    a = registry("a")
    target = reclaim_target(a)
    target.list_candidates()
    assert target.last_discovery.mine_unheld == 0  # the first look reads every row: none yet
    interval = TTL_MS // 3
    clock.advance(interval)
    arrange.put_row("wf-old", epoch=3, holder=Holder("a", 3, clock() + TTL_MS, T0 - TTL_MS - 1))
    arrange.put_row("wf-new", epoch=4, holder=Holder("a", 4, clock() + TTL_MS, T0 - TTL_MS))

    assert target.list_candidates() == ["wf-new"]
    assert target.last_discovery.mine_unheld == 1
    for _ in range(FULL_AUDIT_EVERY - 3):
        clock.advance(interval)
        target.list_candidates()
        assert target.last_discovery.mine_unheld == 0  # both granted before the margin now
    clock.advance(interval)
    target.list_candidates()
    assert target.last_discovery.mine_unheld == 2


# -- releases and finishes whose answer was lost -------------------------------------------


def test_a_release_whose_answer_was_lost_is_not_later_taken_for_a_deposition(
    registry, broken, arrange, clock
):
    a, metrics, lost = engine(registry, broken, holding=["wf"])
    with broken.breaking("cas_release"):
        a.release("wf")

    assert a.renew("wf").status == "not-held"
    assert a.held_workflow_ids() == []
    assert lost == []
    assert metrics.snapshot()["attempts"]["deposed"] == 0
    assert arrange.read("wf").holder is None


def test_a_finish_whose_answer_was_lost_leaves_the_claim_released_without_a_deposition(
    registry, broken, arrange, clock
):
    a, _metrics, lost = engine(registry, broken, holding=["wf"])
    with broken.breaking("fenced_write"):
        a.finish("wf", lambda: "done")

    assert a.renew("wf").status == "not-held"
    assert lost == []
    assert arrange.read("wf").holder is None


def test_an_engine_lease_release_whose_answer_was_lost_is_settled_by_the_next_renew_pass(
    broken, arrange, clock, timing
):
    """The session's renewal reads no claim row; the pass reads the row of a held claim in
    doubt, so the engine stops holding (and driving) a claim its own release gave up."""
    session = EngineSessionLease(broken, engine_id="a", clock=clock, timing=timing)
    a = ClaimRegistry(
        broken, engine_id="a", clock=clock, timing=timing, liveness=SessionLeases(session)
    )
    assert a.acquire("wf").status == "acquired"
    with broken.breaking("cas_release"):
        a.release("wf")
    assert a.held_workflow_ids() == ["wf"]  # in doubt: kept until a read settles it

    run_renew_pass(a)

    assert a.held_workflow_ids() == []
    assert arrange.read("wf").holder is None


def test_an_engine_lease_release_that_never_landed_stays_held_after_the_renew_pass(
    broken, arrange, clock, timing
):
    session = EngineSessionLease(broken, engine_id="a", clock=clock, timing=timing)
    a = ClaimRegistry(
        broken, engine_id="a", clock=clock, timing=timing, liveness=SessionLeases(session)
    )
    assert a.acquire("wf").status == "acquired"
    with broken.breaking("cas_release", how="fail"):
        a.release("wf")

    run_renew_pass(a)

    assert a.held_workflow_ids() == ["wf"]
    assert arrange.read("wf").holder.engine_id == "a"
