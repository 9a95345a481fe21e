import pytest
from django.db import transaction
from claims.models import Workflow, WorkflowClaim
from claims.store import OrmClaimStore
from claims.store.rows import _holder_values
from claims.protocol import EngineDeposedError
from ._race_checks import check_race
from ._race_engine import race_workflow_ids
from .test_claim_race import race_engine_threads
from .test_fenced_write_race import race_fenced_writes, check_fenced_race, WORKFLOW_ID, START_MS


class AcquireIgnoresHolder(OrmClaimStore):
    def cas_grant(self, workflow_id, *, expected_epoch, expected_holder, holder, event):
        if expected_holder is None:  # acquire: forget the "no holder" condition
            return self._transition(workflow_id, {"epoch": expected_epoch}, expected_epoch + 1, holder, event)
        return super().cas_grant(workflow_id, expected_epoch=expected_epoch,
                                 expected_holder=expected_holder, holder=holder, event=event)


class RotateUnconditional(OrmClaimStore):
    def cas_rotate(self, workflow_id, *, expected_epoch, holder, event):
        return self._transition(workflow_id, {}, expected_epoch + 1, holder, event)


class UnlockedFence(OrmClaimStore):
    def fenced_write(self, workflow_id, epoch, fn):
        if not WorkflowClaim.objects.filter(workflow_id=workflow_id, epoch=epoch).exists():
            raise EngineDeposedError(workflow_id)
        with transaction.atomic():
            return fn()


@pytest.mark.parametrize("store", [AcquireIgnoresHolder, RotateUnconditional])
@pytest.mark.django_db(transaction=True)
def test_claim_mutant(store):
    reports = race_engine_threads(store)
    with pytest.raises(AssertionError) as caught:
        check_race(reports, race_workflow_ids())
    print("\nCAUGHT", store.__name__, str(caught.value)[:700])


@pytest.mark.django_db(transaction=True)
def test_fence_mutant():
    Workflow.objects.create(workflow_id=WORKFLOW_ID, workflow_type="demo", status="running",
        state={"writes": []}, created_at_ms=START_MS, updated_at_ms=START_MS)
    race = race_fenced_writes(UnlockedFence)
    with pytest.raises(AssertionError) as caught:
        check_fence_race = check_fenced_race(race)
    print("\nCAUGHT UnlockedFence", str(caught.value)[:700])


class TakeoverIgnoresHolder(OrmClaimStore):
    def cas_grant(self, workflow_id, *, expected_epoch, expected_holder, holder, event):
        if expected_holder is not None:  # takeover: forget the observed holder
            return self._transition(workflow_id, {"epoch": expected_epoch}, expected_epoch + 1, holder, event)
        return super().cas_grant(workflow_id, expected_epoch=expected_epoch,
                                 expected_holder=expected_holder, holder=holder, event=event)


@pytest.mark.django_db(transaction=True)
def test_claim_mutant_takeover():
    reports = race_engine_threads(TakeoverIgnoresHolder)
    with pytest.raises(AssertionError) as caught:
        check_race(reports, race_workflow_ids())
    print("\nCAUGHT TakeoverIgnoresHolder", str(caught.value)[:700])
