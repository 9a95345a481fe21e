"""Breadth-first over every schedule up to a depth, equal states explored once.

A state is reached by replaying its schedule from the last state with nothing in flight
(whose world is kept as a copy: a paused coroutine cannot be copied, a world can). The
first violation found is at the least depth, so its schedule is a shortest counterexample.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .canon import fingerprint
from .invariants import check_step, liveness
from .steps import Run, Step
from .world import Config, World


@dataclass
class Counterexample:
    violations: list[str]
    schedule: list[Step]
    trace: list[str]

    def render(self) -> str:
        lines = ["violation: " + v for v in self.violations]
        lines += [
            f"{n:3d}. {' '.join(step)}: {what}"
            for n, (step, what) in enumerate(zip(self.schedule, self.trace, strict=True), start=1)
        ]
        return "\n".join(lines)


@dataclass
class Report:
    config: Config
    depth: int
    states: int = 0
    schedules: int = 0  # steps taken, duplicates included
    depth_reached: int = 0
    seconds: float = 0.0
    counterexample: Counterexample | None = None
    steps_seen: set[str] = field(default_factory=set)

    def summary(self) -> str:
        verdict = "VIOLATION" if self.counterexample else "ok"
        return (
            f"{self.config.mode}, {len(self.config.engines)} engines x "
            f"{len(self.config.workflows)} workflows, depth {self.depth}: {verdict}; "
            f"{self.states:,} states, {self.schedules:,} steps taken, depth reached "
            f"{self.depth_reached}, {self.seconds:.1f} s"
        )


@dataclass
class _Node:
    base: World  # a copy of the world at the last state with nothing in flight
    suffix: tuple[Step, ...]  # the steps since it
    schedule: tuple[Step, ...]  # every step from the start


def _replay(node: _Node) -> Run:
    run = Run(copy.deepcopy(node.base))
    for step in node.suffix:
        run.apply(step)
        check_step(run)  # keeps the highest epochs seen, as the first time through
    return run


def _state_of(run: Run) -> str:
    flight = tuple(
        (actor, a.name, tuple(a.calls), None if a.pending is None else a.pending.name)
        for actor, a in sorted(run.activities.items())
    )
    return fingerprint((run.world, flight))


def explore(config: Config, depth: int, *, check_liveness: bool = True) -> Report:
    with _quiet():
        return _explore(config, depth, check_liveness=check_liveness)


@contextmanager
def _quiet() -> Iterator[None]:
    """The protocol logs every failure it meets; the checker makes thousands on purpose."""
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def _explore(config: Config, depth: int, *, check_liveness: bool) -> Report:
    started = time.monotonic()
    report = Report(config, depth)
    root = World(config)
    seen = {_state_of(Run(root))}
    report.states = 1
    frontier = [_Node(copy.deepcopy(root), (), ())]
    for level in range(1, depth + 1):
        next_frontier: list[_Node] = []
        for node in frontier:
            for step in _replay(node).enabled():
                run = _replay(node)
                run.apply(step)
                report.schedules += 1
                if run.world.invalid:
                    continue
                report.steps_seen.add(step[0])
                violations = check_step(run)
                schedule = (*node.schedule, step)
                state = None
                if not violations:
                    state = _state_of(run)
                    if state in seen:
                        continue
                    if run.quiescent() and check_liveness:
                        violations = liveness(run)
                if violations:
                    report.counterexample = _counterexample(config, schedule, violations)
                    report.depth_reached = level
                    report.seconds = time.monotonic() - started
                    return report
                assert state is not None
                seen.add(state)
                report.states += 1
                report.depth_reached = level
                if run.quiescent():
                    child = _Node(copy.deepcopy(run.world), (), schedule)
                else:
                    child = _Node(node.base, (*node.suffix, step), schedule)
                next_frontier.append(child)
        frontier = next_frontier
        if not frontier:
            break
    report.seconds = time.monotonic() - started
    return report


def _counterexample(
    config: Config, schedule: tuple[Step, ...], violations: list[str]
) -> Counterexample:
    """The schedule again from the start, each step's outcome written down."""
    run = Run(World(config))
    trace = [run.apply(step) for step in schedule]
    return Counterexample(violations, list(schedule), trace)


def replay(config: Config, schedule: list[Step]) -> Iterator[tuple[Step, str, list[str]]]:
    """A saved schedule step by step: each step, what happened, what it violated."""
    run = Run(World(config))
    for step in schedule:
        what = run.apply(step)
        found = check_step(run)
        if not found and run.quiescent():
            found = liveness(run)
        yield step, what, found
