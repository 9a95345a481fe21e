"""The steps of a schedule: what each actor may do next, and doing it.

A step is a tuple of strings, so a schedule prints, saves and replays as it is:

- ``("renew", e, fault)``, ``("reclaim", e, fault)``: engine ``e`` starts a pass and makes
  its first store call; ``("write", e, wf, fault)``: it drives ``wf`` one step (a fenced
  write, if its deadline allows); ``("release", e, wf, fault)``; ``("adopt", e, wf, fault)``:
  it adopts a claim an operator granted it;
- ``("step", actor, fault)``: the actor's paused activity makes its pending store call and
  runs to the next one;
- ``("crash", e)``: the engine's memory and its activity are gone, its rows stay;
  ``("restart", e)``: a new incarnation of it;
- ``("force-release", wf, fault)``, ``("force-takeover", wf, e, fault)``: an operator;
- ``("tick",)``: the world's clock moves one renew interval; ``("lapse",)``: past a TTL
  and the grace at once (a pause of everyone, or of the engines not scheduled).

``fault`` is "-" (the call returns), "fail" (it raises and nothing is written) or "lost"
(it commits, then raises).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claims.protocol import StaleEpochError, rotate_claim, run_reclaim_pass, run_renew_pass

from .activities import Activity, Fault
from .world import START_MS, WRITES, Engine, World

Step = tuple[str, ...]
FAULTS: tuple[str, ...] = ("-", "fail", "lost")
OPERATOR = "operator"


class Run:
    """A world and the activities in flight in it (which a copy of the world never holds)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.activities: dict[str, Activity] = {}
        self.finished: list[tuple[str, Activity]] = []  # of the last step

    def quiescent(self) -> bool:
        return not self.activities

    # -- what may happen next --------------------------------------------------------

    def enabled(self) -> list[Step]:
        """Every step that may come next, within the bounds; a switch away from an
        activity in flight is a preemption, and at the bound only that activity goes on."""
        world = self.world
        steps = self._every_step()
        last = world.last_actor
        if last is None or last not in self.activities:
            return steps
        if world.preemptions < world.config.max_preemptions:
            return steps
        return [step for step in steps if _actor(step) == last]

    def _every_step(self) -> list[Step]:
        world, config = self.world, self.world.config
        faults = FAULTS if world.faults < config.max_faults else ("-",)
        steps: list[Step] = []
        for engine_id, engine in world.engines.items():
            if engine is None:
                steps.append(("restart", engine_id))
                continue
            if engine_id in self.activities:
                steps += [("step", engine_id, f) for f in self._faults_for(engine_id, faults)]
            else:
                for kind in ("renew", "reclaim"):
                    steps += [(kind, engine_id, f) for f in faults]
                for wf in engine.registry.held_workflow_ids():
                    steps += [("write", engine_id, wf, f) for f in faults]
                    steps += [("release", engine_id, wf, f) for f in faults]
                for wf in self._granted_not_cached(engine):
                    steps += [("adopt", engine_id, wf, f) for f in faults]
            if world.crashes < config.max_crashes:
                steps.append(("crash", engine_id))
        if config.operators:
            if OPERATOR in self.activities:
                steps += [("step", OPERATOR, f) for f in self._faults_for(OPERATOR, faults)]
            else:
                for wf in config.workflows:
                    row = world.inner.read_claim(wf)
                    if row is not None and row.holder is not None:
                        steps += [("force-release", wf, f) for f in faults]
                    for engine_id, engine in world.engines.items():
                        if engine is not None and self._may_be_granted(engine, wf):
                            steps += [("force-takeover", wf, engine_id, f) for f in faults]
        if world.ticks < config.max_ticks:
            steps.append(("tick",))
        if world.lapses < config.max_lapses:
            steps.append(("lapse",))
        return steps

    def _faults_for(self, actor: str, faults: tuple[str, ...]) -> tuple[str, ...]:
        pending = self.activities[actor].pending
        if pending is not None and pending.name not in WRITES:
            return tuple(f for f in faults if f != "lost")
        return faults

    def _granted_not_cached(self, engine: Engine) -> list[str]:
        found = []
        for wf in self.world.config.workflows:
            row = self.world.inner.read_claim(wf)
            holder = None if row is None else row.holder
            named = holder is not None and holder.engine_id == engine.engine_id
            if named and engine.registry.current_epoch(wf) is None:
                found.append(wf)
        return found

    def _may_be_granted(self, engine: Engine, workflow_id: str) -> bool:
        row = self.world.inner.read_claim(workflow_id)
        holder = None if row is None else row.holder
        return holder is None or holder.engine_id != engine.engine_id

    # -- doing it ----------------------------------------------------------------

    def apply(self, step: Step) -> str:
        """Take the step; returns what happened, for the trace."""
        world = self.world
        kind = step[0]
        self.finished = []
        actor = _actor(step)
        last = world.last_actor
        if last is not None and last in self.activities and actor != last:
            world.preemptions += 1
        world.last_actor = actor
        if kind == "tick":
            world.ticks += 1
            world.clock.advance(world.config.interval_ms)
            return f"clock at +{world.clock() - START_MS} ms"
        if kind == "lapse":
            world.lapses += 1
            timing = world.config.timing
            world.clock.advance(timing.ttl_ms + 2 * timing.renew_interval_ms + 1)
            return "clock past a TTL and the grace"
        if kind == "crash":
            return self._crash(step[1])
        if kind == "restart":
            engine_id = step[1]
            world.incarnations[engine_id] += 1
            world.engines[engine_id] = Engine(world, engine_id, world.incarnations[engine_id])
            return f"{engine_id} restarted (incarnation {world.incarnations[engine_id]})"
        fault = _fault(step[-1])
        if kind == "step":
            return self._resume(step[1], fault)
        actor, body = self._body(step)
        activity = Activity(" ".join(step[:-1]), body)
        activity.rows_at_start = world.inner.rows()
        engine = world.engines.get(actor)
        if engine is not None:
            registry = engine.registry
            activity.believed_at_start = {
                wf: registry.current_epoch(wf) for wf in registry.held_workflow_ids()
            }
        self.activities[actor] = activity
        self._switch(activity, activity.start)
        if activity.done:
            if fault is not None:
                world.invalid = True  # no store call to meet the fault: a duplicate
            return self._finish(actor, activity)
        return self._resume(actor, fault)

    def _body(self, step: Step) -> tuple[str, Callable[[], object]]:
        world = self.world
        kind = step[0]
        if kind in ("force-release", "force-takeover"):
            wf = step[1]
            engine_id = step[2] if kind == "force-takeover" else None
            return OPERATOR, lambda: _operator_rotate(world, wf, engine_id)
        engine = world.engines[step[1]]
        assert engine is not None
        registry = engine.registry
        if kind == "renew":
            return engine.engine_id, lambda: _summary(run_renew_pass(registry, engine.metrics))
        if kind == "reclaim":
            return engine.engine_id, lambda: _summary(run_reclaim_pass(engine.target))
        wf = step[2]
        if kind == "write":
            return engine.engine_id, lambda: _drive(world, engine, wf)
        if kind == "release":
            return engine.engine_id, lambda: registry.release(wf).status
        if kind == "adopt":

            def adopt() -> str:
                row = world.store.read_claim(wf)
                return "no row" if row is None else registry.adopt(wf, row.epoch).status

            return engine.engine_id, adopt
        raise ValueError(f"unknown step {step!r}")

    def _resume(self, actor: str, fault: Fault) -> str:
        activity = self.activities[actor]
        pending = activity.pending
        assert pending is not None
        if fault is not None:
            self.world.faults += 1
        self._switch(activity, lambda: activity.resume(fault))
        made = pending.name + ("" if fault is None else f" ({fault})")
        if activity.done:
            return f"{made}; {self._finish(actor, activity)}"
        assert activity.pending is not None
        return f"{made}; next {activity.pending.name}"

    def _switch(self, activity: Activity, go: Callable[[], None]) -> None:
        self.world.running = activity
        try:
            go()
        finally:
            self.world.running = None

    def _finish(self, actor: str, activity: Activity) -> str:
        del self.activities[actor]
        self.finished.append((actor, activity))
        return f"{activity.name} done: {activity.outcome}"

    def _crash(self, engine_id: str) -> str:
        world = self.world
        world.crashes += 1
        activity = self.activities.pop(engine_id, None)
        if activity is not None:
            self._switch(activity, activity.abandon)
        world.engines[engine_id] = None
        return f"{engine_id} crashed" + ("" if activity is None else f" in {activity.name}")


def _actor(step: Step) -> str:
    """Who takes the step: an engine, the operator, or the clock."""
    kind = step[0]
    if kind in ("tick", "lapse"):
        return "clock"
    if kind in ("force-release", "force-takeover"):
        return OPERATOR
    return step[1]


def _fault(text: str) -> Fault:
    return None if text == "-" else text


def _summary(result: Any) -> str:
    status = getattr(result, "status", None)
    reclaimed = getattr(result, "reclaimed_count", None)
    if reclaimed is not None:
        return f"{status}, reclaimed {reclaimed}"
    return str(status if status is not None else result)


def _drive(world: World, engine: Engine, workflow_id: str) -> str:
    """A drive's step, as the runtime takes it: only within the claim's deadline, and only
    under the fence."""
    registry = engine.registry
    if not registry.within_deadline(workflow_id):
        return "past its deadline: not driven"
    return registry.fenced_write(
        workflow_id, lambda: world.record_write(engine.engine_id, workflow_id)
    )


def _operator_rotate(world: World, workflow_id: str, engine_id: str | None) -> str:
    """A forced release, or a forced takeover to ``engine_id`` under its open session
    (engine-lease) or for a TTL."""
    session_epoch = None
    if engine_id is not None and world.config.mode == "engine-lease":
        session = world.store.read_session(engine_id)
        if session is None or session.closed_at_ms is not None:
            return "no open session to grant to"
        session_epoch = session.epoch
    try:
        epoch = rotate_claim(
            world.store,
            workflow_id,
            clock=world.operator_clock,
            kind="forced_release" if engine_id is None else "forced_takeover",
            new_holder_engine_id=engine_id,
            ttl_ms=world.config.ttl_ms if engine_id and session_epoch is None else 0,
            new_holder_session_epoch=session_epoch,
            actor="operator",
        )
    except StaleEpochError:
        return "stale epoch"
    return f"epoch {epoch}"
