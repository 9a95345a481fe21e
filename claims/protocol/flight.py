"""One in-flight renewal statement that concurrent callers share (docs/design.md §3)."""

from __future__ import annotations

import threading

from .records import ClaimResult


class Flight:
    """One in-flight renewal statement (of one id, or of a whole chunk of ids) that
    concurrent callers for any of those ids wait on and share."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._results: dict[str, ClaimResult] = {}
        self._error: BaseException | None = None

    def finish(self, results: dict[str, ClaimResult], error: BaseException | None) -> None:
        self._results, self._error = results, error
        self._done.set()

    def wait(self, workflow_id: str) -> ClaimResult:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._results[workflow_id]

    def wait_quietly(self) -> None:
        self._done.wait()
