"""One soak: the main command on a fresh var/, a random engine killed every so often, and
a watch on everything a user would notice."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from soak import checks
from soak.app import PAGES, Browser, MainCommand, scrape_counters, wait_for
from soak.fleet_db import FleetDatabase, now_ms

# The main command's claim timing (the defaults): a dead engine's claims are due to move
# within TTL + 3 x renew interval of its death.
TTL_S = 30.0
RENEW_INTERVAL_S = 5.0
TAKEOVER_BOUND_S = TTL_S + 3 * RENEW_INTERVAL_S
REPLACED_WITHIN_S = 60.0
# A pass flushes its counters when it ends: two renew intervals cover a pass that runs long.
COUNTER_FLUSH_WITHIN_S = 2 * RENEW_INTERVAL_S
ENGINES = 3
TAKEOVER_COUNTER = "weft_workflow_claim_attempts_total{outcome=takeover}"
# supervisord says STARTING for a minute after a start (startsecs), then RUNNING.
UP_STATES = ("STARTING", "RUNNING")
# After the set duration, the soak still follows its last kill until this much after it.
FOLLOW_KILL_S = max(TAKEOVER_BOUND_S, REPLACED_WITHIN_S) + 10
SCRAPE_EVERY_S = 5.0
PAGES_EVERY_S = 60.0


@dataclass
class Options:
    duration_s: float
    kill_every_s: float
    seed: int
    var_dir: Path
    port: int
    ownership_mode: str = "workflow-lease"


@dataclass
class Record:
    kills: list[checks.Kill] = field(default_factory=list)
    scrapes: list[dict[str, float]] = field(default_factory=list)
    pages: list[tuple[str, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pids_seen: set[int] = field(default_factory=set)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Soak:
    def __init__(self, options: Options, log: Callable[[str], None]) -> None:
        self.options = options
        self.log = log
        self.rng = random.Random(options.seed)
        self.app = MainCommand(
            options.var_dir,
            options.port,
            options.var_dir / "run.log",
            env_extra={"WEFT_OWNERSHIP_MODE": options.ownership_mode},
        )
        self.db = FleetDatabase(options.var_dir / "weftboard.sqlite3")
        self.record = Record()
        self.browser: Browser | None = None
        self.started = 0.0

    # -- the run -------------------------------------------------------------------

    def run(self) -> list[checks.Check]:
        self.app.start()
        final: list[checks.Check] = []
        live: set[str] = set()
        try:
            self._wait_until_up()
            failed_at_start = {w.workflow_id for w in self.db.workflows() if w.status == "failed"}
            self._watch()
            live = self._live_engines()
            final = self._final_looks(failed_at_start, live)
        except AssertionError as error:
            self.record.errors.append(str(error))
        finally:
            exited_in_time = self.app.interrupt()
        log = self.app.log_text()
        errors = checks.Check("soak", failures=list(self.record.errors))
        return [
            errors,
            *final,
            checks.exits_check(log, self.record.kills),
            checks.logs_check(log),
            self._shutdown(exited_in_time, live),
        ]

    def _wait_until_up(self) -> None:
        def printed_login() -> tuple[str, str] | None:
            if self.app.exited() is not None:
                raise AssertionError(f"./scripts/run exited with {self.app.exited()} at start")
            return self.app.login()

        login = wait_for(printed_login, timeout_s=300, what="the login line of ./scripts/run")
        self.browser = Browser(self.app.base_url, *login)
        wait_for(self._can_log_in, timeout_s=120, what="the login page")

        def engines_up() -> bool:
            running = [p for p in self.app.programs() if p.name.startswith("engine:")]
            active = {e.pid for e in self.db.engines() if e.status == "active"}
            return len(running) == ENGINES and all(
                p.state in UP_STATES and p.pid in active for p in running
            )

        wait_for(engines_up, timeout_s=120, what=f"{ENGINES} engines running and registered")
        self.started = time.monotonic()
        self.log(f"fleet up; soaking for {self.options.duration_s:.0f}s")

    def _can_log_in(self) -> bool:
        assert self.browser is not None
        try:
            self.browser.log_in()
        except OSError:
            return False
        return True

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _watch(self) -> None:
        next_scrape = next_pages = 0.0
        next_kill = self.options.kill_every_s
        while self._elapsed() < self._end_s():
            if self.app.exited() is not None:
                self.record.errors.append(f"./scripts/run exited with {self.app.exited()}")
                return
            now = self._elapsed()
            for program in self.app.programs():
                if program.pid:
                    self.record.pids_seen.add(program.pid)
            if now >= next_scrape:
                self._scrape()
                next_scrape = now + SCRAPE_EVERY_S
            if now >= next_pages:
                self._load_pages()
                next_pages = now + PAGES_EVERY_S
            if now >= next_kill and now < self.options.duration_s:
                self._kill_one()
                next_kill += self.options.kill_every_s
            for kill in self.record.kills:
                self._follow(kill)
            time.sleep(0.5)

    def _end_s(self) -> float:
        """The set duration, or later while the last kill is still being followed."""
        last_kill = max((kill.at_s for kill in self.record.kills), default=0.0)
        return max(self.options.duration_s, last_kill + FOLLOW_KILL_S)

    def _scrape(self) -> None:
        try:
            self.record.scrapes.append(scrape_counters(self.app.base_url))
        except OSError as error:
            self.record.errors.append(f"/metrics at {self._elapsed():.0f}s: {error}")

    def _load_pages(self) -> None:
        assert self.browser is not None
        for path in PAGES:
            try:
                status, _ = self.browser.get(path)
            except OSError as error:
                status = 0
                self.record.errors.append(f"{path} at {self._elapsed():.0f}s: {error}")
            self.record.pages.append((path, status))

    def _takeovers(self) -> float:
        return self.record.scrapes[-1].get(TAKEOVER_COUNTER, 0.0) if self.record.scrapes else 0.0

    # -- kills ---------------------------------------------------------------------

    def _kill_one(self) -> None:
        running = [
            p
            for p in self.app.programs()
            if p.name.startswith("engine:") and p.state in UP_STATES and p.pid
        ]
        if not running:
            self.record.errors.append(f"no running engine to kill at {self._elapsed():.0f}s")
            return
        victim = self.rng.choice(running)
        assert victim.pid is not None
        engine = self.db.engine_by_pid(victim.pid)
        engine_id = engine.engine_id if engine else None
        self._scrape()
        # Read last, right before the kill: a claim the engine finishes and releases in
        # between is told apart by its release (see _follow).
        held = self.db.claims_held_by(engine_id) if engine_id else {}
        kill = checks.Kill(
            at_s=self._elapsed(),
            program=victim.name.split(":", 1)[1],
            pid=victim.pid,
            engine_id=engine_id,
            held=held,
            takeovers_before=self._takeovers(),
        )
        kill.at_ms = now_ms()
        os.kill(victim.pid, signal.SIGKILL)
        self.record.kills.append(kill)
        self.log(
            f"{kill.at_s:.0f}s: killed {kill.program} (pid {kill.pid}, engine "
            f"{(engine_id or '?')[:8]}, {len(held)} claims)"
        )

    def _follow(self, kill: checks.Kill) -> None:
        since = self._elapsed() - kill.at_s
        if kill.replaced_after_s is None:
            for program in self.app.programs():
                if program.name.endswith(f":{kill.program}") and program.pid not in (
                    None,
                    kill.pid,
                ):
                    engine = self.db.engine_by_pid(program.pid)  # type: ignore[arg-type]
                    if engine is not None and engine.status == "active":
                        kill.replaced_after_s, kill.new_engine_id = since, engine.engine_id
                        self.log(f"{kill.program} replaced after {since:.1f}s")
        if kill.cleared_after_s is None and kill.held and kill.engine_id:
            now = self.db.epochs(list(kill.held))
            if all(holder != kill.engine_id for _, holder in now.values()):
                kill.cleared_after_s = since
                let_go = self.db.released_by(kill.engine_id, kill.held)
                kill.not_advanced = [
                    wf
                    for wf, (epoch, _) in now.items()
                    if epoch <= kill.held[wf] and wf not in let_go
                ]
                self._scrape()
                kill.takeovers_after = self._takeovers()
                self.log(f"{kill.program}'s {len(kill.held)} claims taken over after {since:.1f}s")
        elif (
            kill.cleared_after_s is not None
            and kill.takeovers_after <= kill.takeovers_before
            and since - kill.cleared_after_s <= COUNTER_FLUSH_WITHIN_S
        ):
            # The new holder commits its takeovers, then flushes its counters at the end of
            # that pass: the counter may move a moment after the claims did.
            self._scrape()
            kill.takeovers_after = self._takeovers()
        if not kill.shown_on_overview and kill.engine_id and self.browser is not None:
            # Its pass is late, then it is dead: either alert links the engine by its id.
            status, html = self.browser.get("/")
            kill.shown_on_overview = status == 200 and kill.engine_id in html

    # -- the end -------------------------------------------------------------------

    def _live_engines(self) -> set[str]:
        return {e.engine_id for e in self.db.engines() if e.status == "active" and _alive(e.pid)}

    def _final_looks(self, failed_at_start: set[str], live: set[str]) -> list[checks.Check]:
        self._scrape()
        self._load_pages()
        workflows = checks.workflows_check(
            self.db.workflows(),
            now_ms=now_ms(),
            live_engines=live,
            failed_at_start=failed_at_start,
            driven_within_ms=int(TAKEOVER_BOUND_S * 1000),
        )
        return [
            workflows,
            checks.replacement_check(self.record.kills, within_s=REPLACED_WITHIN_S),
            checks.takeover_check(self.record.kills, bound_s=TAKEOVER_BOUND_S),
            checks.metrics_check(self.record.scrapes),
            checks.pages_check(self.record.pages),
        ]

    def _shutdown(self, exited_in_time: bool, live: set[str]) -> checks.Check:
        """After Ctrl-C: nothing left running, and the engines that were live released."""
        left = sorted(pid for pid in self.record.pids_seen if _alive(pid))
        held = sum(len(self.db.claims_held_by(engine_id)) for engine_id in live)
        return checks.shutdown_check(exited_in_time=exited_in_time, left_running=left, held=held)

    def report(self, results: list[checks.Check]) -> dict[str, object]:
        return {
            "options": {k: str(v) for k, v in vars(self.options).items()},
            "kills": [vars(kill) for kill in self.record.kills],
            "checks": {
                c.name: {"passed": c.passed, "failures": c.failures, "notes": c.notes}
                for c in results
            },
        }


def soak_run(options: Options, log: Callable[[str], None]) -> tuple[bool, list[checks.Check]]:
    soak = Soak(options, log)
    results = soak.run()
    path = options.var_dir / "soak-report.json"
    path.write_text(json.dumps(soak.report(results), indent=2, default=str))
    return all(c.passed for c in results), results
