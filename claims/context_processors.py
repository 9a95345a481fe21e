"""What every page's frame shows: the alert when too few engines run (docs/design.md §7)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from django.http import HttpRequest

if TYPE_CHECKING:
    from claims.selectors.fleet.alert_rules import Alert


class EngineFloor:
    """Read on first use only: an HTMX fragment that never renders the frame costs nothing,
    and a full page costs one query (claims.selectors.engines.health.engine_floor_alert)."""

    @cached_property
    def alert(self) -> Alert | None:
        from claims.conf import min_engines
        from claims.fleet_clock import fleet_now
        from claims.selectors.engines.health import engine_floor_alert

        now_ms, timing = fleet_now()
        return engine_floor_alert(now_ms, timing, min_engines())


def engine_floor(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"engine_floor": EngineFloor()}
