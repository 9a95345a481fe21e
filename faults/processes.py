"""Child processes with their output in log files, and polling with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
STOP_TIMEOUT_S = 20


def engine_argv(name: str, *, pool: str = "threads", loglevel: str = "INFO") -> list[str]:
    """The command line of one engine: a Celery worker on its own queue (named after it)."""
    return [
        str(VENV_BIN / "celery"),
        "-A",
        "weftboard",
        "worker",
        "--pool",
        pool,
        "--concurrency",
        "4",
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
