"""The engine's drive pool (docs/design.md §4, "A mass failure is split").

Two rules make a burst of drives (thousands of claims taken over at once) cheap and keep
it from slowing the takeovers that caused it:

- A drive thread keeps its database connection while drives wait in the queue and gives
  it back before it waits for more: opening a connection per drive (a PostgreSQL backend
  started and stopped each time) cost more than the drive itself. An idle pool holds no
  sessions. The pool's own worker loop decides this at the moment a thread finds the
  queue empty, which an executor's workers do not expose.
- New drives wait while the engine's reclaim pass is taking claims over, and while its
  reclaim is behind (its last pass left candidates for the next): in a mass failure every
  claim held again within the failover bound comes first, and driving them follows at the
  machine's pace. A drive already running goes on; a wait never outlasts its bound (a
  reclaim that stops passing does not stop the drives) and holds no connection; a drive
  still waiting when the pool shuts down is not run (its claim is released with the rest).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager

from django.db import close_old_connections, connections

# How often a drive held back because reclaim is behind looks again.
BEHIND_POLL_S = 0.1

_Task = tuple[Future[None], Callable[[str], None], str]


def _drop_broken_connections() -> None:
    """Close this thread's connections that failed and can no longer be used; a healthy
    one is kept (``close_old_connections`` would close it: CONN_MAX_AGE is 0)."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and conn.errors_occurred and not conn.is_usable():
            conn.close()


class DrivePoolClosed(RuntimeError):
    """A drive submitted after the pool shut down."""


class DrivePool:
    def __init__(self, size: int, *, gate_timeout_s: float) -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0  # submitted, not started
        self._waiting = 0  # started, waiting for reclaim
        self._closing = False
        self._open = threading.Event()
        self._open.set()
        self._closers = 0  # reclaim passes taking over now
        self._behind_until = 0.0  # time.monotonic() until which reclaim is behind
        self._behind_since: float | None = None  # when it fell behind, if it is
        self._gate_timeout_s = gate_timeout_s
        self._size = size
        self._idle = 0  # workers waiting for work
        # Started as drives arrive, as an executor's are: an engine that never drives
        # (most tests' engines) starts no thread.
        self._threads: list[threading.Thread] = []

    def submit(self, drive: Callable[[str], None], workflow_id: str) -> Future[None]:
        """Queue a drive; raises DrivePoolClosed once the pool is shut down."""
        future: Future[None] = Future()
        with self._lock:
            if self._closing:
                raise DrivePoolClosed("the drive pool is shut down")
            self._queued += 1
            self._tasks.put((future, drive, workflow_id))
            if self._idle < self._queued and len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._work, name=f"drive_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        return future

    # -- the workers ---------------------------------------------------------------

    def _work(self) -> None:
        try:
            while True:
                try:
                    task = self._tasks.get_nowait()
                except queue.Empty:
                    close_old_connections()  # about to wait for work: hold no session
                    with self._lock:
                        self._idle += 1
                    task = self._tasks.get()
                    with self._lock:
                        self._idle -= 1
                if task is None:
                    return
                self._run(*task)
        finally:
            close_old_connections()

    def _run(self, future: Future[None], drive: Callable[[str], None], workflow_id: str) -> None:
        with self._lock:
            self._queued -= 1
        if not future.set_running_or_notify_cancel():
            return
        if self._held_back():
            # A wait holds no database session: twenty engines' pools waiting out a mass
            # failover would otherwise hold a connection per thread.
            close_old_connections()
            with self._lock:
                self._waiting += 1
            try:
                self._wait_for_reclaim()
            finally:
                with self._lock:
                    self._waiting -= 1
        if self._closing:
            # Not run: the engine is leaving, and release_all gives the claim back.
            future.set_exception(DrivePoolClosed("not run: the drive pool shut down"))
            return
        _drop_broken_connections()
        try:
            drive(workflow_id)
        except BaseException as error:
            future.set_exception(error)
        else:
            future.set_result(None)

    # -- holding back ----------------------------------------------------------------

    def _held_back(self) -> bool:
        with self._lock:
            return not self._open.is_set() or self._behind_until > time.monotonic()

    def _wait_for_reclaim(self) -> None:
        """Until no pass is taking over and reclaim is not behind; at most the gate's
        timeout for a pass, and the behind bound for the rest."""
        self._open.wait(self._gate_timeout_s)
        while True:
            with self._lock:
                left = self._behind_until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, BEHIND_POLL_S))

    def behind(self, for_s: float, *, at_most_s: float) -> None:
        """The last reclaim pass left candidates for later: new drives wait for ``for_s``
        (a later pass that is behind again extends it, one that is not ends it), and never
        longer than ``at_most_s`` from the first pass that fell behind: a fleet that stays
        behind (work arriving faster than it is taken) still drives what it holds."""
        now = time.monotonic()
        with self._lock:
            if self._behind_since is None:
                self._behind_since = now
            self._behind_until = min(now + for_s, self._behind_since + at_most_s)

    def caught_up(self) -> None:
        with self._lock:
            self._behind_until = 0.0
            self._behind_since = None

    @contextmanager
    def held_back(self) -> Iterator[None]:
        """Around a reclaim pass's takeovers: drives not yet started wait (at most the
        pool's gate timeout) until the pass is done."""
        with self._lock:
            self._closers += 1
            self._open.clear()
        try:
            yield
        finally:
            with self._lock:
                self._closers -= 1
                if self._closers == 0:
                    self._open.set()

    # -- reading and stopping ------------------------------------------------------------

    def queued(self) -> int:
        with self._lock:
            return self._queued

    def waiting(self) -> int:
        """Drives started but held back by reclaim."""
        with self._lock:
            return self._waiting

    def shutdown(self) -> None:
        """Cancel the drives not started, skip those waiting on reclaim, and wait for the
        running ones to end."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        self.caught_up()
        self._open.set()
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                with self._lock:
                    self._queued -= 1
                task[0].cancel()
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()
