"""The invariants, checked at every state a schedule reaches (docs/design.md §13).

1. One writer per epoch, and never an older epoch: ``World.record_write``, under the fence.
2. Epochs only grow: in every row, every session row, and every engine's belief.
3. No ghost holder survives a pass: when an engine's renew pass ends untouched by a fault,
   every claim it believes it holds is its own in the row, at the epoch it believes.
4. The counters are the outcomes: an engine's ``acquired`` and ``takeover`` attempts equal
   the grant events naming it since it started, lost answers included.
5. Liveness, at every state with nothing in flight: with no new fault and every live engine
   taking its passes, every running workflow is held by a live engine that can write
   under its fence within TTL + grace + one pass (``liveness``).
"""

from __future__ import annotations

import copy
import copyreg
import threading

from claims.protocol import ClaimRow, run_reclaim_pass, run_renew_pass

from .activities import Activity
from .steps import Run
from .world import World


def _install_lock_copying() -> None:
    # A copy of the world gets fresh locks: nothing is held at a state with nothing in flight.
    for lock_type, make in (
        (type(threading.Lock()), threading.Lock),
        (type(threading.RLock()), threading.RLock),
    ):
        copyreg.pickle(lock_type, lambda _lock, make=make: (make, ()))  # type: ignore[misc]


_install_lock_copying()


def check_step(run: Run) -> list[str]:
    world = run.world
    found = list(world.history.violations)
    found += _epochs_only_grow(world)
    for actor, activity in run.finished:
        engine = world.engines.get(actor)
        if engine is None or activity.name.split(" ")[0] == "crash":
            continue
        # The pass that learns of moves: each claim's renewal, or under a session the
        # moves' read at the start of the reclaim pass.
        learns = "renew" if world.config.mode == "workflow-lease" else "reclaim"
        if activity.name.startswith(learns) and not activity.faulted:
            found += _no_ghost(world, actor, activity)
        found += _counters(world, actor)
    return found


def _epochs_only_grow(world: World) -> list[str]:
    found = []
    history = world.history
    for wf, row in world.inner.rows().items():
        before = history.row_epochs.get(wf, 0)
        if row.epoch < before:
            found.append(f"the row of {wf} went back from epoch {before} to {row.epoch}")
        history.row_epochs[wf] = max(before, row.epoch)
    for engine_id in world.config.engines:
        session = world.inner.read_session(engine_id)
        if session is None:
            continue
        before = history.session_epochs.get(engine_id, 0)
        if session.epoch < before:
            found.append(f"the session of {engine_id} went back from {before} to {session.epoch}")
        history.session_epochs[engine_id] = max(before, session.epoch)
    for engine_id, engine in world.engines.items():
        if engine is None:
            continue
        for wf in engine.registry.held_workflow_ids():
            epoch = engine.registry.current_epoch(wf)
            if epoch is None:
                continue
            before = history.believed.get((engine_id, wf), 0)
            if epoch < before:
                found.append(f"{engine_id} believed it held {wf} at {epoch} after {before}")
            history.believed[(engine_id, wf)] = max(before, epoch)
    return found


def _no_ghost(world: World, engine_id: str, activity: Activity) -> list[str]:
    """No claim the engine believed it held when the pass began, at an epoch its row
    already did not give it then, is still believed at that epoch when the pass ends."""
    engine = world.engines[engine_id]
    assert engine is not None
    found = []
    for wf in engine.registry.held_workflow_ids():
        epoch = engine.registry.current_epoch(wf)
        if activity.believed_at_start.get(wf) != epoch:
            continue  # granted or settled during the pass: judged at the next one
        row: ClaimRow | None = activity.rows_at_start.get(wf)
        holder = None if row is None else row.holder
        if row is None or holder is None or holder.engine_id != engine_id or row.epoch != epoch:
            found.append(
                f"ghost holder: after its pass {engine_id} still believes it holds {wf} at "
                f"epoch {epoch}; the row when the pass began: {row}"
            )
    return found


def _counters(world: World, engine_id: str) -> list[str]:
    engine = world.engines[engine_id]
    assert engine is not None
    events = world.inner.events[engine.events_before :]
    attempts = engine.metrics.snapshot()["attempts"]
    found = []
    for kind in ("acquired", "takeover"):
        happened = sum(1 for e in events if e.kind == kind and e.engine_id == engine_id)
        if attempts[kind] != happened:
            found.append(
                f"counter: {engine_id} counted {attempts[kind]} {kind} attempt(s); "
                f"{happened} happened"
            )
    return found


def liveness(run: Run) -> list[str]:
    """From a state with nothing in flight: every live engine renews and reclaims each
    interval, nothing fails; each running workflow must be held, and writable by its
    holder, within TTL + grace + one pass (plus the largest skew)."""
    assert run.quiescent()
    world: World = copy.deepcopy(run.world)
    live = [engine for engine in world.engines.values() if engine is not None]
    if not live:
        return []
    config = world.config
    skew = max((abs(s) for s in config.skews_ms), default=0)
    bound_ms = config.ttl_ms + 2 * config.interval_ms + config.interval_ms + skew
    waited = 0
    while True:
        for engine in live:
            run_renew_pass(engine.registry, engine.metrics)
        for engine in live:
            run_reclaim_pass(engine.target)
        unheld = _not_driven(world)
        if not unheld:
            return []
        if waited >= bound_ms:
            return [
                f"liveness: {', '.join(unheld)} not held and driven {waited} ms after this "
                f"state with every live engine taking its passes (bound {bound_ms} ms)"
            ]
        world.clock.advance(config.interval_ms)
        waited += config.interval_ms


def _not_driven(world: World) -> list[str]:
    missing = []
    for wf in world.config.workflows:
        info = world.inner.read_workflow(wf)
        if info is None or info.status != "running":
            continue
        row = world.inner.read_claim(wf)
        holder = None if row is None else row.holder
        named = None if holder is None else holder.engine_id
        engine = None if named is None else world.engines.get(named)
        if engine is None or row is None or engine.registry.current_epoch(wf) != row.epoch:
            missing.append(wf)
            continue
        if not engine.registry.within_deadline(wf):
            missing.append(wf)
    return missing
