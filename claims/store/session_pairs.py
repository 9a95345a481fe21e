"""Which (engine, session) pairs the claims may name, kept between one engine's passes, so
finding the claims of dead sessions costs what changed (docs/design.md §4, "What a pass
costs the fleet").

The pairs the claims name are read in full (one index step per pair) on the first pass
and then every PAIRS_READ_EVERY_MS. In between, a pass reads the sessions not closed, one
short read: a claim names its engine's session open at the grant, so every pair a claim
can name since the full read was open then, and is either still open, or was seen open
by an earlier pass and has since closed, moved on an epoch or expired. Those, and the
pairs of the last full read, are judged by the stale-holder rule; a dead one costs a read
of its claims, and once none is left it is never read again (a dead session never comes
back: epochs only move on, and a closed session is never reopened under its epoch).

What a pass between two full reads cannot see: a session that opened, granted claims and
died entirely between two of this engine's passes (one interval). Its claims are found by
the next full read, within PAIRS_READ_EVERY_MS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from claims.protocol.sessions import SessionRow

PAIRS_READ_EVERY_MS = 100_000

Pair = tuple[str, int]


def session_alive(session: SessionRow | None, epoch: int, expired_before_ms: int) -> bool:
    """Whether the claims naming session ``epoch`` are still held: it is valid, at that
    epoch, open, and expires no earlier than the bound (the stale-holder rule)."""
    return (
        session is not None
        and session.is_valid()
        and session.epoch == epoch
        and session.closed_at_ms is None
        and session.expires_at_ms >= expired_before_ms
    )


class SessionPairWatch:
    """One engine's memory of the pairs worth judging; the reads are the caller's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._named: set[Pair] = set()  # from the last full read
        self._read_at_ms: int | None = None
        self._seen_open: dict[str, int] = {}  # engine -> epoch, as the last pass read them
        self._drained: set[Pair] = set()  # dead, and no claim names them

    def dead_pairs(
        self,
        *,
        expired_before_ms: int,
        read_unclosed: Callable[[], dict[str, SessionRow]],
        read_pairs: Callable[[], list[Pair]],
        read_sessions: Callable[[Iterable[str]], dict[str, SessionRow]],
    ) -> list[Pair]:
        """The pairs worth reading the claims of: dead by the rule, not known drained."""
        with self._lock:
            unclosed = read_unclosed()
            watch = {(engine, row.epoch) for engine, row in unclosed.items()}
            watch.update(self._seen_open.items())
            self._seen_open = {engine: row.epoch for engine, row in unclosed.items()}
            due = self._read_at_ms is None or (
                expired_before_ms - self._read_at_ms >= PAIRS_READ_EVERY_MS
            )
            if due:
                self._named = set(read_pairs())
                self._read_at_ms = expired_before_ms
            watch.update(self._named)
            watch -= self._drained
            missing = {engine for engine, _ in watch if engine not in unclosed}
            rows = {**read_sessions(missing), **unclosed} if missing else unclosed
            return sorted(
                pair
                for pair in watch
                if not session_alive(rows.get(pair[0]), pair[1], expired_before_ms)
            )

    def drained(self, pair: Pair) -> None:
        """No claim names this dead pair any more: it is not read again."""
        with self._lock:
            self._drained.add(pair)
            self._named.discard(pair)
