"""What a query is judged against: the instant, the timing and, read once and only when a
query needs them, the sessions the claims name."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from claims.protocol.timing import ClaimTiming
from claims.query import Value, resolve
from claims.selectors.claims.session_holders import (
    JudgedSessions,
    SessionPair,
    judge_sessions,
    session_expiries,
)


@dataclass
class QueryContext:
    now_ms: int
    timing: ClaimTiming
    # The sessions as a caller already judged them at ``now_ms``, so they are read once.
    judged: JudgedSessions | None = None

    @cached_property
    def sessions(self) -> JudgedSessions:
        """The session pairs by the state their claims are in (a state term needs them)."""
        if self.judged is not None:
            return self.judged
        return judge_sessions(self.now_ms, self.timing)

    @cached_property
    def session_expiries(self) -> dict[SessionPair, int]:
        """A session holder's expiry is its session's (an expires term needs them)."""
        return session_expiries()

    def plain(self, value: Value) -> str | int:
        """A query value as the column holds it: times in milliseconds since 1970."""
        if isinstance(value, str | int):
            return value
        return resolve(value, self.now_ms)
