"""Where to send an engine a message: the direct queues of the engines that may answer."""

from __future__ import annotations

from claims.models import Engine, EngineStatus


def engine_tick_queues() -> list[str]:
    """The direct queue of every engine not known dead or stopped (engines without one,
    such as seeded demo rows, are left out)."""
    return list(
        Engine.objects.exclude(status__in=[EngineStatus.DEAD, EngineStatus.STOPPED])
        .exclude(queue="")
        .values_list("queue", flat=True)
    )
