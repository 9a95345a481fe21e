"""A clock that moves only when a test tells it to."""

from __future__ import annotations

import threading


class FakeClock:
    """A clock that moves only when told to; callable like every Clock."""

    def __init__(self, start_ms: int = 0) -> None:
        self._lock = threading.Lock()
        self._now_ms = start_ms

    def __call__(self) -> int:
        with self._lock:
            return self._now_ms

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a clock never goes backwards")
        with self._lock:
            self._now_ms += ms
            return self._now_ms

    def set(self, now_ms: int) -> None:
        with self._lock:
            if now_ms < self._now_ms:
                raise ValueError("a clock never goes backwards")
            self._now_ms = now_ms
