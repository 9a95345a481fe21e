"""The fleet the page fuzz runs against, seeded once: the busy fleet of the browser tests
(crashed demo engines, live ones with live, in-grace and expired claims, counters,
re-drives, a reclaim cursor, backfills, an audit trail) and what it lacks: engines in
every status (draining, silent, dead, disposing, stopped, in a session), workflows in
every status, rows written by another program with ids no interface accepts any more and
times no date can show (imported.py), and the charts' history.

The values the fuzz draws as "valid" come from here, so it reaches the pages' deep
paths: ids that exist, and the cursors the pages themselves wrote."""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from django.test import Client

from claims.conf import claim_timing
from claims.models import (
    BackfillJob,
    BackfillStatus,
    ClaimEvent,
    Engine,
    EngineEvent,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.selectors.claims.sorting import SORT_KEYS
from claims.selectors.workflows.listing import WORKFLOW_SORTS
from claims.services.engines import fleet_snapshot_take
from claims.store.workflows import workflow_index
from tests import factories
from tests.browser import scene as browser_scene

from .imported import IMPORTED, IMPORTED_TYPE, imported_rows

MINUTE_MS = 60_000

# Ids a bulk import or an older version may have written: each must still be reachable
# and none may lead a link elsewhere (claims/views/id_paths.py).
HOSTILE_WORKFLOW_IDS = (
    "..",
    ".",
    "~..",
    "../../admin/auth/user/add/",
    "a/./b/../c",
    "x?y#z&q=1",
    "50%2F%2e%2e",
    "back\\slash/..\\..",
    "sp ace/",
    "ünï/cødé-١٢٣",
    "'; select 1; --",
)
HOSTILE_ENGINE_IDS = ("e/../x", "~.", "é-engine \u0661")
DRAINING, SILENT, DISPOSING, STOPPED, SESSION = (
    "e-draining",
    "e-silent",
    "e-disposing",
    "e-stopped",
    "e-session",
)


@dataclass(frozen=True)
class Scene:
    workflow_ids: tuple[str, ...]  # workflow rows
    claim_only_ids: tuple[str, ...]  # claim rows whose workflow row is gone
    engine_ids: tuple[str, ...]
    actors: tuple[str, ...]
    epochs: tuple[int, ...]  # epochs claims stand at (action forms compare them)
    claim_cursors: dict[str, tuple[str, ...]]  # per sort key, as the claims page wrote them
    workflow_cursors: dict[str, tuple[str, ...]]  # per sort, as the workflows page wrote them
    audit_cursors: tuple[str, ...]


def seed() -> None:
    browser_scene.busy_fleet()
    now = browser_scene.now_ms()
    timing = claim_timing()
    _engines(now, timing.ttl_ms)
    _workflows(now)
    _queues(now)
    imported_rows()
    # The charts' history: a snapshot a minute for the last few minutes, as beat takes them.
    for minutes_ago in (5, 4, 3, 2, 1, 0):
        fleet_snapshot_take(now_ms=now - minutes_ago * MINUTE_MS, timing=timing)


def _engines(now: int, ttl_ms: int) -> None:
    make = browser_scene.make_engine
    make(DRAINING, summary=browser_scene.pass_summary(7))
    Engine.objects.filter(engine_id=DRAINING).update(drain_requested_at_ms=now - 30_000)
    make(SILENT, heartbeat_ago_ms=10 * ttl_ms)
    make(DISPOSING, status=EngineStatus.DISPOSING)
    make(STOPPED, status=EngineStatus.STOPPED, heartbeat_ago_ms=3_600_000)
    make(SESSION)
    factories.make_session(SESSION, epoch=5, expires_at_ms=now + ttl_ms, at_ms=now)
    factories.make_session(
        SILENT, epoch=2, expires_at_ms=now - ttl_ms, at_ms=now - ttl_ms, closed_at_ms=now - 1_000
    )
    for engine_id in HOSTILE_ENGINE_IDS:
        make(engine_id)
    for n, (kind, engine_id) in enumerate(
        (("drain", DRAINING), ("undrain", SILENT), ("drain", HOSTILE_ENGINE_IDS[0]))
    ):
        EngineEvent.objects.create(
            engine_id=engine_id,
            kind=kind,
            actor="alice",
            reason=f"maintenance window {n}\nsecond line",
            at_ms=now - (n + 1) * MINUTE_MS,
        )


def _workflows(now: int) -> None:
    make = browser_scene.make_workflow
    for n, status in enumerate(WorkflowStatus.values):
        workflow = make(f"status-{status}", status=status)
        workflow_index(workflow)
        browser_scene.make_claim(workflow.workflow_id, epoch=n + 1, engine=None)
    # Held in the engine-lease mode: the claim names the session, not an expiry.
    make("session-held")
    WorkflowClaim.objects.create(
        workflow_id="session-held",
        epoch=2,
        holder_engine_id=SESSION,
        holder_epoch=2,
        holder_claimed_at_ms=now - 5_000,
        holder_session_epoch=5,
    )
    # Parked until a time no date can show, and nested near the structure rule's limit.
    make(
        "parked-far",
        state={"input": {}, "steps": {}, "park": {"sleep": 0, "wake_at_ms": 10**303}},
    )
    deep: object = "bottom"
    for _ in range(60):
        deep = {"level": deep}
    make("nested-deep", state={"input": deep, "steps": {}})
    # Written straight into the tables, as another program would.
    for n, workflow_id in enumerate(HOSTILE_WORKFLOW_IDS):
        workflow = make(workflow_id)
        workflow_index(workflow)
        browser_scene.make_claim(workflow_id, epoch=n + 2, engine=browser_scene.HOLDER)
    # A claim whose workflow row was deleted.
    browser_scene.make_claim("claim-only", epoch=9, engine=None)
    ClaimEvent.objects.create(
        workflow_id="..",
        kind="forced_release",
        epoch_before=2,
        epoch_after=3,
        engine_id=browser_scene.HOLDER,
        actor="root",
        reason='quotes " and \\ and =signs\nnext line',
        at_ms=now - 2 * MINUTE_MS,
    )


def _queues(now: int) -> None:
    at = dt.datetime.fromtimestamp(now / 1000, tz=dt.UTC)
    BackfillJob.objects.create(
        status=BackfillStatus.RUNNING,
        requested_by="bob",
        run_at=at - dt.timedelta(minutes=1),
        started_at=at - dt.timedelta(seconds=30),
        cursor="order-00100",
        processed=100,
        total_estimate=300,
    )
    BackfillJob.objects.create(
        status=BackfillStatus.CANCELLED,
        requested_by=None,
        run_at=at - dt.timedelta(days=1),
        finished_at=at - dt.timedelta(days=1),
    )


def collect(client: Client) -> Scene:
    """What the seeded fleet holds, and the cursors its pages write (read from the pages
    as a browser would follow them)."""
    workflow_ids = tuple(Workflow.objects.values_list("workflow_id", flat=True))
    claim_ids = set(WorkflowClaim.objects.values_list("workflow_id", flat=True))
    epochs = set(WorkflowClaim.objects.values_list("epoch", flat=True).distinct())
    return Scene(
        workflow_ids=workflow_ids,
        claim_only_ids=tuple(sorted(claim_ids - set(workflow_ids))),
        engine_ids=tuple(Engine.objects.values_list("engine_id", flat=True)),
        actors=tuple(
            actor
            for actor in ClaimEvent.objects.values_list("actor", flat=True).distinct()
            if actor
        ),
        # Each epoch a claim stands at, the one before (a stale form) and after.
        epochs=tuple(sorted({e + step for e in epochs for step in (-1, 0, 1)})),
        claim_cursors={
            sort: _cursors(client, "/claims/", {"state": "all", "sort": sort})
            + _cursors(client, "/claims/", {"state": "all", "sort": sort, "prefix": IMPORTED})
            for sort in SORT_KEYS
        },
        workflow_cursors={
            sort: _cursors(client, "/workflows/", {"sort": sort})
            + _cursors(client, "/workflows/", {"sort": sort, "type": IMPORTED_TYPE})
            for sort in WORKFLOW_SORTS
        },
        audit_cursors=_cursors(client, "/audit/", {}),
    )


_HREF = re.compile(r'href="([^"]*cursor=[^"]*)"')


def _cursors(client: Client, path: str, params: dict[str, str], pages: int = 3) -> tuple[str, ...]:
    """The next-page cursors of the first ``pages`` pages, following the pager's links."""
    found: list[str] = []
    for _ in range(pages):
        response = client.get(path, {**params, **({"cursor": found[-1]} if found else {})})
        # A page takes back every cursor it writes.
        assert response.status_code == 200, (
            f"{path} with {params} and the cursor its previous page wrote "
            f"({found[-1] if found else None!r}) answered {response.status_code}: "
            f"{response.content.decode()[-2_000:]}"
        )
        links = _HREF.findall(response.content.decode())
        cursors = [
            parse_qs(urlsplit(html.unescape(link)).query).get("cursor", [""])[0] for link in links
        ]
        cursors = [cursor for cursor in cursors if cursor and cursor not in found]
        if not cursors:
            break
        found.append(cursors[0])
    return tuple(found)
