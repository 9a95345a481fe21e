"""Deliberately broken variants of the protocol, each of which the checker must catch.

Each is a context manager that patches one class of the real protocol for as long as it
is open, and puts it back after. Only the checker's tests and command open them; nothing
in ``claims`` imports this module (a test holds it so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from claims.protocol.held_claims import HeldClaims
from claims.protocol.reclaim_batch import SetBasedReclaim
from claims.protocol.records import ClaimEventRecord, GrantPlan, Holder
from claims.protocol.testing import MemoryClaimStore


@contextmanager
def _patched(owner: type, name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    original = owner.__dict__[name]
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _grant_ignoring_epoch(
    self: MemoryClaimStore,
    workflow_id: str,
    *,
    expected_epoch: int,
    expected_holder: Holder | None,
    holder: Holder | None,
    event: ClaimEventRecord | None,
) -> bool:
    """A takeover's compare-and-swap without the epoch: only who the holder is."""
    with self._lock:
        row = self._rows.get(workflow_id)
        if row is None:
            return False
        named = None if row.holder is None else row.holder.engine_id
        expected = None if expected_holder is None else expected_holder.engine_id
        if named != expected or self.holder_session_open(expected_holder):
            return False
        row.epoch, row.holder = expected_epoch + 1, holder
        self._append(event)
        return True


def _grant_trusting_lost_answers(
    self: HeldClaims,
    grant: Callable[[Sequence[GrantPlan]], set[str]],
    plans: list[GrantPlan],
    sent_monotonic_ms: int,
) -> set[str]:
    """A grant whose answer was lost taken as granted, instead of settled by a read."""
    try:
        return grant(plans) if plans else set()
    except Exception:
        return {plan.workflow_id for plan in plans}


def _acquire_counting_first(
    self: SetBasedReclaim, no_claim: list[str], granted: dict[str, int], settled: Any
) -> None:
    """Acquisitions counted when attempted, before the outcome is known."""
    infos = self.store.read_workflows(no_claim)
    running = [wf for wf in no_claim if getattr(infos.get(wf), "status", None) == "running"]
    for wf in no_claim:
        if wf not in running:
            settled[wf] = "not-eligible"
    for _ in running:
        self._record("acquired")
    for wf, result in self.registry.acquire_many(running).items():
        if result.status == "acquired":
            assert result.epoch is not None
            granted[wf] = result.epoch


VARIANTS: dict[str, Callable[[], Any]] = {
    "takeover-without-epoch": lambda: _patched(
        MemoryClaimStore, "cas_grant", _grant_ignoring_epoch
    ),
    "trust-lost-answer": lambda: _patched(
        HeldClaims, "_grant_planned", _grant_trusting_lost_answers
    ),
    "count-before-outcome": lambda: _patched(
        SetBasedReclaim, "_batch_acquire", _acquire_counting_first
    ),
}
