"""Which (engine, session) pairs the claims may name, kept between one engine's passes, so
finding the claims of dead sessions costs what changed (docs/design.md §4, "What a pass
costs the fleet").

The pairs the claims name are read in full (one index step per pair) on the first pass
and then every PAIRS_READ_EVERY_MS. In between, a pass reads the sessions not closed, one
short read: a claim names its engine's session open at the grant, so every pair a claim
can name since the full read was open then, and is either still open, or was seen open
by an earlier pass and has since closed, moved on an epoch or expired. Those, the pairs of
the last full read, and every pair found dead with claims (until none is left) are judged
by the stale-holder rule; a dead one costs a read of its claims.

A dead pair found with no claims is not read again while its session row stays as it was
then. It can come back: a late renewal of an expired session nobody closed still applies
(§12), and a grant that read the session in its grace may commit after the pass found no
claims. A renewal changes the row, which ends the pair's rest at once; every full read
ends every rest.

What a pass between two full reads cannot see: a session that opened, granted claims and
died entirely between two of this engine's passes (one interval), and a grant committed
naming a session after a pass found it dead and empty. Both are found by the next full
read, within PAIRS_READ_EVERY_MS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from claims.protocol.sessions import SessionRow, session_is_open

PAIRS_READ_EVERY_MS = 100_000

Pair = tuple[str, int]


def session_alive(session: SessionRow | None, epoch: int, expired_before_ms: int) -> bool:
    """Whether the claims naming session ``epoch`` are still held: it is valid, at that
    epoch, open, and expires no earlier than the bound (the stale-holder rule)."""
    return (
        session_is_open(session, epoch)
        and session is not None
        and session.expires_at_ms >= expired_before_ms
    )


class SessionPairWatch:
    """One engine's memory of the pairs worth judging; the reads are the caller's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, SessionRow] = {}  # the session rows the last judgement read
        self._named: set[Pair] = set()  # from the last full read
        self._read_at_ms: int | None = None
        self._called_at_ms: int | None = None  # the last call's bound
        self._seen_open: dict[str, int] = {}  # engine -> epoch, as the last pass read them
        # Dead, and no claim named them when read: by the session row's expiry then (None:
        # no row or closed), so a renewal of a revived session ends the rest.
        self._drained: dict[Pair, int | None] = {}

    def dead_pairs(
        self,
        *,
        expired_before_ms: int,
        read_unclosed: Callable[[], dict[str, SessionRow]],
        read_pairs: Callable[[], list[Pair]],
        read_sessions: Callable[[Iterable[str]], dict[str, SessionRow]],
        fresh_within_ms: int | None = None,
    ) -> list[Pair]:
        """The pairs worth reading the claims of: dead by the rule, not known drained.
        Every pair is read again when the last call is more than ``fresh_within_ms`` before
        this one: the sessions seen open then no longer cover the pairs claims name now (a
        session that opened and closed since was seen by no call)."""
        with self._lock:
            unclosed = read_unclosed()
            watch = {(engine, row.epoch) for engine, row in unclosed.items()}
            watch.update(self._seen_open.items())
            self._seen_open = {engine: row.epoch for engine, row in unclosed.items()}
            last_call, self._called_at_ms = self._called_at_ms, expired_before_ms
            due = (
                self._read_at_ms is None
                or expired_before_ms - self._read_at_ms >= PAIRS_READ_EVERY_MS
                or (
                    fresh_within_ms is not None
                    and last_call is not None
                    and expired_before_ms - last_call > fresh_within_ms
                )
            )
            if due:
                self._named = set(read_pairs())
                self._read_at_ms = expired_before_ms
                self._drained.clear()
            watch.update(self._named)
            missing = {engine for engine, _ in watch if engine not in unclosed}
            rows = {**read_sessions(missing), **unclosed} if missing else unclosed
            self._rows = rows
            dead = []
            for pair in sorted(watch):
                row = rows.get(pair[0])
                if session_alive(row, pair[1], expired_before_ms):
                    continue
                if pair in self._drained and self._drained[pair] == _expiry(row):
                    continue
                self._drained.pop(pair, None)
                dead.append(pair)
            return dead

    def judged(self, pair: Pair, *, named: bool) -> None:
        """What the read of a dead pair's claims found: while some claim names it, it stays
        watched whatever the sessions say; once none does, it rests."""
        with self._lock:
            if named:
                self._named.add(pair)
            else:
                self._drained[pair] = _expiry(self._rows.get(pair[0]))
                self._named.discard(pair)


def _expiry(row: SessionRow | None) -> int | None:
    return None if row is None or row.closed_at_ms is not None else row.expires_at_ms
