"""An operator's forced takeover races the holder's own finish of the workflow.

The holder's last fenced write (the claim row locked, then the workflow marked completed)
is open when the takeover starts. The takeover must wait for it and see the finish: a
finished workflow needs no engine, so it is refused and the epoch stays where it was.
Read without the fenced write's locks, the status was the one before the finish, and the
rotation (a compare-and-swap on the epoch, which a finish keeps) granted a finished
workflow to the target. Real threads, each with its own connection, on both databases
(SQLite's IMMEDIATE transactions already run the two one after the other; PostgreSQL's
row locks are what the test is about).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Iterator
from unittest import mock

import pytest
from django.db import connection

from claims.models import ClaimEvent, Workflow, WorkflowClaim, WorkflowStatus
from claims.protocol.errors import InvalidTransitionError
from claims.services.claims import claim_force_takeover_and_notify
from claims.store import OrmClaimStore
from tests import factories

EPOCH = 41
# How long the holder keeps its fenced write open once the takeover has started: long
# enough for the takeover to reach its first statement, which then waits for the commit.
HOLD_S = 0.5

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def world(settings) -> Iterator[mock.MagicMock]:
    settings.WEFT_CLAIM_TTL = "30s"
    settings.WEFT_CLAIM_RENEW_INTERVAL = "5s"
    settings.WEFTBOARD_READ_ONLY = ""
    factories.make_workflow("wf-1", created_ago_ms=10_000, updated_ago_ms=5_000)
    factories.make_claim("wf-1", epoch=EPOCH, engine="e-1")
    factories.make_engine("e-1", heard_ago_ms=1_000)
    factories.make_engine("e-2", heard_ago_ms=1_000)
    with mock.patch("claims.tasks.adopt.apply_async") as send:
        yield send


def test_a_takeover_that_starts_during_the_holders_finish_sees_the_finish(world):
    finishing = threading.Event()
    outcome: dict[str, object] = {}
    errors: list[str] = []

    def holder_finishes() -> None:
        def finish() -> None:
            finishing.set()
            time.sleep(HOLD_S)
            Workflow.objects.filter(workflow_id="wf-1").update(status=WorkflowStatus.COMPLETED)

        try:
            OrmClaimStore().fenced_write("wf-1", EPOCH, finish)
        except BaseException:
            errors.append(f"holder: {traceback.format_exc()}")
            finishing.set()
        finally:
            connection.close()

    def operator_takes_over() -> None:
        try:
            finishing.wait(timeout=30)
            outcome["granted"] = claim_force_takeover_and_notify(
                "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="op", reason="stuck"
            )
        except InvalidTransitionError as refused:
            outcome["refused"] = refused
        except BaseException:
            errors.append(f"operator: {traceback.format_exc()}")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=holder_finishes),
        threading.Thread(target=operator_takes_over),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    assert errors == []
    assert "granted" not in outcome, "a finished workflow was granted an engine"
    assert "completed" in str(outcome["refused"])
    claim = WorkflowClaim.objects.get(workflow_id="wf-1")
    assert (claim.epoch, claim.holder_engine_id) == (EPOCH, "e-1")
    assert not ClaimEvent.objects.filter(kind="forced_takeover").exists()
    world.assert_not_called()
