"""The two recurring passes an engine runs on every tick: renew what it holds, reclaim the rest."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from .fleet_share import FleetShare
from .liveness import RenewPassResult
from .metrics import ClaimMetrics
from .reclaim import ReclaimTarget
from .records import SessionPair
from .registry import ClaimRegistry

logger = logging.getLogger("weftboard.claims")

RECLAIM_POOL_SIZE = 16


class Mapper(Protocol):
    """Anything with Executor.map's shape: runs fn over items, results in input order."""

    def map(self, fn: Callable[[str], str], items: list[str], /) -> Iterable[str]: ...


@dataclass(frozen=True)
class ReclaimPassResult:
    # "refused": candidates were found, and ``may_attempt`` said no before any attempt.
    status: Literal["completed", "discovery-failed", "refused"]
    outcomes: list[tuple[str, str]] = field(default_factory=list)
    reclaimed_count: int = 0
    deferred_count: int = 0  # candidates left for the next pass when the budget ran out
    discovery_ms: int = 0  # how long discovery took, of the pass's duration


def run_renew_pass(registry: ClaimRegistry, metrics: ClaimMetrics | None = None) -> RenewPassResult:
    """Keep every held claim alive, the way the registry's liveness strategy does:
    per claim, set-based (``lost`` and store errors both count as renewal failures), or
    the one session renewal, whose result carries counts only."""
    return registry.liveness.renew_pass(metrics)


def run_reclaim_pass(
    target: ReclaimTarget,
    *,
    executor: Mapper | None = None,
    attempting: Callable[[], AbstractContextManager[object]] = nullcontext,
    catch_up: bool = False,
    share: FleetShare | None = None,
    may_attempt: Callable[[], bool] = lambda: True,
) -> ReclaimPassResult:
    """Discover candidates, then attempt them a chunk at a time (RECLAIM_POOL_SIZE threads
    for those the set-based batch leaves); one failure never stops the rest. Once the
    target's budget is spent no new chunk of the shared window starts: the rest is
    deferred to the next pass.

    Pass a long-lived ``executor`` when its threads hold resources worth keeping,
    such as database connections. ``attempting`` is entered around the attempts when
    there are any (the engine holds its new drives back meanwhile). A ``catch_up`` pass
    runs no discovery: it attempts what the last pass left (``ReclaimTarget.carry``).
    ``share``: beat's reads for the fleet, which stand in for the pass's own where they
    cover them (claims/protocol/fleet_share.py). ``may_attempt`` is asked once, only when
    there is something to attempt, before the first attempt (the engine confirms it is
    still alive there: a pass with nothing to take sends no statement for it).
    """
    if catch_up:
        carried = target.take_carried()
        sessions = target.take_carried_sessions()
        if (carried or sessions) and not may_attempt():
            return ReclaimPassResult("refused")
        return _attempt_all(target, carried, 0, sessions, executor, attempting)
    began_ms = target.registry.monotonic_ms()
    try:
        # Under a session the renew pass no longer shows which claims others moved.
        target.registry.forget_moved_claims(share)
    except Exception:
        logger.exception("could not read the claims moved since the last pass")
    try:
        # The call without a share keeps the shape every caller and test knows.
        candidates = target.list_candidates() if share is None else target.list_candidates(share)
    except Exception:
        logger.exception("reclaim candidate discovery failed")
        return ReclaimPassResult("discovery-failed")
    discovery_ms = target.registry.monotonic_ms() - began_ms
    discovery = target.last_discovery
    if (candidates or discovery.swept) and not may_attempt():
        target.carry([], {})
        return ReclaimPassResult("refused", discovery_ms=discovery_ms)
    result = _attempt_all(
        target,
        candidates,
        discovery.must_attempt,
        discovery.swept,
        executor,
        attempting,
        started_ms=began_ms,
    )
    return replace(result, discovery_ms=discovery_ms)


def _attempt_all(
    target: ReclaimTarget,
    candidates: list[str],
    must_attempt: int,
    sessions: dict[SessionPair, int],
    executor: Mapper | None,
    attempting: Callable[[], AbstractContextManager[object]],
    *,
    started_ms: int | None = None,
) -> ReclaimPassResult:
    """The candidates a chunk at a time until the budget, counted from ``started_ms`` (the
    pass's start, its discovery included), is spent; what is left is carried to a
    catch-up pass. The first ``must_attempt`` come first, whatever the budget; then the
    dead ``sessions``, swept a chunk a statement; then the shared window. The first chunk
    after the must-attempt ones is taken whatever the budget: a discovery slower than the
    budget (a loaded machine, a mass failure's long reads) must not leave every pass
    taking nothing."""
    if started_ms is None:
        started_ms = target.registry.monotonic_ms()
    pass_ = _PassProgress(target, started_ms)
    with attempting() if candidates or sessions else nullcontext():
        for start in range(0, must_attempt, target.chunk_size):
            chunk = candidates[start : min(start + target.chunk_size, must_attempt)]
            pass_.outcomes += _attempt_chunk(target, chunk, executor)
        left = _sweep_all(target, sessions, pass_)
        deferred = 0
        window = candidates[must_attempt:]
        for start in range(0, len(window), target.chunk_size):
            if not pass_.may_start_chunk():
                deferred = len(window) - start
                break
            chunk = window[start : start + target.chunk_size]
            pass_.outcomes += _attempt_chunk(target, chunk, executor)
    target.carry(window[len(window) - deferred :] if deferred else [], left)
    reclaimed = sum(status == "reclaimed" for _, status in pass_.outcomes)
    deferred += sum(left.values())
    return ReclaimPassResult("completed", pass_.outcomes, reclaimed, deferred)


class _PassProgress:
    """A pass's outcomes so far, and whether its budget lets one more chunk start."""

    def __init__(self, target: ReclaimTarget, started_ms: int) -> None:
        self.target = target
        self.started_ms = started_ms
        self.outcomes: list[tuple[str, str]] = []
        self._chunks_started = 0

    def may_start_chunk(self) -> bool:
        target = self.target
        spent_ms = target.registry.monotonic_ms() - self.started_ms
        if self._chunks_started and spent_ms >= target.pass_budget_ms:
            return False
        self._chunks_started += 1
        return True


def _sweep_all(
    target: ReclaimTarget, sessions: dict[SessionPair, int], pass_: _PassProgress
) -> dict[SessionPair, int]:
    """Each dead session a chunk a statement, until the session has no more for this
    engine or the budget is spent; returns the sessions left, with what each still names
    as far as this pass knows (its count less what was taken)."""
    left = dict(sessions)
    for pair in sessions:
        while True:
            if not pass_.may_start_chunk():
                return left
            try:
                settled, more = target.sweep_session(pair, target.chunk_size)
            except Exception:
                logger.exception("takeover of the claims of session %s failed", pair)
                settled, more = {}, False
            for workflow_id, status in settled.items():
                if isinstance(status, Exception):
                    logger.error("drive of workflow %s failed", workflow_id, exc_info=status)
                pass_.outcomes.append(
                    (workflow_id, "error" if isinstance(status, Exception) else status)
                )
            left[pair] = max(0, left[pair] - len(settled))
            if not more:
                del left[pair]
                break
    return left


def _attempt_chunk(
    target: ReclaimTarget, candidates: list[str], executor: Mapper | None
) -> list[tuple[str, str]]:
    """Expired holders are taken over set-based first; what that leaves goes one by one."""

    def attempt(workflow_id: str) -> str:
        try:
            return target.attempt(workflow_id)
        except Exception:
            logger.exception("reclaim attempt of workflow %s failed", workflow_id)
            return "error"

    def attempt_on_pool_thread(workflow_id: str) -> str:
        try:
            return attempt(workflow_id)
        finally:
            # These threads end with the chunk: give back what the store opened on them.
            target.store.close_thread_resources()

    try:
        settled = target.attempt_batch(candidates)
    except Exception:
        logger.exception("set-based takeover failed; attempting candidates one by one")
        settled = {}
    for workflow_id, status in settled.items():
        if isinstance(status, Exception):
            logger.error("drive of workflow %s failed", workflow_id, exc_info=status)
    rest = [workflow_id for workflow_id in candidates if workflow_id not in settled]
    if executor is not None:
        statuses = list(executor.map(attempt, rest))
    elif len(rest) <= 1:
        statuses = [attempt(workflow_id) for workflow_id in rest]
    else:
        with ThreadPoolExecutor(min(RECLAIM_POOL_SIZE, len(rest))) as pool:
            statuses = list(pool.map(attempt_on_pool_thread, rest))
    by_id: dict[str, str] = dict(zip(rest, statuses, strict=True))
    for workflow_id, status in settled.items():
        by_id[workflow_id] = "error" if isinstance(status, Exception) else status
    return [(workflow_id, by_id[workflow_id]) for workflow_id in candidates]
