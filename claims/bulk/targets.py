"""Where a bulk takeover sends each claim: to the engine the operator named, or spread over
the live engines that are not draining; judged once per chunk."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import cycle

from claims.fleet_clock import database_now_ms
from claims.models import Engine, EngineStatus
from claims.protocol.sessions import open_session_epoch
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.liveness import heard_since_ms
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
        rows = list(
            engines.order_by("engine_id").values_list("engine_id", "queue", "heartbeat_at_ms")
        )
        if named is None:
            # Spread over the engines heard from lately: one killed a moment ago stays
            # active until beat marks it dead (a TTL of silence), and a claim handed to it
            # would wait out its TTL and the grace again before anyone drives it. With none
            # heard from lately (the whole fleet slow), every active engine is a target.
            # On the database's clock, as the heartbeats are judged everywhere: the runner
            # is any worker, whose own clock may be wrong.
            heard_since = heard_since_ms(database_now_ms(), timing)
            heard = [row for row in rows if row[2] >= heard_since]
            rows = heard or rows
        self._targets = [
            Target(
                engine_id,
                queue or None,
                open_session_epoch(_store, engine_id, now_ms=now_ms, timing=timing),
            )
            for engine_id, queue, _ in rows
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
