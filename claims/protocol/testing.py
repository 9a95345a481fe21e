"""An in-memory claim store and a fake clock, for tests and for embedding without a database."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from .discovery import scan_is_paced
from .errors import EngineDeposedError
from .fake_clock import FakeClock
from .memory_events import MemoryEventLog
from .memory_sessions import MemorySessionRows
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
from .sessions import SessionRow

__all__ = ["FakeClock", "MemoryClaimStore"]

T = TypeVar("T")


@dataclass
class _Row:
    epoch: int
    holder: Holder | None


class MemoryClaimStore(MemorySessionRows, MemoryEventLog):
    """The same contract as the ORM store, with one lock standing in for transactions."""

    def __init__(self) -> None:
        # Re-entrant so a fenced write's function may use the store itself.
        self._lock = threading.RLock()
        self._rows: dict[str, _Row] = {}
        self._events: list[ClaimEventRecord] = []
        self._mode: tuple[str, int | None] | None = None
        self._sessions: dict[str, SessionRow] = {}
        self._workflows: dict[str, WorkflowInfo] = {}
        self._indexed: dict[str, str] = {}  # workflow id -> status in the visibility index
        self._cursors: dict[str, tuple[str | None, int, int]] = {}  # last id, wraps, scanned
        self._cursor_moved_at: dict[str, int] = {}
        self.pending_redrives: dict[tuple[str, str], tuple[int, int, str]] = {}

    # -- reads -----------------------------------------------------------------

    def read_claim(self, workflow_id: str) -> ClaimRow | None:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                return None
            return ClaimRow(workflow_id, row.epoch, row.holder, self.session_of(row.holder))

    def rows(self) -> dict[str, ClaimRow]:
        with self._lock:
            return {wf: row for wf in self._rows if (row := self.read_claim(wf)) is not None}

    # -- compare-and-swap ------------------------------------------------------

    def cas_insert(
        self, workflow_id: str, *, holder: Holder | None, event: ClaimEventRecord | None
    ) -> bool:
        with self._lock:
            if workflow_id in self._rows:
                return False
            self._rows[workflow_id] = _Row(1, holder)
            self._append(event)
            return True

    def cas_grant(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        expected_holder: Holder | None,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.epoch != expected_epoch or row.holder != expected_holder:
                return False
            if self.holder_session_open(expected_holder):
                return False
            row.epoch, row.holder = expected_epoch + 1, holder
            self._append(event)
            return True

    def cas_rotate(
        self,
        workflow_id: str,
        *,
        expected_epoch: int,
        holder: Holder | None,
        event: ClaimEventRecord | None,
    ) -> bool:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.epoch != expected_epoch:
                return False
            row.epoch, row.holder = expected_epoch + 1, holder
            self._append(event)
            return True

    def cas_renew(self, workflow_id: str, *, held: Holder, expires_at_ms: int) -> bool:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.epoch != held.epoch or row.holder != held:
                return False
            row.holder = replace(held, expires_at_ms=expires_at_ms)
            return True

    def cas_release(
        self, workflow_id: str, *, held: Holder, event: ClaimEventRecord | None
    ) -> bool:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.epoch != held.epoch or row.holder != held:
                return False
            row.holder = None
            self._append(event)
            return True

    def fenced_write(self, workflow_id: str, epoch: int, fn: Callable[[], T]) -> T:
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.epoch != epoch:
                raise EngineDeposedError(workflow_id)
            return fn()

    # -- passes --------------------------------------------------------------------

    def renew_many(self, held: Sequence[tuple[str, Holder]], *, expires_at_ms: int) -> set[str]:
        with self._lock:
            return {
                workflow_id
                for workflow_id, holder in held
                if self.cas_renew(workflow_id, held=holder, expires_at_ms=expires_at_ms)
            }

    def read_workflow(self, workflow_id: str) -> WorkflowInfo | None:
        with self._lock:
            return self._workflows.get(workflow_id)

    def list_held_by(self, *, engine_id: str) -> list[str]:
        with self._lock:
            rows = self.rows()
        return sorted(
            wf
            for wf, row in rows.items()
            if row.holder is not None and row.holder.engine_id == engine_id
        )

    def list_granted_to(self, *, engine_id: str, claimed_since_ms: int) -> list[str]:
        with self._lock:
            rows = self.rows()
        return sorted(
            wf
            for wf, row in rows.items()
            if row.holder is not None
            and row.holder.engine_id == engine_id
            and row.holder.claimed_at_ms is not None
            and row.holder.claimed_at_ms >= claimed_since_ms
        )

    def list_stale_holders(self, *, expired_before_ms: int) -> list[str]:
        with self._lock:
            rows = self.rows()
        stale = []
        for workflow_id, row in sorted(rows.items()):
            if row.holder is None:
                continue
            expires = row.expires_at_ms()
            closed = row.session is not None and row.session.closed_at_ms is not None
            if not row.holder_is_valid() or closed or (expires or 0) < expired_before_ms:
                stale.append(workflow_id)
        return stale

    def find_stale_holders(
        self,
        *,
        expired_before_ms: int,
        sweep_above: int | None,
        listing_engine: str = "",
        pairs_fresh_within_ms: int | None = None,
    ) -> StaleHolders:
        """Every stale holder listed: this store keeps no session index to sweep by."""
        return StaleHolders(self.list_stale_holders(expired_before_ms=expired_before_ms), {})

    def take_over_session_claims(
        self,
        pair: SessionPair,
        takeover: SessionTakeover,
        *,
        limit: int,
        workflow_types: Sequence[str] | None,
        skip: Sequence[str],
    ) -> dict[str, tuple[int, str]]:
        """Nothing: ``find_stale_holders`` never names a session to sweep."""
        return {}

    def list_unheld_running_indexed(self) -> list[str]:
        with self._lock:
            return [
                workflow_id
                for workflow_id, status in sorted(self._indexed.items())
                if status == "running" and self._unheld(workflow_id)
            ]

    def scan_unheld_running(
        self, *, cursor_name: str, limit: int, scanned_by: str, now_ms: int, paced_ms: int = 0
    ) -> ScanPage:
        with self._lock:
            moved_at = self._cursor_moved_at.get(cursor_name)
            if moved_at is not None and scan_is_paced(moved_at, now_ms, paced_ms):
                return ScanPage([], 0, False)
            self._cursor_moved_at[cursor_name] = now_ms
            last, wraps, scanned_total = self._cursors.get(cursor_name, (None, 0, 0))
            page = [wf for wf in sorted(self._workflows) if last is None or wf > last][:limit]
            wrapped = len(page) < limit
            self._cursors[cursor_name] = (
                None if wrapped else page[-1],
                wraps + wrapped,
                scanned_total + len(page),
            )
            candidates = [
                wf for wf in page if self._workflows[wf].status == "running" and self._unheld(wf)
            ]
            return ScanPage(candidates, len(page), wrapped)

    def cursor(self, cursor_name: str = "default") -> tuple[str | None, int, int]:
        with self._lock:
            return self._cursors.get(cursor_name, (None, 0, 0))

    def save_pending_redrive(
        self, *, engine_id: str, workflow_id: str, epoch: int, error: str, now_ms: int
    ) -> None:
        with self._lock:
            previous = self.pending_redrives.get((engine_id, workflow_id))
            attempts = 1 if previous is None else previous[1] + 1
            self.pending_redrives[(engine_id, workflow_id)] = (epoch, attempts, error)

    def drop_pending_redrive(self, *, engine_id: str, workflow_id: str) -> None:
        with self._lock:
            self.pending_redrives.pop((engine_id, workflow_id), None)

    def read_claims(self, workflow_ids: Sequence[str]) -> dict[str, ClaimRow]:
        with self._lock:
            rows = {wf: self.read_claim(wf) for wf in workflow_ids}
        return {wf: row for wf, row in rows.items() if row is not None}

    def read_workflows(self, workflow_ids: Sequence[str]) -> dict[str, WorkflowInfo]:
        with self._lock:
            return {wf: self._workflows[wf] for wf in workflow_ids if wf in self._workflows}

    def grant_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        with self._lock:
            return {
                plan.workflow_id
                for plan in plans
                if self.cas_grant(
                    plan.workflow_id,
                    expected_epoch=plan.expected_epoch,
                    expected_holder=plan.expected_holder,
                    holder=plan.holder,
                    event=plan.event,
                )
            }

    def insert_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        with self._lock:
            return {
                plan.workflow_id
                for plan in plans
                if self.cas_insert(plan.workflow_id, holder=plan.holder, event=plan.event)
            }

    def close_thread_resources(self) -> None:
        """Nothing is opened per thread in memory."""

    def _unheld(self, workflow_id: str) -> bool:
        row = self._rows.get(workflow_id)
        return row is None or row.holder is None

    # -- ownership mode --------------------------------------------------------

    def read_ownership_mode(self) -> tuple[str, int | None] | None:
        with self._lock:
            return self._mode

    def insert_ownership_mode(self, mode: str, established_at_ms: int) -> bool:
        with self._lock:
            if self._mode is not None:
                return False
            self._mode = (mode, established_at_ms)
            return True

    # -- test arrangement ------------------------------------------------------

    def put_row(self, workflow_id: str, *, epoch: int, holder: Holder | None) -> None:
        """Write a row as-is (garbage holders included), bypassing every condition."""
        with self._lock:
            self._rows[workflow_id] = _Row(epoch, holder)

    def put_workflow(
        self,
        workflow_id: str,
        *,
        status: str = "running",
        workflow_type: str = "demo",
        indexed: bool = True,
    ) -> None:
        """Record a workflow (and, unless ``indexed`` is False, its visibility entry)."""
        with self._lock:
            self._workflows[workflow_id] = WorkflowInfo(workflow_id, status, workflow_type)
            if indexed:
                self._indexed[workflow_id] = status
            else:
                self._indexed.pop(workflow_id, None)
