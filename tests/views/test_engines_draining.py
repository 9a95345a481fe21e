"""A draining engine says so in the engines list, with what it still holds, so an operator
sees at a glance which engines are on their way out; undrained, the badge goes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from claims.models import Engine, EngineStatus

from .conftest import make_claim, make_engine, make_workflow

pytestmark = pytest.mark.django_db

BADGE = '<span class="badge badge--draining">draining</span>'


@pytest.fixture
def page(signed_in_as: Callable[..., Client]) -> Callable[[], str]:
    client = signed_in_as("victor")
    return lambda: client.get(reverse("claims:engines")).content.decode()


def test_a_draining_engine_shows_its_badge_and_what_it_still_holds(page: Any) -> None:
    make_engine("e-drain", drain_requested_at_ms=1)
    make_engine("e-busy")
    for n in range(2):
        make_workflow(f"wf-{n}")
        make_claim(f"wf-{n}", epoch=3, engine="e-drain")

    html = page()

    assert html.count(BADGE) == 1
    row = html[html.index('href="/engines/e-drain/"') :].split("</tr>")[0]
    assert BADGE in row
    assert "<small>2 left</small>" in row


def test_no_badge_once_undrained_or_stopped(page: Any) -> None:
    make_engine("e-drain", drain_requested_at_ms=1)
    Engine.objects.filter(engine_id="e-drain").update(drain_requested_at_ms=None)
    make_engine("e-gone", status=EngineStatus.STOPPED, drain_requested_at_ms=1)

    assert BADGE not in page()
