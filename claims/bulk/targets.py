"""Where a bulk takeover sends each claim: to the engine the operator named, or spread over
the live engines that are not draining; judged once per chunk."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import cycle

from claims.models import Engine, EngineStatus
from claims.protocol.sessions import open_session_epoch
from claims.protocol.timing import ClaimTiming
from claims.store import OrmClaimStore

_store = OrmClaimStore()


@dataclass(frozen=True)
class Target:
    engine_id: str
    queue: str | None  # None: the engine cannot be told (it takes the claim up on audit)
    session_epoch: int | None  # the engine-lease mode: the session its claims name


class Targets:
    """The engines a chunk hands claims to, in turn; ``refusal`` when there are none."""

    def __init__(self, named: str | None, *, now_ms: int, timing: ClaimTiming) -> None:
        engines = Engine.objects.filter(
            status=EngineStatus.ACTIVE, drain_requested_at_ms__isnull=True
        )
        if named is not None:
            engines = engines.filter(engine_id=named)
        self._targets = [
            Target(
                engine_id,
                queue or None,
                open_session_epoch(_store, engine_id, now_ms=now_ms, timing=timing),
            )
            for engine_id, queue in engines.order_by("engine_id").values_list("engine_id", "queue")
        ]
        self._turn = cycle(self._targets)
        self.refusal = (
            None
            if self._targets
            else f"engine {named} is not live, or is draining"
            if named is not None
            else "no live engine that is not draining"
        )

    @property
    def all(self) -> tuple[Target, ...]:
        """The targets in turn order: the first item acted on goes to the first."""
        return tuple(self._targets)

    def next(self) -> Target:
        return next(self._turn)
