"""Where to send an engine a message: the direct queues of the engines that may answer."""

from __future__ import annotations

from claims.models import Engine, EngineStatus


def engine_tick_targets() -> list[tuple[str, str]]:
    """(engine id, direct queue) of every engine not known dead or stopped (engines without
    a queue, such as seeded demo rows, are left out)."""
    return [
        (engine_id, queue)
        for engine_id, queue in Engine.objects.exclude(
            status__in=[EngineStatus.DEAD, EngineStatus.STOPPED]
        )
        .exclude(queue="")
        .values_list("engine_id", "queue")
    ]
