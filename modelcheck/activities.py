"""Engine passes and operator actions as coroutines that pause before each store call.

Each activity runs in a greenlet: the checker switches into it, it runs the real protocol
code until the store is called, and the store's gate switches back to the checker before
the call is made. The checker resumes it later (after other activities' calls, or after
the clock moved) with the fault the call is to meet. Only one greenlet runs at a time, so
every schedule is the checker's choice and replays exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from greenlet import greenlet

Fault = str | None  # None, "fail" (raises, nothing written) or "lost" (written, then raises)


class ConnectionLost(Exception):
    """The store's answer never came back; with a "lost" fault the call had committed."""


@dataclass
class Pending:
    """The store call an activity is paused before."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


class Activity:
    """One engine pass or operator action, paused before its next store call."""

    def __init__(self, name: str, body: Callable[[], object]) -> None:
        self.name = name
        self._body = body
        self._greenlet = greenlet(self._run)
        self.pending: Pending | None = None
        self.fault: Fault = None
        self.done = False
        self.abandoned = False
        self.faulted = False  # some call of it met a fault
        self.outcome: object = None
        self.calls: list[str] = []  # what it called so far, with results (its memory)
        self.rows_at_start: dict[str, Any] = {}  # the claim rows when it began
        self.believed_at_start: dict[str, int | None] = {}  # its engine's claims then

    def _run(self) -> None:
        try:
            self.outcome = self._body()
        except ConnectionLost as error:
            self.outcome = f"raised {type(error).__name__}"
        except Exception as error:  # an outcome of the step, shown in the trace
            self.outcome = f"raised {type(error).__name__}: {error}"
        except Abandoned:
            self.outcome = "crashed"
        self.done = True
        self.pending = None

    def start(self) -> None:
        """Run to the first store call (or to the end)."""
        self._greenlet.switch()

    def resume(self, fault: Fault) -> None:
        """Make the pending call, meeting ``fault``, and run to the next one (or the end)."""
        assert self.pending is not None
        assert not self.done
        self.fault = fault
        self.faulted = self.faulted or fault is not None
        self._greenlet.switch()

    def pause(self, pending: Pending) -> Fault:
        """Called on the activity's own greenlet by the store's gate."""
        if self.abandoned:
            raise Abandoned  # a crashed engine's finally blocks reach no store
        self.pending = pending
        parent = self._greenlet.parent
        assert parent is not None
        parent.switch()
        fault, self.fault = self.fault, None
        self.pending = None
        return fault

    def abandon(self) -> None:
        """The engine crashed: the coroutine is unwound where it stands, and nothing it
        does on the way out reaches the store."""
        self.abandoned = True
        if not self.done and not self._greenlet.dead:
            self._greenlet.throw(Abandoned())
        self.done = True


class Abandoned(BaseException):
    """Unwinds a crashed engine's coroutine; never caught by protocol code."""
