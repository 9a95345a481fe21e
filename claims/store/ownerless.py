"""The reclaim passes' second discovery source, running workflows in the visibility index
with no holder, read from the ownerless marks (claims.models.ownerless) instead of every
running workflow: with nothing stranded, and nothing started, finished, released or
resumed since the last pass, there is nothing to read.

Each read judges a batch of marks after this store's place in them against the rows, as the
rule says it (running in the index, no holder present), answers the workflows that match,
and deletes the marks that no longer need looking at: those of workflows held or not
running, and all but the newest mark of one that is still stranded. Deleting by id keeps a
mark the triggers wrote after the judgement (a release committing meanwhile). A stranded
workflow's newest mark stays until a pass finds it held; a type no engine registers keeps
its marks, read again every pass, as the index's running rows were before.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from claims.models import OwnerlessMark, WorkflowClaim, WorkflowStatus, WorkflowVisibility
from claims.models.claims import HOLDER_PRESENT
from claims.models.ownerless import OWNERLESS_MARK_TABLE

from .claim_sets import CHUNK

# Marks judged per read at most: a mass release is taken a batch a pass, the place in the
# marks moving on, so no pass reads without bound. 12,300 marks took 75 ms to judge and
# prune on PostgreSQL (BENCHMARKS.md); a release of more than this at once is found over
# several passes.
MARK_BATCH = 20_000

# Another engine deleting the same marks holds them; skipping them (they are going anyway)
# keeps two deletions from waiting on each other in opposite orders.
_FORGET_POSTGRESQL = (
    f"DELETE FROM {OWNERLESS_MARK_TABLE} WHERE id IN "
    f"(SELECT id FROM {OWNERLESS_MARK_TABLE} WHERE id = ANY(%s) FOR UPDATE SKIP LOCKED)"
)


def _held() -> Exists:
    """The outer row's workflow has a claim row with a holder (the rule's "held")."""
    return Exists(WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id=OuterRef("workflow_id")))


class OwnerlessMarkQueries:
    _mark_after = 0  # this store's place in the marks: the last id of a full batch

    def list_unheld_running_indexed(self) -> list[str]:
        """Running workflows by the visibility index, less those with a holder, among the
        next ``MARK_BATCH`` marks (all of them while there are fewer); sorted."""
        running = WorkflowVisibility.objects.filter(
            workflow_id=OuterRef("workflow_id"), status=WorkflowStatus.RUNNING
        )
        marks = list(
            OwnerlessMark.objects.filter(id__gt=self._mark_after)
            .order_by("id")
            .annotate(running=Exists(running), held=_held())
            .values_list("id", "workflow_id", "running", "held")[:MARK_BATCH]
        )
        self._mark_after = marks[-1][0] if len(marks) == MARK_BATCH else 0
        newest: dict[str, int] = {}
        unneeded: list[int] = []
        for mark_id, workflow_id, is_running, is_held in marks:
            if not is_running or is_held:
                unneeded.append(mark_id)
                continue
            if workflow_id in newest:  # ids ascend: the one kept so far is older
                unneeded.append(newest[workflow_id])
            newest[workflow_id] = mark_id
        forget_marks(unneeded)
        return sorted(newest)


def forget_marks(mark_ids: list[int]) -> None:
    if not mark_ids:
        return
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_FORGET_POSTGRESQL, [mark_ids])
        return
    for start in range(0, len(mark_ids), CHUNK):
        OwnerlessMark.objects.filter(id__in=mark_ids[start : start + CHUNK]).delete()


def rebuild_marks() -> int:
    """Every mark judged again from the rows, in one transaction: the marks of the running
    workflows in the index with no holder, one each, and no other. For rows written in bulk
    (a seed marks every running index row it inserts, held or not); a write in flight marks
    on its own commit, after this, so nothing it strands is lost. Returns the number of
    marks."""
    running = WorkflowVisibility.objects.filter(status=WorkflowStatus.RUNNING)
    with transaction.atomic():
        OwnerlessMark.objects.all().delete()
        stranded = running.filter(~_held()).values_list("workflow_id", flat=True)
        with connection.cursor() as cursor:
            sql, params = stranded.query.sql_with_params()
            cursor.execute(f"INSERT INTO {OWNERLESS_MARK_TABLE} (workflow_id) {sql}", params)
            return int(cursor.rowcount)
