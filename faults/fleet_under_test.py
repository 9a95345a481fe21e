"""The fleet under test: a private Redis server, the web server, beat, and engine slots.

Each engine slot is one Celery worker process that can be killed, stopped, restarted,
or restarted with its clock deliberately wrong. Every process gets the run's database,
the private Redis as its broker, the short claim timing, and a PGAPPNAME naming it, so
the nemesis can find its database sessions.
"""

from __future__ import annotations

import os
import signal
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .processes import (
    VENV_BIN,
    Process,
    beat_argv,
    engine_argv,
    free_port,
    redis_answers,
    wait_until,
)
from .proxy import CuttingProxy


@dataclass(frozen=True)
class Timing:
    ttl_ms: int = 3_000
    renew_interval_ms: int = 1_000

    @property
    def grace_ms(self) -> int:
        return 2 * self.renew_interval_ms

    @property
    def stranded_bound_ms(self) -> int:
        """Longest a workflow may go unowned once faults stop: TTL + 3 x renew interval."""
        return self.ttl_ms + 3 * self.renew_interval_ms


@dataclass
class EngineSlot:
    name: str
    process: Process | None = None
    skew_ms: int = 0
    stopped: bool = False  # SIGSTOP in force


@dataclass
class Fleet:
    workdir: Path
    database_url: str
    timing: Timing
    engine_count: int = 5
    redis_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    redis: Process | None = None
    web: Process | None = None
    beat: Process | None = None
    slots: list[EngineSlot] = field(default_factory=list)
    hostname: str = field(default_factory=socket.gethostname)
    # One engine reaches PostgreSQL through a proxy the nemesis can cut.
    proxied_slot: str = "engine1"
    proxy: CuttingProxy | None = None

    def __post_init__(self) -> None:
        self.slots = [EngineSlot(f"engine{n}") for n in range(1, self.engine_count + 1)]

    @property
    def broker_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def proxy_start(self) -> None:
        parts = urlsplit(self.database_url)
        self.proxy = CuttingProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
        self.proxy.start()

    def _database_url_for(self, name: str) -> str:
        if self.proxy is None or name != self.proxied_slot:
            return self.database_url
        parts = urlsplit(self.database_url)
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@" if credentials else ""
        return urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{self.proxy.port}"))

    def env(self, name: str, *, skew_ms: int = 0) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=self._database_url_for(name),
            CELERY_BROKER_URL=self.broker_url,
            WEFT_CLAIM_TTL=f"{self.timing.ttl_ms}ms",
            WEFT_CLAIM_RENEW_INTERVAL=f"{self.timing.renew_interval_ms}ms",
            WEFTBOARD_SECRET_KEY=env.get("WEFTBOARD_SECRET_KEY") or "fault-harness-only-key",
            WEFTBOARD_DEMO_RATE="0",
            # The workload's operator calls the API far faster than a person.
            WEFTBOARD_API_WRITE_RATE="100000/min",
            WEFTBOARD_READ_RATE="off",
            PGAPPNAME=f"weftboard-{name}",
            PYTHONUNBUFFERED="1",
        )
        env.pop("WEFTBOARD_FAULT_CLOCK_SKEW_MS", None)
        if skew_ms:
            env["WEFTBOARD_FAULT_CLOCK_SKEW_MS"] = str(skew_ms)
        return env

    def _process(self, name: str, argv: list[str], *, skew_ms: int = 0) -> Process:
        return Process(name, argv, self.env(name, skew_ms=skew_ms), self.workdir / f"{name}.log")

    # -- Redis ---------------------------------------------------------------------------

    def redis_start(self) -> None:
        self.redis = self._process(
            "redis",
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
        )
        wait_until(
            lambda: redis_answers(self.redis_port), timeout_s=20, what="the private Redis server"
        )

    def redis_crash(self) -> None:
        """SIGKILL: everything queued in it (ticks, adopt orders) is lost, as in a crash."""
        if self.redis is not None:
            self.redis.send(signal.SIGKILL)
            self.redis.wait(10)
            self.redis.close()

    # -- web and beat ----------------------------------------------------------------------

    def web_start(self) -> None:
        self.web = self._process(
            "web",
            [
                str(VENV_BIN / "gunicorn"),
                "weftboard.wsgi",
                "--bind",
                f"127.0.0.1:{self.web_port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--timeout",
                "60",
            ],
        )

    def beat_start(self) -> None:
        self.beat = self._process(
            "beat", beat_argv(self.workdir / "beat-schedule", loglevel="WARNING")
        )

    # -- engines ---------------------------------------------------------------------------

    def engine_start(self, slot: EngineSlot, *, skew_ms: int = 0) -> None:
        if slot.process is not None:
            slot.process.close()
        slot.skew_ms = skew_ms
        slot.stopped = False
        slot.process = self._process(
            slot.name,
            engine_argv(slot.name, loglevel="WARNING"),
            skew_ms=skew_ms,
        )

    def engine_live(self, slot: EngineSlot) -> bool:
        return slot.process is not None and slot.process.alive() and not slot.stopped

    def processes(self) -> list[Process]:
        fixed = [self.redis, self.web, self.beat]
        return [p for p in fixed if p is not None] + [
            s.process for s in self.slots if s.process is not None
        ]

    def unexpected_exits(self) -> list[str]:
        return [
            f"{p.name} exited with {p.popen.returncode}"
            for p in self.processes()
            if not p.expected_exit and not p.alive()
        ]

    def stop_engines(self) -> None:
        """SIGTERM every engine at once (each releases its claims and flushes its counters)."""
        for slot in self.slots:
            if slot.process is not None:
                slot.process.terminate()
                slot.stopped = False
        for slot in self.slots:
            if slot.process is not None:
                slot.process.close()

    def close(self) -> None:
        # All at once, so the engines dispose in parallel; then wait for each.
        for process in self.processes():
            process.terminate()
        for process in self.processes():
            process.close()
        if self.proxy is not None:
            self.proxy.stop()
