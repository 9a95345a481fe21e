"""The storage contract every claim store fulfils (in memory, Django ORM, ...).

Each ``cas_*`` method is one compare-and-swap: it applies only when the row
still holds exactly the values named, and returns whether it applied. A store
never decides protocol policy (expiry, cooldowns); the registry does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from .records import (
    ClaimEventRecord,
    ClaimRow,
    GrantPlan,
    Holder,
    ScanPage,
    SessionPair,
    SessionTakeover,
    StaleHolders,
    WorkflowInfo,
)
from .sessions import SessionStore

T = TypeVar("T")


class ClaimStore(SessionStore, Protocol):
    def read_claim(self, workflow_id: str) -> ClaimRow | None: ...

    def cas_insert(
        self, workflow_id: str, *, holder: Holder | None, event: ClaimEventRecord | None
    ) -> bool:
        """Create the row at epoch 1 (holder may be None) if no row exists for the id."""
        ...

    def cas_grant(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        expected_holder: Holder | None,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        """Move epoch -> expected_epoch + 1 and set the holder, if epoch and all the holder
        columns still equal the expected values (None = all null), and, for an expected
        holder that names a session, that session is not open."""
        ...

    def cas_rotate(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        """Move epoch -> expected_epoch + 1 and set the holder, conditioned on the epoch
        alone: an external transition must win over a concurrent renewal."""
        ...

    def cas_renew(self, workflow_id: str, *, held: Holder, expires_at_ms: int) -> bool:
        """Set holder_expires_at_ms if the epoch and all the holder columns equal ``held``."""
        ...

    def cas_release(
        self, workflow_id: str, *, held: Holder, event: ClaimEventRecord | None
    ) -> bool:
        """Clear the holder (the epoch stays) if the epoch and holder equal ``held``."""
        ...

    def record_event(self, event: ClaimEventRecord) -> None: ...

    def fenced_write(self, workflow_id: str, epoch: int, fn: Callable[[], T]) -> T:
        """Run ``fn`` in one transaction that first confirms the claim is at ``epoch``;
        otherwise roll back and raise EngineDeposedError."""
        ...

    def read_ownership_mode(self) -> tuple[str, int | None] | None: ...

    def insert_ownership_mode(self, mode: str, established_at_ms: int) -> bool: ...

    # -- passes ------------------------------------------------------------------

    def renew_many(self, held: Sequence[tuple[str, Holder]], *, expires_at_ms: int) -> set[str]:
        """Renew each (id, holder) like cas_renew, set-based; returns the ids renewed."""
        ...

    def read_workflow(self, workflow_id: str) -> WorkflowInfo | None: ...

    def list_stale_holders(self, *, expired_before_ms: int) -> list[str]:
        """Ids whose holder expires before the bound, or whose holder is invalid."""
        ...

    def find_stale_holders(
        self,
        *,
        expired_before_ms: int,
        sweep_above: int | None,
        listing_engine: str = "",
        pairs_fresh_within_ms: int | None = None,
    ) -> StaleHolders:
        """``list_stale_holders``, except that a dead session naming more than
        ``sweep_above`` claims (None: never) is counted, not listed
        (``StaleHolders.swept``); a session of ``listing_engine`` is always listed. A store
        that remembers the sessions between calls reads every pair the claims name again
        when its last call is more than ``pairs_fresh_within_ms`` before this one."""
        ...

    def take_over_session_claims(
        self,
        pair: SessionPair,
        takeover: SessionTakeover,
        *,
        limit: int,
        workflow_types: Sequence[str] | None,
        skip: Sequence[str],
    ) -> dict[str, tuple[int, str]]:
        """In one transaction, take over up to ``limit`` claims naming the session ``pair``
        if that session is not open: each row to its next epoch under ``takeover``, with
        its event. Only workflows of ``workflow_types`` (None: any), none in ``skip``;
        rows another writer has locked are skipped, not waited for. Returns, per id taken,
        its new epoch and its workflow's status as the statement read it."""
        ...

    def list_held_by(self, *, engine_id: str) -> list[str]:
        """Ids whose claim row names this engine as its holder."""
        ...

    def list_granted_to(self, *, engine_id: str, claimed_since_ms: int) -> list[str]:
        """Ids whose claim row names this engine as its holder with a claim time at or
        after ``claimed_since_ms``: a read as long as this engine's recent grants."""
        ...

    def list_unheld_running_indexed(self) -> list[str]:
        """Ids the visibility index says are running that have no holder."""
        ...

    def scan_unheld_running(
        self, *, cursor_name: str, limit: int, scanned_by: str, now_ms: int, paced_ms: int = 0
    ) -> ScanPage:
        """Read up to ``limit`` workflows after the persisted cursor, in key order; return
        the running ones with no holder, and move the cursor (to the start when short).

        With ``paced_ms``, read nothing (an empty page) when any engine moved the cursor
        less than ``paced_ms`` before ``now_ms``: the fleet then reads a page per pace,
        however many engines it has."""
        ...

    def save_pending_redrive(
        self, *, engine_id: str, workflow_id: str, epoch: int, error: str, now_ms: int
    ) -> None: ...

    def drop_pending_redrive(self, *, engine_id: str, workflow_id: str) -> None: ...

    def close_thread_resources(self) -> None:
        """Release what this thread opened (a database connection); called on threads
        that are about to end."""
        ...

    def read_claim_moves(
        self, *, since_ms: int, moved_from: str | None = None
    ) -> list[tuple[str, int]]:
        """(workflow id, epoch after) of every logged transition since ``since_ms`` that
        moved a claim to a new epoch: takeovers, rotations, forced releases and takeovers.
        With ``moved_from``, only those whose row named that engine before the move, and
        those that name no engine before (each engine reads those)."""
        ...

    def read_claims(self, workflow_ids: Sequence[str]) -> dict[str, ClaimRow]:
        """The rows of many ids at once; ids without a row are absent."""
        ...

    def read_workflows(self, workflow_ids: Sequence[str]) -> dict[str, WorkflowInfo]: ...

    def grant_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        """Apply each plan like cas_grant, set-based; returns the ids granted. Rows that
        another writer has locked are skipped (reported as not granted), never waited on."""
        ...

    def insert_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        """Create each plan's row at epoch 1 with its holder where no row exists yet;
        returns the ids inserted."""
        ...
