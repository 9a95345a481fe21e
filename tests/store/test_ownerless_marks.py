"""The ownerless marks: the triggers write one for every write that can leave a running
workflow in the index without a holder, and discovery's second source reads only them,
answering exactly the rule "running in the index, no holder", on both databases."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from django.db import connection, transaction

from claims.models import OwnerlessMark, WorkflowClaim, WorkflowStatus, WorkflowVisibility
from claims.store import OrmClaimStore
from claims.store import ownerless as ownerless_module
from claims.store.ownerless import rebuild_marks
from tests import factories

pytestmark = pytest.mark.django_db

HOLDER_CLEARED = {
    "holder_engine_id": None,
    "holder_epoch": None,
    "holder_expires_at_ms": None,
    "holder_claimed_at_ms": None,
}


@pytest.fixture(autouse=True)
def no_marks_before() -> None:
    """Start from no marks: a transactional test's flush (DELETE FROM the claims on SQLite)
    fires the deleted-claim trigger, and its marks outlive that test."""
    OwnerlessMark.objects.all().delete()


def indexed(workflow_id: str, status: str = WorkflowStatus.RUNNING) -> None:
    factories.make_workflow(workflow_id, status=status)
    WorkflowVisibility.objects.create(
        workflow_id=workflow_id, status=status, workflow_type="order", updated_at_ms=0
    )


def held_running(workflow_id: str) -> None:
    factories.make_claim(workflow_id)
    indexed(workflow_id)


def release(workflow_id: str) -> None:
    WorkflowClaim.objects.filter(workflow_id=workflow_id).update(**HOLDER_CLEARED)


def marked() -> list[str]:
    return list(OwnerlessMark.objects.order_by("id").values_list("workflow_id", flat=True))


def test_a_held_running_workflow_is_not_found_and_its_start_mark_is_forgotten():
    held_running("wf-held")
    assert marked() == ["wf-held"]  # its index row went in running

    assert OrmClaimStore().list_unheld_running_indexed() == []
    assert marked() == []


def test_a_release_of_a_running_workflow_marks_it_until_a_holder_takes_it():
    held_running("wf-a")
    store = OrmClaimStore()
    assert store.list_unheld_running_indexed() == []

    release("wf-a")

    assert marked() == ["wf-a"]
    assert store.list_unheld_running_indexed() == ["wf-a"]
    assert store.list_unheld_running_indexed() == ["wf-a"]  # kept while stranded
    WorkflowClaim.objects.filter(workflow_id="wf-a").update(
        holder_engine_id="e-2", holder_epoch=1, holder_expires_at_ms=10**12, holder_claimed_at_ms=1
    )
    assert store.list_unheld_running_indexed() == []
    assert marked() == []  # judged held: forgotten


def test_a_release_of_a_finished_workflow_is_marked_and_forgotten():
    factories.make_claim("wf-done")
    indexed("wf-done", WorkflowStatus.COMPLETED)

    release("wf-done")

    assert marked() == ["wf-done"]
    assert OrmClaimStore().list_unheld_running_indexed() == []
    assert marked() == []


def test_a_release_of_a_workflow_the_index_lacks_is_marked_and_judged_unindexed():
    """The mark covers an index insert the release cannot see yet; once judged, a workflow
    with no index row is the authoritative scan's, not this source's."""
    factories.make_claim("wf-x")
    factories.make_workflow("wf-x")

    release("wf-x")

    assert marked() == ["wf-x"]
    assert OrmClaimStore().list_unheld_running_indexed() == []
    assert marked() == []


def test_an_index_row_inserted_running_without_a_holder_is_marked():
    indexed("wf-new")
    factories.make_claim("wf-ownerless", engine=None)
    indexed("wf-ownerless")

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-new", "wf-ownerless"]


def test_a_resume_marks_whatever_the_claim_says():
    factories.make_claim("wf-s", engine=None)
    indexed("wf-s", WorkflowStatus.SUSPENDED)
    OwnerlessMark.objects.all().delete()

    WorkflowVisibility.objects.filter(workflow_id="wf-s").update(status=WorkflowStatus.RUNNING)

    assert marked() == ["wf-s"]
    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-s"]


def test_renewals_and_takeovers_mark_nothing():
    held_running("wf-r")
    OwnerlessMark.objects.all().delete()

    WorkflowClaim.objects.filter(workflow_id="wf-r").update(holder_expires_at_ms=10**12)
    WorkflowClaim.objects.filter(workflow_id="wf-r").update(holder_engine_id="e-2", epoch=2)

    assert marked() == []


def test_a_deleted_claim_row_marks_its_running_workflow():
    held_running("wf-d")

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM claims_workflowclaim WHERE workflow_id = %s", ["wf-d"])

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-d"]


def test_many_marks_of_one_workflow_come_down_to_the_newest():
    held_running("wf-m")
    for _ in range(3):
        release("wf-m")
        WorkflowClaim.objects.filter(workflow_id="wf-m").update(
            holder_engine_id="e-1", holder_epoch=1, holder_expires_at_ms=1, holder_claimed_at_ms=1
        )
    release("wf-m")
    newest = OwnerlessMark.objects.order_by("-id").values_list("id", flat=True)[0]

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-m"]
    assert list(OwnerlessMark.objects.values_list("id", flat=True)) == [newest]


def test_a_read_with_nothing_marked_is_one_query_and_writes_nothing(django_assert_num_queries):
    for n in range(20):
        held_running(f"wf-{n:02d}")
    OrmClaimStore().list_unheld_running_indexed()  # forgets the starts' marks

    with django_assert_num_queries(1):
        assert OrmClaimStore().list_unheld_running_indexed() == []


def test_more_marks_than_a_batch_are_read_a_batch_a_pass(monkeypatch):
    ids = [f"wf-{n}" for n in range(5)]
    for workflow_id in ids:
        indexed(workflow_id)
    monkeypatch.setattr(ownerless_module, "MARK_BATCH", 2)
    store = OrmClaimStore()

    passes = [store.list_unheld_running_indexed() for _ in range(4)]

    assert passes == [ids[0:2], ids[2:4], ids[4:], ids[0:2]]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="TRUNCATE is PostgreSQL's")
def test_a_truncate_of_the_claims_marks_every_running_workflow_in_the_index():
    held_running("wf-1")
    indexed("wf-2", WorkflowStatus.COMPLETED)
    OwnerlessMark.objects.all().delete()

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE claims_workflowclaim CASCADE")

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-1"]


needs_concurrent_writers = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite runs one write transaction at a time: two writes cannot race there",
)


def _while_uncommitted(write: Callable[[], None], meanwhile: Callable[[], None]) -> None:
    """Run ``write`` in a transaction on another connection, run ``meanwhile`` (committing)
    before it commits, then commit it: each sees the other's row as it was."""
    written, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with transaction.atomic():
                write()
                written.set()
                assert done.wait(10)
        except BaseException as error:  # reported to the test below
            errors.append(error)
            written.set()
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    assert written.wait(10)
    try:
        meanwhile()
    finally:
        done.set()
        thread.join(10)
    assert errors == []


def released_and_judged(workflow_id: str) -> Callable[[], None]:
    """Release the claim (committed), then let a pass judge the marks at once."""

    def run() -> None:
        release(workflow_id)
        assert OrmClaimStore().list_unheld_running_indexed() == []

    return run


@needs_concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_a_resume_racing_a_release_is_found_after_both_commit():
    """The release commits while the resume is in flight, and a pass judges the marks
    between the two commits (the index row still suspended to it): the resume's own mark,
    visible only with the resume, is what finds the workflow."""
    factories.make_claim("wf-race")
    indexed("wf-race", WorkflowStatus.SUSPENDED)

    _while_uncommitted(
        lambda: WorkflowVisibility.objects.filter(workflow_id="wf-race").update(
            status=WorkflowStatus.RUNNING
        ),
        released_and_judged("wf-race"),
    )

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-race"]


@needs_concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_an_index_insert_racing_a_release_is_found_after_both_commit():
    """A backfill inserts the index row of a held workflow while its claim is released and
    a pass judges the release's mark (no index row yet to it): the insert's own mark is
    what finds the workflow."""
    factories.make_claim("wf-race")
    factories.make_workflow("wf-race")

    _while_uncommitted(
        lambda: WorkflowVisibility.objects.create(
            workflow_id="wf-race",
            status=WorkflowStatus.RUNNING,
            workflow_type="order",
            updated_at_ms=0,
        ),
        released_and_judged("wf-race"),
    )

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-race"]


@needs_concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_a_release_racing_a_resume_is_found_after_both_commit():
    """The other order: the resume commits and is judged (the holder still there to the
    pass) while the release is in flight; the release's own mark finds the workflow."""
    factories.make_claim("wf-race")
    indexed("wf-race", WorkflowStatus.SUSPENDED)

    def resumed_and_judged() -> None:
        WorkflowVisibility.objects.filter(workflow_id="wf-race").update(
            status=WorkflowStatus.RUNNING
        )
        assert OrmClaimStore().list_unheld_running_indexed() == []

    _while_uncommitted(lambda: release("wf-race"), resumed_and_judged)

    assert OrmClaimStore().list_unheld_running_indexed() == ["wf-race"]


def test_a_rebuild_leaves_one_mark_per_stranded_workflow_and_no_other():
    """A bulk load that writes the index before the claims marks every running workflow;
    the rebuild judges them again from the rows."""
    for workflow_id in ("wf-held", "wf-stranded", "wf-done"):
        indexed(workflow_id, "completed" if workflow_id == "wf-done" else "running")
    factories.make_claim("wf-held")
    factories.make_claim("wf-stranded")
    release("wf-stranded")

    assert rebuild_marks() == 1
    assert marked() == ["wf-stranded"]


def test_the_migration_fills_the_marks_from_the_rows_it_finds():
    """The migration's own statements on rows written before it (as a fleet upgrading
    has them): the triggers are created again in place, and the marks become the running
    workflows in the index with no holder, one each."""
    held_running("wf-held")
    indexed("wf-stranded")
    indexed("wf-done", WorkflowStatus.COMPLETED)
    factories.make_claim("wf-unclaimed-row", engine=None)
    indexed("wf-unclaimed-row")
    OwnerlessMark.objects.all().delete()
    migration = importlib.import_module("claims.migrations.0027_ownerless_marks")

    migration.create(None, SimpleNamespace(connection=connection))

    assert sorted(marked()) == ["wf-stranded", "wf-unclaimed-row"]
    release("wf-held")  # the triggers are still there, once each
    assert sorted(marked()) == ["wf-held", "wf-stranded", "wf-unclaimed-row"]
