"""A property-based fuzz of the pages: every GET route and every query parameter it reads
(tests/security/page_fuzz/routes.py), with hostile values (NUL and other control
characters, lone surrogates, huge and negative numbers, Unicode digits, far dates, dot
segments, very long strings, invalid percent-escapes, repeated parameters) beside valid
ones, as full pages and as HTMX fragments, signed in or not, with hostile cookies, over a
realistic fleet that also holds rows other programs wrote. Every answer is below 500,
redirects stay on the site, and nothing is logged as an error. Beside it, every link and
every next page the pages write over that fleet is followed and answered.

The table keeps itself complete: a route of the site outside the admin, the sign-in and
the API, or a parameter a view reads, that the table lacks fails the run. The budget is
fixed and the examples derandomized, so a run is repeatable; WEFTBOARD_PAGE_FUZZ_SCALE=10
runs ten times as many, at random.
"""

from __future__ import annotations

import logging
import os
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import hypothesis
import pytest
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given

from claims.fleet_clock import fleet_clock
from tests import factories

from .page_fuzz import scene as fuzz_scene
from .page_fuzz.crawl import body_of, crawl
from .page_fuzz.page_requests import PageRequest, page_requests
from .page_fuzz.reads import MIDDLEWARE, names_read
from .page_fuzz.routes import ROUTES, Route

pytestmark = pytest.mark.django_db

SCALE = int(os.environ.get("WEFTBOARD_PAGE_FUZZ_SCALE", "1") or "1")
# Routes of the site that are not the operator pages' and that the fuzz leaves alone:
# the admin, the sign-in pages and the API have their own tests and fuzz, and so do the
# saved views' forms and a bulk job's pause, resume and abort, which only take a POST
# (tests/views/test_saved_views.py, test_bulk_pages.py).
NOT_PAGES = (
    "admin:",
    "login",
    "logout",
    "api-",
    "claims:saved_view_",
    "claims:bulk_pause",
    "claims:bulk_resume",
    "claims:bulk_abort",
)


class Captured(logging.Handler):
    """Every record of WARNING and above, whichever logger and whether it propagates."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def errors(self) -> list[logging.LogRecord]:
        return [r for r in self.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.fixture
def captured() -> Iterator[Captured]:
    handler = Captured()
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


@pytest.fixture
def clients(settings: Any) -> dict[str, Client]:
    settings.MIDDLEWARE = [MIDDLEWARE, *settings.MIDDLEWARE]
    # The fuzz reads far faster than an operator: the per-user read limit has its own tests.
    settings.WEFTBOARD_READ_RATE = "off"
    fleet_clock()  # calibrated once, outside the requests
    operator, viewer = Client(raise_request_exception=False), Client(raise_request_exception=False)
    operator.force_login(factories.make_user("root", is_superuser=True, is_staff=True))
    viewer.force_login(factories.make_user("victor"))
    return {
        "operator": operator,
        "viewer": viewer,
        "anonymous": Client(raise_request_exception=False),
    }


def page_routes() -> set[str]:
    """Every route the site serves outside NOT_PAGES, by its full URL name."""
    found: set[str] = set()

    def walk(patterns: list[Any], namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                found.add(namespace + pattern.name)

    walk(get_resolver().url_patterns, "")
    return {name for name in found if not name.startswith(NOT_PAGES)}


def test_every_page_route_is_in_the_fuzz_table() -> None:
    assert page_routes() - {route.name for route in ROUTES} == set()
    assert {route.name for route in ROUTES} - page_routes() == set()


def test_every_link_a_page_writes_is_answered(
    clients: dict[str, Client], captured: Captured
) -> None:
    """Followed from every list as a browser would, over the same fleet: each link is
    answered, and not with a refusal of what the page itself wrote (a 409 is an answer:
    the workflow's state rules the action out)."""
    fuzz_scene.seed()
    for link, status, body in crawl(clients["operator"], {route.name for route in ROUTES}):
        errors = captured.errors()
        captured.records.clear()
        logged = "\n".join(_described(record) for record in errors)
        assert status in (200, 409), f"{link} answered {status}: {body[-1_500:]}\n{logged}"
        assert not errors, f"{link} logged:\n{logged}"


def check(
    clients: dict[str, Client], captured: Captured, reads: dict[str, set[str]]
) -> Callable[[PageRequest], None]:
    def one(request: PageRequest) -> None:
        captured.records.clear()
        # A savepoint per request: a failed statement cannot spoil the next one on
        # PostgreSQL, and whatever a request wrote is undone.
        read_only = "maintenance window" if request.read_only else ""
        with transaction.atomic(), override_settings(WEFTBOARD_READ_ONLY=read_only):
            client = clients[request.who]
            environ: dict[str, Any] = dict(request.headers)
            if request.cookies:
                own = [f"{m.key}={m.coded_value}" for m in client.cookies.values()]
                environ["HTTP_COOKIE"] = "; ".join([*own, request.cookies])
            response = client.get(request.url, **environ)
            body_of(response)
        served = response.wsgi_request
        if served.resolver_match is not None:
            reads.setdefault(served.resolver_match.view_name, set()).update(names_read(served))
        errors = captured.errors()
        logged = "\n".join(_described(record) for record in errors)
        assert response.status_code < 500, f"{request!r} answered {response.status_code}:\n{logged}"
        assert not errors, f"{request!r} answered {response.status_code} and logged:\n{logged}"
        location = response.get("Location", "")
        assert not location or (
            location.startswith("/") and not location.startswith(("//", "/\\"))
        ), f"{request!r} redirects off the site, to {location!r}"

    return one


def _described(record: logging.LogRecord) -> str:
    text = f"{record.levelname} {record.name}: {record.getMessage()}"
    if record.exc_info and record.exc_info[1] is not None:
        text += "\n" + "".join(traceback.format_exception(record.exc_info[1]))
    return text


def _failure_text(error: BaseException) -> str:
    """Each failure's message (Hypothesis groups distinct ones); its notes name the
    generated values, which the message already shows."""
    if isinstance(error, BaseExceptionGroup):
        return "\n".join(_failure_text(inner) for inner in error.exceptions)
    return str(error)[:4_000]


def fuzz(route: Route, scene: fuzz_scene.Scene, one: Callable[[PageRequest], None]) -> None:
    @hypothesis.settings(
        max_examples=route.budget * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(page_requests(route, scene))
    def run(request: PageRequest) -> None:
        one(request)

    with warnings.catch_warnings():
        # Hypothesis warns when it writes out a failing example this large; the failure
        # itself names the request, cut short (PageRequest.__repr__).
        warnings.filterwarnings("ignore", message="Generating overly large repr")
        run()


def test_every_page_answers_hostile_input_without_a_server_error(
    clients: dict[str, Client], captured: Captured
) -> None:
    fuzz_scene.seed()
    scene = fuzz_scene.collect(clients["operator"])
    reads: dict[str, set[str]] = {}
    one = check(clients, captured, reads)
    failures: dict[str, str] = {}
    for route in ROUTES:
        try:
            fuzz(route, scene, one)
        except Exception as error:
            # Every route is fuzzed, so one run lists every failure.
            failures[route.name] = _failure_text(error)
    assert not failures, "\n\n".join(f"{name}: {text}" for name, text in failures.items())
    # The table names every parameter each view read.
    table = {route.name: {param.name for param in route.params} for route in ROUTES}
    unlisted = {
        name: sorted(found - table.get(name, set()))
        for name, found in reads.items()
        if found - table.get(name, set())
    }
    assert unlisted == {}, f"parameters read but not fuzzed: {unlisted}"
    # And the fuzz reached every route.
    assert set(table) - set(reads) == set()


def test_the_fuzz_sees_each_parameter_a_page_reads(clients: dict[str, Client]) -> None:
    """What keeps the table complete: a view's reads are seen, whether or not the
    request carried the parameter."""
    response = clients["operator"].get("/engines/", {"x": "1"})

    assert names_read(response.wsgi_request) == {"status"}
