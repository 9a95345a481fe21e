"""Values that cross the store boundary: claim rows, holders, results and events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .constants import MAX_SAFE_INTEGER
from .sessions import SessionRow


def _is_time(value: object) -> bool:
    return isinstance(value, int) and 0 <= value <= MAX_SAFE_INTEGER


@dataclass(frozen=True, slots=True)
class Holder:
    """The holder columns of a claim row, exactly as stored.

    In the engine-lease mode a holder names its engine's session (``session_epoch``) and
    stores no expiry of its own: it lives while that session does (docs/design.md §12).
    """

    engine_id: str | None
    epoch: int | None
    expires_at_ms: int | None
    claimed_at_ms: int | None
    session_epoch: int | None = None

    def session_engine(self) -> str | None:
        """The engine whose session row a read joins to this holder: None for a holder
        that lives by its own expiry (or names no engine)."""
        return self.engine_id if self.session_epoch is not None and self.engine_id else None


def holder_engine(holder: Holder | None) -> str | None:
    """The engine a holder's row names, for a move's ``holder_before``: the engine whose
    cache may hold the claim, whatever the rest of the holder columns say (a garbled row
    still names the engine that cached it); None for no holder or a blank engine."""
    if holder is None or not isinstance(holder.engine_id, str) or not holder.engine_id:
        return None
    return holder.engine_id


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """One workflow's claim: the fencing epoch and its holder, if any; for a holder that
    names a session, that engine's session row as read with it (None: no row)."""

    workflow_id: str
    epoch: int
    holder: Holder | None  # None when all holder columns are null
    session: SessionRow | None = None

    def holder_is_valid(self) -> bool:
        """Garbage holders (blank engine, mismatched epoch, bad times; for a session holder,
        a session row missing, garbled or at another epoch) are stealable at once."""
        holder = self.holder
        if holder is None or not holder.engine_id:
            return False
        if holder.epoch != self.epoch or not _is_time(holder.claimed_at_ms):
            return False
        if holder.session_epoch is None:
            return _is_time(holder.expires_at_ms)
        session = self.session
        return (
            session is not None
            and session.is_valid()
            and session.engine_id == holder.engine_id
            and session.epoch == holder.session_epoch
        )

    def expires_at_ms(self) -> int | None:
        """When the holder's liveness ends: its session's expiry for a session holder."""
        if self.holder is None:
            return None
        if self.holder.session_epoch is None:
            return self.holder.expires_at_ms
        return None if self.session is None else self.session.expires_at_ms

    def valid_holder_engine(self) -> str | None:
        return self.holder.engine_id if self.holder is not None and self.holder_is_valid() else None


ClaimStatus = Literal[
    "acquired",
    "lost-race",
    "not-expired",
    "no-claim",
    "backoff-skipped",
    "renewed",
    "lost",
    "not-held",
    "released",
    "adopted",
]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    status: ClaimStatus
    workflow_id: str
    epoch: int | None = None
    held_by: str | None = None
    expires_at_ms: int | None = None
    # An earlier grant whose answer was lost and a read found committed: what it was
    # ("acquired" or "takeover"), so that it is counted as what happened, not as the call
    # that found it.
    granted_as: EventKind | None = None


EventKind = Literal[
    "acquired",
    "takeover",
    "released",
    "deposed",
    "rotated",
    "forced_release",
    "forced_takeover",
    "adopted",
]


# The logged transitions that move a claim to a new epoch: whoever held it before has lost
# it (docs/design.md §12: how an engine under a session learns of them).
MOVE_KINDS: frozenset[EventKind] = frozenset(
    {"takeover", "rotated", "forced_release", "forced_takeover"}
)


@dataclass(frozen=True, slots=True)
class ClaimEventRecord:
    """A transition of one claim, written by the store in the same transaction as the CAS."""

    workflow_id: str
    kind: EventKind
    epoch_before: int | None
    epoch_after: int | None
    engine_id: str | None
    at_ms: int
    actor: str | None = None
    reason: str = ""
    # For a move (MOVE_KINDS): the engine the row named as holder before it, the one whose
    # cache may still hold the claim; None when it named none, or nothing usable (every
    # engine under a session then reads the move, as it read every move before).
    holder_before: str | None = None


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """What reclaim needs to know of a workflow: is it running, and can I run its type."""

    workflow_id: str
    status: str
    workflow_type: str


@dataclass(frozen=True, slots=True)
class ScanPage:
    """One bounded page of the authoritative scan (reclaim source 3)."""

    candidates: list[str]
    scanned: int
    wrapped: bool


@dataclass(frozen=True, slots=True)
class GrantPlan:
    """One takeover in a set-based grant: the row must still hold exactly what was observed."""

    workflow_id: str
    expected_epoch: int
    expected_holder: Holder | None
    holder: Holder
    event: ClaimEventRecord | None


# A session as the claims name it: (engine id, session epoch).
SessionPair = tuple[str, int]


@dataclass(frozen=True, slots=True)
class StaleHolders:
    """Discovery's first source. ``workflow_ids`` are taken over id by id; a dead session
    naming more claims than the caller's bound is in ``swept`` with how many it names,
    and its claims are taken over by the session, a chunk a statement
    (``ClaimStore.take_over_session_claims``), never listed."""

    workflow_ids: list[str]
    swept: dict[SessionPair, int]

    @property
    def count(self) -> int:
        return len(self.workflow_ids) + sum(self.swept.values())


@dataclass(frozen=True, slots=True)
class SessionTakeover:
    """A set-based takeover of a dead session's claims: who takes them, and at what time.

    Each row moves to its next epoch, names ``engine_id`` and its open session
    ``session_epoch``, claimed at ``now_ms``, with a ``takeover`` event at that time."""

    engine_id: str
    session_epoch: int
    now_ms: int
