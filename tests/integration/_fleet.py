"""Real engine processes for the integration tests: Celery workers and beat on a real broker.

Every process gets the test database's URL, a Redis database of its own (flushed
first) and claim timing short enough for tests (TTL 3 s, renew interval 1 s).
Its output goes to a log file, whose tail a failing test shows.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from claims.models import Engine, EngineStatus
from faults.processes import REPO, VENV_BIN, Process, beat_argv, engine_argv, wait_until
from tests.workers import spare_redis_database

__all__ = ["REPO", "VENV_BIN", "Fleet", "Process", "wait_until"]

TTL_MS = 3_000
RENEW_INTERVAL_MS = 1_000
# A holder is expired once expires_at + 2 x renew interval < now (docs/design.md §1).
GRACE_MS = 2 * RENEW_INTERVAL_MS

# The engines' broker: a Redis database of their own, flushed before each test, so no tick
# or task of an earlier test (or of anything else using the configured database) leaks in.
# On a parallel worker it is the worker's spare database (tests/workers.py).
ENGINE_BROKER_DB = spare_redis_database(alone=13)
FALLBACK_REDIS_URL = "redis://127.0.0.1:6379/15"

ENGINE_BOOT_TIMEOUT_S = 60


def configured_redis_url() -> str:
    """CELERY_BROKER_URL when it is Redis, else the local default."""
    url = os.environ.get("CELERY_BROKER_URL", "").strip()
    return url if url.startswith(("redis://", "rediss://")) else FALLBACK_REDIS_URL


def redis_reachable(url: str) -> tuple[bool, str]:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except Exception as error:
        return False, f"no answer to PING at {url}: {error}"
    finally:
        client.close()
    return True, ""


def engine_broker_url(redis_url: str) -> str:
    """The same Redis server (and credentials), on the engines' own database number."""
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{ENGINE_BROKER_DB}", "", ""))


def redis_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.flushdb()
    finally:
        client.close()


def database_url(settings_dict: dict[str, Any]) -> str:
    """The URL of the database this test runs on (the test database, not the configured one)."""
    user = quote(settings_dict.get("USER") or "", safe="")
    password = quote(settings_dict.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "localhost"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{quote(settings_dict['NAME'], safe='')}"


class Fleet:
    """Engines and a beat sharing the test database and a broker of their own: a dedicated
    Redis database, or the embedded spool under ``var_dir``."""

    def __init__(
        self,
        workdir: Path,
        *,
        database_url: str,
        broker_url: str,
        var_dir: Path,
        ownership_mode: str = "workflow-lease",
    ) -> None:
        self.workdir = workdir
        self.ownership_mode = ownership_mode
        self.database_url = database_url
        self.broker_url = broker_url
        self.var_dir = var_dir
        self.processes: list[Process] = []
        self.hostname = socket.gethostname()

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=self.database_url,
            CELERY_BROKER_URL=self.broker_url,
            WEFTBOARD_VAR_DIR=str(self.var_dir),
            WEFT_CLAIM_TTL=f"{TTL_MS}ms",
            WEFT_CLAIM_RENEW_INTERVAL=f"{RENEW_INTERVAL_MS}ms",
            WEFT_OWNERSHIP_MODE=self.ownership_mode,
            WEFTBOARD_SECRET_KEY="x",
            WEFTBOARD_DEMO_RATE="0",
            PYTHONUNBUFFERED="1",
        )
        return env

    def _start(self, name: str, argv: list[str]) -> Process:
        # PGAPPNAME names the process's database sessions, so a test can drop them.
        env = {**self.env(), "PGAPPNAME": f"weftboard-test-{name}"}
        process = Process(name, argv, env, self.workdir / f"{name}.log")
        self.processes.append(process)
        return process

    def start_engine(self, name: str, *, pool: str = "threads") -> Process:
        return self._start(name, engine_argv(name, pool=pool))

    def start_beat(self) -> Process:
        return self._start("beat", beat_argv(self.workdir / "beat-schedule"))

    def check_alive(self) -> None:
        """Fail at once when a process died that the test did not stop."""
        for process in self.processes:
            if not process.expected_exit and not process.alive():
                raise AssertionError(
                    f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}"
                )

    def engine_row(self, process: Process) -> Engine | None:
        return Engine.objects.filter(pid=process.pid, hostname=self.hostname).first()

    def wait_registered(
        self, engines: Iterable[Process], timeout_s: float = ENGINE_BOOT_TIMEOUT_S
    ) -> dict[str, Engine]:
        """Each engine's active Engine row (found by pid), by process name."""
        wanted = list(engines)

        def probe() -> dict[str, Engine] | None:
            rows = {p.name: self.engine_row(p) for p in wanted}
            if all(row is not None and row.status == EngineStatus.ACTIVE for row in rows.values()):
                return {name: row for name, row in rows.items() if row is not None}
            return None

        return wait_until(
            probe,
            timeout_s=timeout_s,
            what=f"engines {[p.name for p in wanted]} to register",
            interval_s=0.2,
            check=self.check_alive,
        )

    def report(self) -> str:
        return "\n\n".join(
            f"----- {p.name} (pid {p.pid}, exit {p.popen.returncode}) {p.log_path} -----\n"
            f"{p.tail()}"
            for p in self.processes
        )

    def close(self) -> None:
        # All at once, so the engines dispose in parallel; then wait for each.
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.close()
