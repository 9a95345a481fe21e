"""/metrics' engine floor: live (active, not silent) engines against WEFTBOARD_MIN_ENGINES."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from claims.fleet_clock import fleet_now
from claims.models import EngineStatus
from tests import factories

pytestmark = pytest.mark.django_db

FLOOR = ("weftboard_engines_live", "weftboard_engines_minimum", "weftboard_engines_below_minimum")


def engine(engine_id: str, *, status: str = EngineStatus.ACTIVE, heard_ms_ago: int = 0) -> None:
    factories.make_engine(engine_id, status=status, heard_ago_ms=heard_ms_ago)


def floor(client: Any) -> tuple[float, ...]:
    body = client.get("/metrics").content.decode()
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }
    return tuple(values[name] for name in FLOOR)


def test_no_engine_is_below_the_default_minimum(client: Any) -> None:
    assert floor(client) == (0, 1, 1)


def test_only_active_engines_heard_from_recently_count(client: Any, settings: Any) -> None:
    _, timing = fleet_now()
    engine("e-ok")
    engine("e-quiet", heard_ms_ago=timing.ttl_ms + 2 * timing.renew_interval_ms + 1_000)
    engine("e-leaving", status=EngineStatus.DISPOSING)
    engine("e-dead", status=EngineStatus.DEAD)

    assert floor(client) == (1, 1, 0)
    settings.WEFTBOARD_MIN_ENGINES = 2
    assert floor(client) == (1, 2, 1)
