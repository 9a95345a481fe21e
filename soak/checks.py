"""The soak's verdicts, each a pure function of what the run recorded (tests give them
broken records, to show each can fail)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from soak.fleet_db import WorkflowRow

# supervisord's own lines about a program that ended without being asked to.
EXITED_RE = re.compile(r" (?:WARN|INFO) exited: (\S+) \((.*)\)")
GAVE_UP_RE = re.compile(r" gave up: (\S+) ")
ALARM_RE = re.compile(r"Traceback|CRITICAL")


@dataclass
class Check:
    name: str
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class Kill:
    at_s: float  # seconds since the fleet came up
    program: str  # e.g. engine2 (supervisor's process name)
    pid: int
    engine_id: str | None
    held: dict[str, int]  # workflow id -> epoch the dead engine held it at
    at_ms: int = 0  # the moment of the kill on the fleet's clock (SQLite: this machine's)
    takeovers_before: float = 0.0
    replaced_after_s: float | None = None
    new_engine_id: str | None = None
    cleared_after_s: float | None = None  # every claim of the dead engine now held by another
    not_advanced: list[str] = field(default_factory=list)
    takeovers_after: float = 0.0
    shown_on_overview: bool = False


def exits_check(log: str, kills: list[Kill]) -> Check:
    """Only the engines the soak killed exited, each by SIGKILL; nothing was given up."""
    check = Check("exits")
    expected: dict[str, int] = {}
    for kill in kills:
        expected[kill.program] = expected.get(kill.program, 0) + 1
    seen: dict[str, int] = {}
    for line in log.splitlines():
        if found := GAVE_UP_RE.search(line):
            check.failures.append(f"supervisord gave up on {found.group(1)}: {line.strip()}")
        found = EXITED_RE.search(line)
        if not found:
            continue
        program, how = found.group(1), found.group(2)
        seen[program] = seen.get(program, 0) + 1
        if "SIGKILL" not in how:
            check.failures.append(f"{program} exited on its own: {line.strip()}")
    for program in sorted(set(seen) | set(expected)):
        if seen.get(program, 0) != expected.get(program, 0):
            check.failures.append(
                f"{program}: {seen.get(program, 0)} exits, {expected.get(program, 0)} kills"
            )
    check.notes.append(f"{sum(seen.values())} exits, all of them the soak's kills")
    return check


def replacement_check(kills: list[Kill], *, within_s: float) -> Check:
    """Every killed engine came back as a new engine (a fresh id) in time."""
    check = Check("replacement")
    for kill in kills:
        if kill.replaced_after_s is None or kill.new_engine_id is None:
            check.failures.append(f"{kill.program} (pid {kill.pid}) was not replaced")
        elif kill.new_engine_id == kill.engine_id:
            check.failures.append(f"{kill.program} came back with the dead engine's id")
        elif kill.replaced_after_s > within_s:
            check.failures.append(
                f"{kill.program} was replaced after {kill.replaced_after_s:.1f}s (> {within_s}s)"
            )
        else:
            check.notes.append(f"{kill.program} replaced after {kill.replaced_after_s:.1f}s")
    return check


def takeover_check(kills: list[Kill], *, bound_s: float) -> Check:
    """Another engine holds each dead engine's claims at a higher epoch within the bound,
    the takeover counter moved, and the overview showed the dead engine (an alert names it)."""
    check = Check("takeover")
    for kill in kills:
        label = f"{kill.program} ({(kill.engine_id or '?')[:8]}, {len(kill.held)} claims)"
        if not kill.held:
            check.notes.append(f"{label}: nothing to take over")
        elif kill.cleared_after_s is None:
            check.failures.append(f"{label}: its claims were never all taken over")
        elif kill.cleared_after_s > bound_s:
            check.failures.append(
                f"{label}: taken over after {kill.cleared_after_s:.1f}s (bound {bound_s:.0f}s)"
            )
        else:
            check.notes.append(f"{label}: taken over after {kill.cleared_after_s:.1f}s")
        if kill.not_advanced:
            check.failures.append(
                f"{label}: epoch did not move for {', '.join(sorted(kill.not_advanced)[:5])}"
            )
        if kill.held and kill.takeovers_after <= kill.takeovers_before:
            check.failures.append(f"{label}: the takeover counter did not move")
        if not kill.shown_on_overview:
            check.failures.append(f"{label}: the overview never showed the dead engine")
    return check


def workflows_check(
    workflows: list[WorkflowRow],
    *,
    now_ms: int,
    live_engines: set[str],
    failed_at_start: set[str],
    driven_within_ms: int,
) -> Check:
    """Each workflow is finished, or held by a live engine and moving (or parked until a
    time still ahead); none failed during the soak."""
    check = Check("workflows")
    stuck: list[str] = []
    counts: dict[str, int] = {}
    for wf in workflows:
        counts[wf.status] = counts.get(wf.status, 0) + 1
        if wf.status == "failed" and wf.workflow_id not in failed_at_start:
            check.failures.append(f"{wf.workflow_id} failed during the soak")
        if wf.status != "running":
            continue
        if now_ms - wf.created_at_ms <= driven_within_ms:
            continue  # started just now: the next reclaim pass claims it
        # Parked until a time still ahead, or woken so recently that the wake pass is due.
        resting = wf.wake_at_ms is not None and now_ms - wf.wake_at_ms <= driven_within_ms
        moving = now_ms - wf.updated_at_ms <= driven_within_ms
        if wf.holder_engine_id not in live_engines:
            stuck.append(f"{wf.workflow_id} (held by {wf.holder_engine_id or 'nobody'})")
        elif not (resting or moving):
            stuck.append(f"{wf.workflow_id} (idle {(now_ms - wf.updated_at_ms) / 1000:.0f}s)")
    if stuck:
        check.failures.append(f"{len(stuck)} running workflows not driven: {', '.join(stuck[:8])}")
    check.notes.append(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    return check


def logs_check(log: str) -> Check:
    """No Traceback and no CRITICAL line anywhere in the output."""
    check = Check("logs")
    alarms = [line.strip() for line in log.splitlines() if ALARM_RE.search(line)]
    for line in alarms[:20]:
        check.failures.append(line[:300])
    if len(alarms) > 20:
        check.failures.append(f"... and {len(alarms) - 20} more")
    levels = {
        level: sum(f" {level} " in line or f" {level}/" in line for line in log.splitlines())
        for level in ("WARNING", "WARN", "ERROR")
    }
    check.notes.append(", ".join(f"{n} {level} lines" for level, n in levels.items()))
    return check


def metrics_check(scrapes: list[dict[str, float]]) -> Check:
    """No counter of /metrics ever went down between two scrapes."""
    check = Check("metrics")
    for before, after in itertools.pairwise(scrapes):
        for key, value in before.items():
            if key in after and after[key] < value:
                check.failures.append(f"{key} went down: {value:g} -> {after[key]:g}")
    check.notes.append(f"{len(scrapes)} scrapes")
    return check


def pages_check(answers: list[tuple[str, int]]) -> Check:
    """Every page asked for answered 200."""
    check = Check("pages")
    bad = [(path, status) for path, status in answers if status != 200]
    for path, status in bad[:20]:
        check.failures.append(f"{path} answered {status}")
    check.notes.append(f"{len(answers)} page loads")
    return check


def shutdown_check(*, exited_in_time: bool, left_running: list[int], held: int) -> Check:
    """Ctrl-C stopped every process, and the engines released their claims on the way out."""
    check = Check("shutdown")
    if not exited_in_time:
        check.failures.append("./scripts/run did not exit in time after Ctrl-C")
    if left_running:
        check.failures.append(f"processes left running: {left_running}")
    if held:
        check.failures.append(f"{held} claims still held by engines that stopped cleanly")
    return check
