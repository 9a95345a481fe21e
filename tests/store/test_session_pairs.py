"""SessionPairWatch: which (engine, session) pairs a pass judges, read in full only every
PAIRS_READ_EVERY_MS and otherwise from the sessions not closed (claims/store/session_pairs.py).
Pure: the reads are functions the test hands it, counting their calls."""

from __future__ import annotations

from collections.abc import Iterable

from claims.protocol.sessions import SessionRow
from claims.store.session_pairs import PAIRS_READ_EVERY_MS, SessionPairWatch

NOW = 1_700_000_000_000


def session(engine: str, epoch: int, *, expires: int = NOW + 30_000, closed: bool = False):
    return SessionRow(engine, epoch, expires, NOW, NOW, NOW if closed else None)


class Database:
    """Session rows and the pairs the claims name, as the store would read them."""

    def __init__(self, sessions: list[SessionRow], named: list[tuple[str, int]]) -> None:
        self.sessions = {row.engine_id: row for row in sessions}
        self.named = named
        self.pair_reads = 0

    def unclosed(self) -> dict[str, SessionRow]:
        return {e: row for e, row in self.sessions.items() if row.closed_at_ms is None}

    def pairs(self) -> list[tuple[str, int]]:
        self.pair_reads += 1
        return list(self.named)

    def rows(self, engines: Iterable[str]) -> dict[str, SessionRow]:
        return {e: self.sessions[e] for e in engines if e in self.sessions}

    def dead(self, watch: SessionPairWatch, bound: int = NOW) -> list[tuple[str, int]]:
        return watch.dead_pairs(
            expired_before_ms=bound,
            read_unclosed=self.unclosed,
            read_pairs=self.pairs,
            read_sessions=self.rows,
        )


def test_the_pairs_are_read_in_full_first_and_then_once_per_period():
    db = Database([session("a", 1)], [("a", 1)])
    watch = SessionPairWatch()

    assert db.dead(watch) == []
    assert db.dead(watch, NOW + PAIRS_READ_EVERY_MS - 1) == [("a", 1)]  # expired by then
    assert db.pair_reads == 1
    db.sessions["a"] = session("a", 1, expires=NOW + 2 * PAIRS_READ_EVERY_MS)
    db.dead(watch, NOW + PAIRS_READ_EVERY_MS)
    assert db.pair_reads == 2


def test_a_session_seen_open_is_judged_after_it_closes_moves_on_or_expires():
    db = Database([session("a", 1), session("b", 1), session("c", 1)], [])
    watch = SessionPairWatch()
    assert db.dead(watch) == []

    db.sessions["a"] = session("a", 1, closed=True)
    db.sessions["b"] = session("b", 2)
    db.sessions["c"] = session("c", 1, expires=NOW - 1)

    assert db.dead(watch) == [("a", 1), ("b", 1), ("c", 1)]
    assert db.pair_reads == 1  # no full read: every one was seen open by a pass


def test_a_dead_pair_of_the_full_read_is_judged_by_its_session_row():
    db = Database([session("a", 3, closed=True)], [("a", 2), ("a", 3)])

    assert db.dead(SessionPairWatch()) == [("a", 2), ("a", 3)]


def test_a_dead_pair_found_empty_rests_until_its_row_changes_or_the_next_full_read():
    db = Database([session("a", 1, expires=NOW - 1)], [("a", 1)])
    watch = SessionPairWatch()
    assert db.dead(watch) == [("a", 1)]

    watch.judged(("a", 1), named=False)

    assert db.dead(watch) == []
    assert db.dead(watch, NOW + PAIRS_READ_EVERY_MS) == [("a", 1)]  # the full read ends it
    assert db.pair_reads == 2


def test_a_late_renewal_of_a_resting_session_ends_its_rest():
    """An expired session nobody closed may still be renewed (docs/design.md §12): its
    engine grants again under it, and when it dies again its claims are found."""
    db = Database([session("a", 5, expires=NOW - 1)], [])
    watch = SessionPairWatch()
    assert db.dead(watch) == [("a", 5)]
    watch.judged(("a", 5), named=False)
    assert db.dead(watch, NOW + 1) == []

    db.sessions["a"] = session("a", 5, expires=NOW + 10)  # renewed, late
    assert db.dead(watch, NOW + 2) == []
    assert db.dead(watch, NOW + 11) == [("a", 5)]  # expired again: read again


def test_a_dead_pair_with_claims_stays_watched_until_none_is_left():
    """Seen open, then closed: judged on the next pass, and on every pass after while the
    read finds claims (a window that did not reach them all, a type not registered here)."""
    db = Database([session("a", 1)], [])
    watch = SessionPairWatch()
    assert db.dead(watch) == []
    db.sessions["a"] = session("a", 1, closed=True)

    for _ in range(3):
        assert db.dead(watch) == [("a", 1)]
        watch.judged(("a", 1), named=True)
    watch.judged(("a", 1), named=False)
    assert db.dead(watch) == []
    assert db.pair_reads == 1


def test_a_session_born_and_dead_between_two_passes_waits_for_the_full_read():
    """The one gap: never seen open, not named at the last full read."""
    db = Database([session("a", 1)], [("a", 1)])
    watch = SessionPairWatch()
    assert db.dead(watch) == []
    db.sessions["z"] = session("z", 1, closed=True)
    db.named.append(("z", 1))

    assert db.dead(watch, NOW + 1) == []
    assert db.dead(watch, NOW + PAIRS_READ_EVERY_MS) == [("a", 1), ("z", 1)]


def test_after_a_gap_longer_than_the_freshness_asked_for_every_pair_is_read_again():
    """A session that opened and closed between two calls far apart (an engine spared its
    reads by beat's quiet shares) was seen open by no call: only a full read finds it."""
    db = Database([session("a", 1)], [("a", 1)])
    watch = SessionPairWatch()
    assert db.dead(watch) == []
    db.sessions["b"] = session("b", 1, closed=True)  # opened, granted, closed meanwhile
    db.named.append(("b", 1))

    def dead(bound: int, fresh: int | None) -> list[tuple[str, int]]:
        return watch.dead_pairs(
            expired_before_ms=bound,
            read_unclosed=db.unclosed,
            read_pairs=db.pairs,
            read_sessions=db.rows,
            fresh_within_ms=fresh,
        )

    assert dead(NOW + 5_000, 7_500) == []  # the last call 5 s ago: fresh enough, blind
    assert db.pair_reads == 1
    assert dead(NOW + 12_501, 7_500) == [("b", 1)]  # 7.5 s and more since the last call
    assert db.pair_reads == 2
