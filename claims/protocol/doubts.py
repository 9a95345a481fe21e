"""Claim statements whose outcome this engine does not know.

A statement that raised may still have committed: the server applied it and the
answer was lost with the connection. Until the row is read again the registry must
not guess. It remembers, per workflow, what each such statement meant to write; a
later read settles it: the row holds one of those values (it committed, the claim is
what was written), or it does not (it did not commit, or someone else wrote since).
A doubt is kept until a statement on that id succeeds, so a read that raced a
statement still running on the server cannot settle it too early.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from .records import ClaimRow, EventKind, Holder

# A few statements in doubt per id at most: each later one supersedes the earlier.
MAX_DOUBTS_PER_ID = 4

Verdict = Literal["written", "released", "not-written"]


@dataclass(frozen=True, slots=True)
class Doubt:
    """What a statement that raised meant the row to become."""

    epoch: int
    holder: Holder | None  # None: a release (the epoch kept, no holder)
    sent_monotonic_ms: int  # the local clock before it was sent, for the deadline
    kind: EventKind | None = None  # a grant's event kind ("acquired", "takeover"), else None


class Doubts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, list[Doubt]] = {}

    def add(self, workflow_id: str, doubt: Doubt) -> None:
        with self._lock:
            kept = self._by_id.setdefault(workflow_id, [])
            kept.append(doubt)
            del kept[:-MAX_DOUBTS_PER_ID]

    def clear(self, workflow_id: str) -> None:
        with self._lock:
            self._by_id.pop(workflow_id, None)

    def ids(self, *, sent_after_ms: int | None = None) -> list[str]:
        """The ids in doubt; with ``sent_after_ms``, first forget doubts sent before it
        (whatever they did has expired since, and the ordinary paths take over)."""
        with self._lock:
            if sent_after_ms is not None:
                for workflow_id in list(self._by_id):
                    kept = [
                        d for d in self._by_id[workflow_id] if d.sent_monotonic_ms >= sent_after_ms
                    ]
                    if kept:
                        self._by_id[workflow_id] = kept
                    else:
                        del self._by_id[workflow_id]
            return list(self._by_id)

    def epochs(self, workflow_id: str) -> list[int]:
        with self._lock:
            return [doubt.epoch for doubt in self._by_id.get(workflow_id, ())]

    def has(self, workflow_id: str) -> bool:
        with self._lock:
            return workflow_id in self._by_id

    def judge(self, workflow_id: str, row: ClaimRow | None) -> tuple[Verdict, Doubt | None]:
        """Which doubted statement, if any, the row shows committed."""
        with self._lock:
            doubts = list(self._by_id.get(workflow_id, ()))
        if row is None:
            return "not-written", None
        for doubt in reversed(doubts):
            if row.epoch != doubt.epoch:
                continue
            if doubt.holder is None and row.holder is None:
                return "released", doubt
            if doubt.holder is not None and row.holder == doubt.holder:
                return "written", doubt
        return "not-written", None
