"""sleep parks a running workflow with its claim kept; it is due again at its wake time."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import Workflow, WorkflowClaim
from claims.models.parks import DUE_NOW, executing_recheck_ms
from claims.runtime.writes import workflow_checkpoint_write
from claims.services.workflows import workflow_cancel

from .conftest import START_MS, claim_row, ledger, workflow_row

RECHECK_MS = executing_recheck_ms()  # the renew interval the test settings configure


def test_sleep_parks_until_the_wake_time_then_the_drive_completes(engine, start, clock):
    a = engine("a")
    wf = start("ledger", {"steps": 3, "sleep": 5}, engine=a)

    assert a.drive(wf) == "parked"

    row = workflow_row(wf)
    assert row.status == "running"
    assert row.state["park"] == {"sleep": 0, "wake_at_ms": START_MS + 5_000}
    assert row.state["sleeps"]["0"]["wake_at_ms"] == START_MS + 5_000
    assert claim_row(wf).holder_engine_id == "a"
    assert a.registry.held_workflow_ids() == [wf]
    assert ledger(wf) == {"step-1": [(1, "a")]}
    assert row.due_at_ms == START_MS + 5_000
    assert a.driver.due_now() == []

    clock.advance(4_999)
    assert a.driver.due_now() == []
    clock.advance(1)
    assert a.driver.due_now() == [wf]

    assert a.drive(wf) == "completed"

    row = workflow_row(wf)
    assert row.status == "completed"
    assert "park" not in row.state
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}
    assert claim_row(wf).holder_engine_id is None


def test_drive_before_the_wake_time_parks_again_writing_nothing(engine, start, clock):
    a = engine("a")
    wf = start("order", {"sleep": 60}, engine=a)
    assert a.drive(wf) == "parked"
    parked = workflow_row(wf)
    clock.advance(30_000)
    assert a.registry.renew(wf).status == "renewed"

    assert a.drive(wf) == "parked"

    again = workflow_row(wf)
    assert (again.state, again.updated_at_ms) == (parked.state, parked.updated_at_ms)


def test_parked_workflow_wakes_on_a_successor_engine(engine, start, clock):
    """The park is in the workflow's state, not in the engine: after a shutdown the next
    owner resumes after the sleep without redoing the steps before it."""
    a, b = engine("a"), engine("b")
    wf = start("order", {"sleep": 2}, engine=a)
    assert a.drive(wf) == "parked"
    a.registry.release_all()
    assert b.registry.acquire(wf).epoch == 2

    assert b.drive(wf) == "parked"
    clock.advance(2_000)
    assert b.drive(wf) == "completed"

    steps = workflow_row(wf).state["steps"]
    assert {name: record["engine_id"] for name, record in steps.items()} == {
        "reserve": "a",
        "charge": "a",
        "ship": "b",
    }


def park_then_complete(engine, start, clock, workflow_type: str) -> str:
    """Engine a drives a new workflow to its one-second sleep, and on to completion after it."""
    a = engine("a")
    wf = start(workflow_type, engine=a)
    assert a.drive(wf) == "parked"
    clock.advance(1_000)
    assert a.drive(wf) == "completed"
    return wf


def test_json_shapes_read_back_the_same_on_first_run_and_on_replay(engine, start, clock):
    """A tuple comes back a list and an int key a string, before and after the park."""
    wf = park_then_complete(engine, start, clock, "test-shapes")

    assert workflow_row(wf).state["result"] == {"pair": [1, 2], "keyed": {"1": "one"}}


def test_editing_a_step_result_never_edits_its_checkpoint(engine, start, clock):
    wf = park_then_complete(engine, start, clock, "test-mutating")

    state = workflow_row(wf).state
    assert state["steps"]["first"]["result"] == {"items": [1]}
    assert state["steps"]["second"]["result"] == {"items": [2]}
    assert state["result"] == {
        "first": {"items": [1, "edited"]},
        "second": {"items": [2, "edited"]},
    }


def test_due_now_answers_what_is_due_here_soonest_first_in_one_query(
    engine, start, clock, django_assert_num_queries
):
    """Running and woken, or unparked and unwritten for the recheck time: due. Parked,
    finished, cancelled, another engine's: not due. Soonest due first: the woken one (at
    its wake time) before the unparked one (a recheck after its start)."""
    a, b = engine("a"), engine("b")
    woken = start("ledger", {"sleep": 1}, engine=a)
    fresh = start("ledger", engine=a)
    parked = start("ledger", {"sleep": 10}, engine=a)
    done = start("ledger", engine=a)
    cancelled = start("ledger", engine=a)
    elsewhere = start("ledger", engine=b)
    for wf in (parked, woken, done):
        a.drive(wf)
    workflow_cancel(cancelled, clock=clock)
    clock.advance(RECHECK_MS)

    with django_assert_num_queries(1):
        due = a.driver.due_now()

    assert due == [woken, fresh]
    assert b.driver.due_now() == [elsewhere]


def test_a_workflow_whose_drive_writes_is_not_due_until_its_writes_stop(engine, start, clock):
    """Unparked, it is due a recheck after its last write: a drive checkpointing every step
    keeps it off every wake pass, and a stopped one is due again (as its start was)."""
    a = engine("a")
    wf = start("ledger", {"steps": 3}, engine=a)
    assert workflow_row(wf).due_at_ms == START_MS + RECHECK_MS
    clock.advance(RECHECK_MS - 1)
    assert a.driver.due_now() == []
    clock.advance(1)
    assert a.driver.due_now() == [wf]

    written = workflow_row(wf).updated_at_ms
    workflow_checkpoint_write(wf, state=workflow_row(wf).state, now_ms=clock())
    assert workflow_row(wf).due_at_ms == clock() + RECHECK_MS > written
    assert a.driver.due_now() == []


def test_due_now_leaves_a_claim_the_registry_does_not_hold(engine, start):
    """The row names engine a, but a's registry never learnt of the grant (its answer was
    lost): a drive would be refused, so the wake pass does not hand it out."""
    a, b = engine("a"), engine("b")
    wf = start("ledger", engine=b)
    WorkflowClaim.objects.filter(workflow_id=wf).update(holder_engine_id="a")

    assert a.driver.due_now() == []


def test_due_now_asks_the_same_whatever_the_engine_holds(engine, start, clock):
    """The query names no held id: its text and parameters are the same for one held
    workflow as for many, so its cost is the index's, not the cache's size."""
    a = engine("a")

    def asked() -> tuple[str, ...]:
        with CaptureQueriesContext(connection) as queries:
            a.driver.due_now()
        return tuple(query["sql"] for query in queries.captured_queries)

    start("ledger", engine=a)
    clock.advance(RECHECK_MS)
    one = asked()
    for _ in range(20):
        start("ledger", engine=a)
    clock.advance(RECHECK_MS)

    assert len(asked()) == len(one) == 1
    assert asked()[0].replace(str(clock()), "NOW") == one[0].replace(
        str(clock() - RECHECK_MS), "NOW"
    )
    assert len(a.driver.due_now()) == 21


def test_due_now_answers_sleepers_behind_many_workflows_due_at_once(engine, start, clock):
    """Rows due at 0 (as migration 0026 left unparked workflows) come first but never crowd
    out a woken sleeper."""
    a = engine("a")
    by_wake_time = [start("ledger", {"sleep": seconds}, engine=a) for seconds in (4, 1, 3)]
    for wf in by_wake_time:
        assert a.drive(wf) == "parked"
    unparked = [start("ledger", engine=a) for _ in range(6)]
    Workflow.objects.filter(workflow_id__in=unparked).update(due_at_ms=DUE_NOW)
    clock.advance(5_000)

    due = a.driver.due_now()

    assert sorted(due[:6]) == sorted(unparked)
    assert due[6:] == [by_wake_time[i] for i in (1, 2, 0)]


def test_due_now_leaves_a_workflow_the_row_names_another_engine_for(engine, start):
    """The registry still caches the claim, but another engine took it over in the
    database: driving it would only be refused at the fenced write."""
    a = engine("a")
    wf = start("ledger", engine=a)
    WorkflowClaim.objects.filter(workflow_id=wf).update(holder_engine_id="b", epoch=2)

    assert a.registry.held_workflow_ids() == [wf]
    assert a.driver.due_now() == []
