"""Child processes with their output in log files, and polling with a deadline."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, ClassVar, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
STOP_TIMEOUT_S = 20


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` with ``args`` in the checkout under ``env``; raises if it fails."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_answers(port: int) -> bool:
    """Whether a Redis server on 127.0.0.1:``port`` answers a ping."""
    import redis

    client = redis.Redis(port=port, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def engine_argv(
    name: str, *, pool: str = "threads", concurrency: int = 4, loglevel: str = "INFO"
) -> list[str]:
    """The command line of one engine: a Celery worker on its own queue (named after it)."""
    return [
        str(VENV_BIN / "celery"),
        "-A",
        "weftboard",
        "worker",
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        loglevel,
    ]


def beat_argv(schedule: Path, *, loglevel: str = "INFO") -> list[str]:
    return [
        str(VENV_BIN / "celery"),
        "-A",
        "weftboard",
        "beat",
        "--schedule",
        str(schedule),
        "--loglevel",
        loglevel,
    ]


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.1,
    check: Callable[[], None] | None = None,
) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after the timeout.

    ``check`` runs before each probe (e.g. "no engine died") and may raise to stop early.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if check is not None:
            check()
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


class Process:
    """One child process with its output in a log file (appended to, across restarts)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        self.popen = subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.expected_exit = False
        self._terminated = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def send(self, sig: signal.Signals) -> None:
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            self.expected_exit = self._terminated = True
        if self.alive():
            os.kill(self.pid, sig)

    def wait(self, timeout_s: float) -> int:
        return self.popen.wait(timeout=timeout_s)

    def log_text(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 80) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def terminate(self) -> None:
        """SIGCONT (it may be stopped) and SIGTERM, once."""
        if self.alive() and not self._terminated:
            self._terminated = self.expected_exit = True
            os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGTERM)

    def close(self) -> None:
        """Stop the process if it still runs: SIGTERM, then SIGKILL after a while."""
        if self.alive():
            self.terminate()
            try:
                self.popen.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()


class BackgroundThread:
    """Runs ``self._run`` on a daemon thread named ``thread_name`` until ``stop()``. The
    dataclasses using it declare the ``_stop`` event and ``_thread`` as fields; ``_run``
    waits on ``_stop`` between its rounds."""

    thread_name: ClassVar[str]
    _stop: threading.Event
    _thread: threading.Thread | None

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        self._stop.set()
        self.join()
