"""Read-only looks at the embedded database of the fleet under soak.

The soak stays outside the product: it opens the SQLite file read-only, as an operator's
own script would, and never imports Django.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EngineRow:
    engine_id: str
    pid: int
    status: str
    hostname: str


@dataclass(frozen=True)
class WorkflowRow:
    workflow_id: str
    status: str
    created_at_ms: int
    updated_at_ms: int
    wake_at_ms: int | None
    holder_engine_id: str | None


class FleetDatabase:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        # The engines write all the time: wait for a lock rather than fail the look.
        with closing(
            sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        ) as connection:
            return connection.execute(sql, params).fetchall()

    def engines(self) -> list[EngineRow]:
        return [
            EngineRow(str(e), int(p), str(s), str(h))  # type: ignore[call-overload]
            for e, p, s, h in self._query(
                "SELECT engine_id, pid, status, hostname FROM claims_engine WHERE pid <> 0"
            )
        ]

    def engine_by_pid(self, pid: int) -> EngineRow | None:
        rows = [engine for engine in self.engines() if engine.pid == pid]
        active = [engine for engine in rows if engine.status == "active"]
        candidates = active or rows
        return candidates[-1] if candidates else None

    def claims_held_by(self, engine_id: str) -> dict[str, int]:
        """workflow id -> epoch of every claim this engine holds: in the engine-lease mode,
        those naming its session while the session is open (closing it gives them all up)."""
        return {
            str(w): int(e)  # type: ignore[call-overload]
            for w, e in self._query(
                "SELECT c.workflow_id, c.epoch FROM claims_workflowclaim c"
                " LEFT JOIN claims_enginesession s ON s.engine_id = c.holder_engine_id"
                " AND s.epoch = c.holder_session_epoch"
                " WHERE c.holder_engine_id = ? AND (c.holder_session_epoch IS NULL"
                " OR (s.engine_id IS NOT NULL AND s.closed_at_ms IS NULL))",
                (engine_id,),
            )
        }

    def _query_ids(self, sql: str, workflow_ids: list[str]) -> list[tuple[object, ...]]:
        """``sql`` with ``{ids}`` for the placeholders, run over the ids in chunks (SQLite
        limits the parameters of one statement)."""
        rows: list[tuple[object, ...]] = []
        for start in range(0, len(workflow_ids), 500):
            chunk = workflow_ids[start : start + 500]
            rows += self._query(sql.format(ids=", ".join("?" * len(chunk))), tuple(chunk))
        return rows

    def epochs(self, workflow_ids: list[str]) -> dict[str, tuple[int, str | None]]:
        """workflow id -> (epoch, holder) now."""
        rows = self._query_ids(
            "SELECT workflow_id, epoch, holder_engine_id FROM claims_workflowclaim "
            "WHERE workflow_id IN ({ids})",
            workflow_ids,
        )
        return {
            str(w): (int(e), None if h is None else str(h))  # type: ignore[call-overload]
            for w, e, h in rows
        }

    def takeover_times(self, held: dict[str, int]) -> dict[str, int]:
        """workflow id -> when (fleet ms) the claim held at that epoch was taken over."""
        rows = self._query_ids(
            "SELECT workflow_id, epoch_before, at_ms FROM claims_claimevent "
            "WHERE kind = 'takeover' AND workflow_id IN ({ids})",
            list(held),
        )
        return {
            str(w): int(at)  # type: ignore[call-overload]
            for w, before, at in rows
            if before == held[str(w)]
        }

    def released_by(self, engine_id: str, held: dict[str, int]) -> set[str]:
        """The workflows of ``held`` that this engine released itself at the epoch it held
        them at. A dead engine writes nothing, so each such release came before its death."""
        rows = self._query_ids(
            "SELECT workflow_id, epoch_before, engine_id FROM claims_claimevent "
            "WHERE kind = 'released' AND workflow_id IN ({ids})",
            list(held),
        )
        return {str(w) for w, before, by in rows if by == engine_id and before == held[str(w)]}

    def workflows(self) -> list[WorkflowRow]:
        rows = []
        for w, status, created, updated, state, holder in self._query(
            "SELECT w.workflow_id, w.status, w.created_at_ms, w.updated_at_ms, w.state, "
            "c.holder_engine_id FROM claims_workflow w "
            "LEFT JOIN claims_workflowclaim c ON c.workflow_id = w.workflow_id"
        ):
            wake = None
            try:
                park = json.loads(str(state or "{}")).get("park")
                if isinstance(park, dict) and isinstance(park.get("wake_at_ms"), int):
                    wake = park["wake_at_ms"]
            except (ValueError, AttributeError):
                pass
            rows.append(
                WorkflowRow(
                    str(w),
                    str(status),
                    int(created),  # type: ignore[call-overload]
                    int(updated),  # type: ignore[call-overload]
                    wake,
                    None if holder is None else str(holder),
                )
            )
        return rows


def now_ms() -> int:
    """The fleet's time base is the database clock; for SQLite that is this machine's."""
    return time.time_ns() // 1_000_000
