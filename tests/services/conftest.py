"""One workflow held at epoch 41, two live engines, and an operator allowed every write:
the same world for the API and the pages, so one rule can be asked of both. The test
modules that live in it ask for it by name (``usefixtures(*WORLD)``); the services' other
tests start from an empty database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache

from tests import factories

EPOCH = 41
WORLD = ("_settings", "_fresh_throttle", "world", "adopt_send")


@pytest.fixture
def _settings(settings: Any) -> None:
    settings.WEFT_CLAIM_TTL = "30s"
    settings.WEFT_CLAIM_RENEW_INTERVAL = "5s"
    settings.WEFTBOARD_READ_ONLY = ""


@pytest.fixture
def _fresh_throttle() -> Iterator[None]:
    """The API's write limit counts in the cache, which outlives a test's transaction."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def world(db: Any) -> None:
    factories.make_workflow("wf-1", created_ago_ms=10_000, updated_ago_ms=5_000)
    factories.make_claim("wf-1", epoch=EPOCH, engine="e-1")
    factories.make_engine("e-1", heard_ago_ms=1_000)
    factories.make_engine("e-2", heard_ago_ms=1_000)


@pytest.fixture
def operator(django_user_model: Any) -> Any:
    return factories.make_user("operator", factories.WRITE_PERMISSIONS)


@pytest.fixture
def adopt_send() -> Iterator[mock.MagicMock]:
    """The broker boundary: the adopt message is captured instead of sent."""
    with mock.patch("claims.tasks.adopt.apply_async") as send:
        yield send
