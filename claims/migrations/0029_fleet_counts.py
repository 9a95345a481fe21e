"""The fleet's kept counts (claims.models.fleet_counts) and the triggers that write their
deltas, on PostgreSQL and SQLite alike.

A claim row's key is (holder engine, session epoch when its class is "session", row class);
a workflow's is (status, type). An update writes a delta only where a key's count moves,
so a renewal, a checkpoint or a heartbeat writes none. On PostgreSQL every statement on the
claims writes one grouped delta per key whose count it moved, from its transition tables
(a takeover of a thousand claims writes two rows; a row trigger would cost 16 ms more per
thousand); the workflows, written a row at a time, have row triggers whose WHEN skips an
update that keeps status and type; a TRUNCATE drops the kept counts, so the next snapshot
counts from the rows. SQLite has row triggers only, with the same WHEN. Nothing is filled here: with no kept counts, beat's next
snapshot counts from the rows (claims.services.fleet_counts)."""

from django.db import migrations, models

DELTAS = "claims_fleetcountdelta"
KEPT = "claims_fleetcounts"
CLAIMS = "claims_workflowclaim"
WORKFLOWS = "claims_workflow"
MAX_SAFE_INTEGER = 2**53 - 1

HOLDER_COLUMNS = (
    "holder_engine_id",
    "holder_epoch",
    "holder_expires_at_ms",
    "holder_claimed_at_ms",
)


def claim_class(r):
    """A claim row's class, as claims.services.fleet_counts.claim_class_case says it:
    HOLDER_PRESENT and HOLDER_INVALID (claims.models.claims) of the row ``r``."""
    present = " OR ".join(f"{r}.{column} IS NOT NULL" for column in HOLDER_COLUMNS)
    invalid = " OR ".join(
        [
            f"{r}.holder_engine_id IS NULL",
            f"{r}.holder_engine_id = ''",
            f"{r}.holder_epoch IS NULL",
            f"{r}.holder_epoch <> {r}.epoch",
            f"({r}.holder_expires_at_ms IS NULL AND {r}.holder_session_epoch IS NULL)",
            f"{r}.holder_claimed_at_ms IS NULL",
            f"{r}.holder_expires_at_ms < 0",
            f"{r}.holder_claimed_at_ms < 0",
            f"{r}.holder_expires_at_ms > {MAX_SAFE_INTEGER}",
            f"{r}.holder_claimed_at_ms > {MAX_SAFE_INTEGER}",
        ]
    )
    return (
        f"(CASE WHEN NOT ({present}) THEN 'ownerless' WHEN ({invalid}) THEN 'invalid' "
        f"WHEN {r}.holder_session_epoch IS NOT NULL THEN 'session' ELSE 'lease' END)"
    )


def claim_key(r):
    """(name, session_epoch, part) of a claim row."""
    cls = claim_class(r)
    return (
        f"{r}.holder_engine_id",
        f"(CASE WHEN {cls} = 'session' THEN {r}.holder_session_epoch END)",
        cls,
    )


def workflow_key(r):
    return (f"{r}.status", "CAST(NULL AS BIGINT)", f"{r}.workflow_type")


def claim_key_changed(differ):
    """Whether an update moved a claim row to another key; ``differ`` is the null-safe
    inequality (PostgreSQL's IS DISTINCT FROM; SQLite's IS NOT, which every SQLite has)."""
    old, new = claim_key("OLD"), claim_key("NEW")
    return " OR ".join(f"{a} {differ} {b}" for a, b in zip(old, new, strict=True))


def workflow_key_changed(differ):
    return f"OLD.status {differ} NEW.status OR OLD.workflow_type {differ} NEW.workflow_type"


TABLES = [
    # (trigger name, table, kind, key of a row, WHEN an update changes the key, given the
    # null-safe inequality)
    ("claim", CLAIMS, "claim", claim_key, claim_key_changed),
    ("workflow", WORKFLOWS, "workflow", workflow_key, workflow_key_changed),
]

COLUMNS = f"INSERT INTO {DELTAS} (kind, name, session_epoch, part, n)"


def _values(kind, key, row, sign):
    name, session_epoch, part = key(row)
    return f"('{kind}', {name}, {session_epoch}, {part}, {sign}1)"


def _row_update(kind, key):
    return f"{COLUMNS} VALUES {_values(kind, key, 'OLD', '-')}, {_values(kind, key, 'NEW', '')};"


def _grouped(kind, key, rows, sign):
    name, session_epoch, part = key("r")
    return (
        f"{COLUMNS} SELECT '{kind}', k.name, k.session_epoch, k.part, {sign}count(*) FROM "
        f"(SELECT {name} AS name, {session_epoch} AS session_epoch, {part} AS part FROM {rows} r) k "
        "GROUP BY k.name, k.session_epoch, k.part;"
    )


def _net(kind, key):
    """An UPDATE statement's net change per key: its rows as they were, less, as they are;
    keys whose counts did not move (a renewal's, a checkpoint's) write nothing."""
    name, session_epoch, part = key("r")
    row = f"{name} AS name, {session_epoch} AS session_epoch, {part} AS part"
    return (
        f"{COLUMNS} SELECT '{kind}', k.name, k.session_epoch, k.part, sum(k.n) FROM "
        f"(SELECT {row}, -1 AS n FROM removed r UNION ALL SELECT {row}, 1 AS n FROM added r) k "
        "GROUP BY k.name, k.session_epoch, k.part HAVING sum(k.n) <> 0;"
    )


def _plpgsql(name, body):
    return (
        f"CREATE OR REPLACE FUNCTION {DELTAS}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND $$"
    )


# A TRUNCATE (a test or benchmark clearing its fleet) drops the kept counts and their
# deltas: the next snapshot counts from the rows.
TRUNCATED = f"DELETE FROM {KEPT}; DELETE FROM {DELTAS};"


def _per_statement(table, kind, key):
    """Claims change in sets (a takeover, a sweep, a renewal of thousands): one grouped
    delta per statement, from its transition tables."""
    return [
        (
            "inserted",
            f"AFTER INSERT ON {table} REFERENCING NEW TABLE AS added FOR EACH STATEMENT",
            _grouped(kind, key, "added", ""),
        ),
        (
            "deleted",
            f"AFTER DELETE ON {table} REFERENCING OLD TABLE AS removed FOR EACH STATEMENT",
            _grouped(kind, key, "removed", "-"),
        ),
        (
            "changed",
            f"AFTER UPDATE ON {table} REFERENCING OLD TABLE AS removed NEW TABLE AS added "
            "FOR EACH STATEMENT",
            _net(kind, key),
        ),
    ]


def _per_row(table, kind, key, changed):
    """Workflows change one row a statement (a start, a checkpoint, a finish): a statement
    trigger would run a grouped query for every checkpoint, where a row trigger's WHEN,
    judged before any function runs, skips every one that keeps status and type."""
    return [
        ("inserted", f"AFTER INSERT ON {table} FOR EACH ROW", f"{COLUMNS} VALUES {_values(kind, key, 'NEW', '')};"),
        ("deleted", f"AFTER DELETE ON {table} FOR EACH ROW", f"{COLUMNS} VALUES {_values(kind, key, 'OLD', '-')};"),
        ("changed", f"AFTER UPDATE ON {table} FOR EACH ROW WHEN ({changed})", _row_update(kind, key)),
    ]


def _postgresql_create():
    statements = []
    for name, table, kind, key, changed in TABLES:
        by_statement = table == CLAIMS
        triggers = (
            _per_statement(table, kind, key)
            if by_statement
            else _per_row(table, kind, key, changed("IS DISTINCT FROM"))
        )
        triggers.append(("truncated", f"AFTER TRUNCATE ON {table} FOR EACH STATEMENT", TRUNCATED))
        for suffix, event, body in triggers:
            trigger = f"{name}_{suffix}"
            statements += [
                _plpgsql(trigger, body),
                f"DROP TRIGGER IF EXISTS {DELTAS}_{trigger} ON {table}",
                f"CREATE TRIGGER {DELTAS}_{trigger} {event} EXECUTE FUNCTION {DELTAS}_{trigger}()",
            ]
    return statements


def _trigger_names():
    for name, table, *_ in TABLES:
        for suffix in ("inserted", "deleted", "changed", "truncated"):
            yield f"{name}_{suffix}", table


def _postgresql_drop():
    statements = []
    for trigger, table in _trigger_names():
        statements += [
            f"DROP TRIGGER IF EXISTS {DELTAS}_{trigger} ON {table}",
            f"DROP FUNCTION IF EXISTS {DELTAS}_{trigger}()",
        ]
    return statements


def _sqlite_create():
    statements = []
    for name, table, kind, key, changed in TABLES:
        statements += [
            f"CREATE TRIGGER IF NOT EXISTS {DELTAS}_{name}_inserted AFTER INSERT ON {table} "
            f"FOR EACH ROW BEGIN {COLUMNS} VALUES {_values(kind, key, 'NEW', '')}; END",
            f"CREATE TRIGGER IF NOT EXISTS {DELTAS}_{name}_deleted AFTER DELETE ON {table} "
            f"FOR EACH ROW BEGIN {COLUMNS} VALUES {_values(kind, key, 'OLD', '-')}; END",
            f"CREATE TRIGGER IF NOT EXISTS {DELTAS}_{name}_changed AFTER UPDATE ON {table} "
            f"FOR EACH ROW WHEN {changed('IS NOT')} BEGIN {_row_update(kind, key)} END",
        ]
    return statements


def _sqlite_drop():
    return [
        f"DROP TRIGGER IF EXISTS {DELTAS}_{trigger}"
        for trigger, _ in _trigger_names()
        if not trigger.endswith("truncated")
    ]


def _run(schema_editor, by_vendor):
    connection = schema_editor.connection
    if connection.vendor not in by_vendor:
        raise NotImplementedError(f"no fleet-count triggers for {connection.vendor}")
    with connection.cursor() as cursor:
        for statement in by_vendor[connection.vendor]():
            cursor.execute(statement)


def create(apps, schema_editor):
    _run(schema_editor, {"postgresql": _postgresql_create, "sqlite": _sqlite_create})


def drop(apps, schema_editor):
    _run(schema_editor, {"postgresql": _postgresql_drop, "sqlite": _sqlite_drop})


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0028_claim_granted_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="FleetCountDelta",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("claim", "Claim"), ("workflow", "Workflow")], max_length=8
                    ),
                ),
                ("name", models.CharField(max_length=255, null=True)),
                ("session_epoch", models.BigIntegerField(null=True)),
                ("part", models.CharField(max_length=100)),
                ("n", models.IntegerField()),
            ],
            options={
                "db_table": "claims_fleetcountdelta",
            },
        ),
        migrations.CreateModel(
            name="FleetCounts",
            fields=[
                (
                    "id",
                    models.PositiveSmallIntegerField(
                        default=1, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("recounted_at_ms", models.BigIntegerField()),
                ("claims", models.JSONField(default=list)),
                ("workflows", models.JSONField(default=list)),
                ("unmarked_ownerless", models.JSONField(default=list)),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("id", 1)), name="fleet_counts_singleton"
                    )
                ],
            },
        ),
        migrations.RunPython(create, drop),
    ]
