"""The history a run leaves behind: every committed ownership change, checkpoint and effect.

PostgreSQL triggers record, in the same transaction as the write they watch and with the
database's own clock:
- each change of a claim row's epoch or holder (renewals, which move only the expiry,
  are left out: there are thousands and they prove nothing the epoch does not);
- each version of a workflow row, so a checkpoint that a later one overwrote still counts;
- the time each ledger row (a demo step's side effect) was written.

Row locks order the writers of one row, and a trigger draws its id while holding the lock,
so ids give the commit order per row. A fenced write locks the claim row, so a grant that
follows it in time also follows it in the trigger clock.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from claims.models import StepLedger, Workflow, WorkflowClaim

CLAIM_LOG = "fault_claim_versions"
WORKFLOW_LOG = "fault_workflow_versions"
LEDGER_LOG = "fault_ledger_times"


def _table(model: type[Any]) -> str:
    return str(connection.ops.quote_name(model._meta.db_table))


def install_recorders() -> None:
    """Create the history tables and the triggers that fill them (once per fresh database)."""
    claims, workflows, ledger = _table(WorkflowClaim), _table(Workflow), _table(StepLedger)
    now_ms = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    statements = [
        f"CREATE TABLE {CLAIM_LOG} (id bigserial PRIMARY KEY, workflow_id text NOT NULL,"
        " epoch bigint NOT NULL, holder_engine_id text, holder_epoch bigint,"
        " at_ms bigint NOT NULL)",
        f"CREATE FUNCTION {CLAIM_LOG}_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" INSERT INTO {CLAIM_LOG} (workflow_id, epoch, holder_engine_id, holder_epoch, at_ms)"
        " VALUES (NEW.workflow_id, NEW.epoch, NEW.holder_engine_id, NEW.holder_epoch,"
        f" {now_ms}); RETURN NEW; END $$",
        f"CREATE TRIGGER {CLAIM_LOG}_insert AFTER INSERT ON {claims}"
        f" FOR EACH ROW EXECUTE FUNCTION {CLAIM_LOG}_write()",
        f"CREATE TRIGGER {CLAIM_LOG}_update AFTER UPDATE ON {claims} FOR EACH ROW"
        " WHEN (OLD.epoch IS DISTINCT FROM NEW.epoch"
        " OR OLD.holder_engine_id IS DISTINCT FROM NEW.holder_engine_id"
        " OR OLD.holder_epoch IS DISTINCT FROM NEW.holder_epoch)"
        f" EXECUTE FUNCTION {CLAIM_LOG}_write()",
        f"CREATE TABLE {WORKFLOW_LOG} (id bigserial PRIMARY KEY, workflow_id text NOT NULL,"
        " status text NOT NULL, state jsonb NOT NULL, at_ms bigint NOT NULL)",
        f"CREATE FUNCTION {WORKFLOW_LOG}_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" INSERT INTO {WORKFLOW_LOG} (workflow_id, status, state, at_ms)"
        f" VALUES (NEW.workflow_id, NEW.status, NEW.state::jsonb, {now_ms}); RETURN NEW; END $$",
        f"CREATE TRIGGER {WORKFLOW_LOG}_trigger AFTER INSERT OR UPDATE ON {workflows}"
        f" FOR EACH ROW EXECUTE FUNCTION {WORKFLOW_LOG}_write()",
        f"CREATE TABLE {LEDGER_LOG} (ledger_id bigint PRIMARY KEY, at_ms bigint NOT NULL)",
        f"CREATE FUNCTION {LEDGER_LOG}_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" INSERT INTO {LEDGER_LOG} (ledger_id, at_ms) VALUES (NEW.id, {now_ms}); RETURN NEW;"
        " END $$",
        f"CREATE TRIGGER {LEDGER_LOG}_trigger AFTER INSERT ON {ledger}"
        f" FOR EACH ROW EXECUTE FUNCTION {LEDGER_LOG}_write()",
    ]
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def database_now_ms() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
        return int(cursor.fetchone()[0])


@dataclass(frozen=True)
class ClaimVersion:
    epoch: int
    holder_engine_id: str | None
    holder_epoch: int | None
    at_ms: int


@dataclass(frozen=True)
class Checkpoint:
    """A step or sleep record that a committed workflow version added or changed."""

    record: str
    epoch: int
    engine_id: str
    at_ms: int


@dataclass(frozen=True)
class LedgerRow:
    step: str
    epoch: int
    engine_id: str
    at_ms: int


@dataclass
class History:
    """What the run left behind, per workflow; each part starts empty and fills as read."""

    claims: dict[str, list[ClaimVersion]] = field(default_factory=lambda: defaultdict(list))
    checkpoints: dict[str, list[Checkpoint]] = field(default_factory=lambda: defaultdict(list))
    final_status: dict[str, str] = field(default_factory=dict)
    ledger: dict[str, list[LedgerRow]] = field(default_factory=lambda: defaultdict(list))
    events: dict[str, list[tuple[str, int | None, int | None]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # The workflows of the "ledger" type, whose every step leaves a ledger row.
    ledger_workflows: set[str] = field(default_factory=set)

    def grant_at_ms(self, workflow_id: str, epoch: int) -> int | None:
        """When the claim first reached ``epoch`` (granted or rotated to it)."""
        for version in self.claims.get(workflow_id, ()):
            if version.epoch >= epoch:
                return version.at_ms
        return None


@dataclass
class BulkJobRecord:
    """One bulk job as it ended: its status, each item's (outcome, frozen epoch, epoch
    after), and the (epoch before, epoch after) of each claim event that names the job."""

    job_id: int
    status: str
    items: dict[str, tuple[str, int, int | None]]
    events: dict[str, list[tuple[int | None, int | None]]]


def bulk_jobs_read() -> list[BulkJobRecord]:
    from claims.models import BulkJob, BulkJobItem, ClaimEvent

    records = []
    for job_id, status in BulkJob.objects.order_by("id").values_list("id", "status"):
        items = {
            workflow_id: (outcome, frozen, after)
            for workflow_id, outcome, frozen, after in BulkJobItem.objects.filter(
                job_id=job_id
            ).values_list("workflow_id", "outcome", "frozen_epoch", "epoch_after")
        }
        events: dict[str, list[tuple[int | None, int | None]]] = defaultdict(list)
        for workflow_id, before, after in (
            ClaimEvent.objects.filter(bulk_job_id=job_id)
            .order_by("id")
            .values_list("workflow_id", "epoch_before", "epoch_after")
        ):
            events[workflow_id].append((before, after))
        records.append(BulkJobRecord(job_id, status, items, dict(events)))
    return records


def _decoded(value: Any) -> Any:
    # Django's PostgreSQL backend leaves jsonb undecoded in raw queries.
    return json.loads(value) if isinstance(value, str) else value


def history_read() -> History:
    history = History()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT workflow_id, epoch, holder_engine_id, holder_epoch, at_ms FROM {CLAIM_LOG}"
            " ORDER BY id"
        )
        for workflow_id, epoch, engine_id, holder_epoch, at_ms in cursor.fetchall():
            history.claims[workflow_id].append(ClaimVersion(epoch, engine_id, holder_epoch, at_ms))

        cursor.execute(f"SELECT workflow_id, status, state, at_ms FROM {WORKFLOW_LOG} ORDER BY id")
        previous: dict[str, dict[str, Any]] = {}
        for workflow_id, status, state, at_ms in cursor.fetchall():
            state = _decoded(state) or {}
            records = {
                f"{kind}:{name}": record
                for kind in ("steps", "sleeps")
                for name, record in (state.get(kind) or {}).items()
                if isinstance(record, dict)
            }
            before = previous.get(workflow_id, {})
            for key, record in records.items():
                if before.get(key) != record:
                    history.checkpoints[workflow_id].append(
                        Checkpoint(key, int(record["epoch"]), str(record["engine_id"]), at_ms)
                    )
            previous[workflow_id] = records
            history.final_status[workflow_id] = status

        cursor.execute(
            "SELECT l.workflow_id, l.step, l.epoch, l.engine_id, t.at_ms"
            f" FROM {_table(StepLedger)} l JOIN {LEDGER_LOG} t ON t.ledger_id = l.id ORDER BY l.id"
        )
        for workflow_id, step, epoch, engine_id, at_ms in cursor.fetchall():
            history.ledger[workflow_id].append(LedgerRow(step, epoch, engine_id, at_ms))

    from claims.models import ClaimEvent

    history.ledger_workflows = set(
        Workflow.objects.filter(workflow_type="ledger").values_list("workflow_id", flat=True)
    )

    for workflow_id, kind, epoch_before, epoch_after in ClaimEvent.objects.order_by(
        "id"
    ).values_list("workflow_id", "kind", "epoch_before", "epoch_after"):
        history.events[workflow_id].append((kind, epoch_before, epoch_after))
    return history
