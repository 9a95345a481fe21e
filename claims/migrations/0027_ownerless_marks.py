"""The ownerless marks (claims.models.ownerless) and the triggers that write them, on
PostgreSQL and SQLite alike.

Each trigger marks on its own row's change alone, never on what it reads of the other table:
a write racing another (a release and a backfill's index insert, each uncommitted) could
otherwise judge the other's row as it was, and a pass judging between the two commits
could delete the one mark written. Marked unconditionally, the transaction that commits
last leaves a mark that no pass can judge before both writes are visible.

The triggers are created and the table is filled from the rows (every running workflow in
the index with no holder) in one transaction, with the claims and visibility tables locked
against writes in between on PostgreSQL (about a second at a million workflows, well
inside a lease), so no write falls between the fill and the triggers. A write in flight
that locked one table and waits for the other may deadlock with it: PostgreSQL aborts
one of the two, and the migration (or the engine's pass) is run again."""

from django.db import migrations, models

MARKS = "claims_ownerlessmark"
CLAIMS = "claims_workflowclaim"
VISIBILITY = "claims_workflowvisibility"

HOLDER_COLUMNS = ("holder_engine_id", "holder_epoch", "holder_expires_at_ms", "holder_claimed_at_ms")


def _present(row):
    """claims.models.claims.HOLDER_PRESENT, of ``row`` (OLD, NEW or an alias)."""
    return "(" + " OR ".join(f"{row}.{column} IS NOT NULL" for column in HOLDER_COLUMNS) + ")"


def _held(workflow_id):
    return f"EXISTS (SELECT 1 FROM {CLAIMS} c WHERE c.workflow_id = {workflow_id} AND {_present('c')})"


RELEASED = f"{_present('OLD')} AND NOT {_present('NEW')}"
FILL = [
    f"DELETE FROM {MARKS}",
    f"INSERT INTO {MARKS} (workflow_id) SELECT v.workflow_id FROM {VISIBILITY} v "
    f"WHERE v.status = 'running' AND NOT {_held('v.workflow_id')}",
]

TRIGGERS = [
    # (name, event, table, WHEN over the row's own values, the row whose id is marked)
    ("released", "AFTER UPDATE", CLAIMS, RELEASED, "NEW"),  # lost its holder
    ("deleted", "AFTER DELETE", CLAIMS, _present("OLD"), "OLD"),  # a held row deleted
    ("indexed", "AFTER INSERT", VISIBILITY, "NEW.status = 'running'", "NEW"),
    (
        "resumed",
        "AFTER UPDATE OF status",
        VISIBILITY,
        "NEW.status = 'running' AND OLD.status <> 'running'",
        "NEW",
    ),
]


def _plpgsql(name, body):
    return (
        f"CREATE OR REPLACE FUNCTION {MARKS}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND $$"
    )


def _insert(row):
    return f"INSERT INTO {MARKS} (workflow_id) VALUES ({row}.workflow_id);"


# A TRUNCATE of the claims (a test or benchmark clearing its fleet) leaves every running
# workflow in the index unheld.
POSTGRESQL_TRUNCATED = (
    f"INSERT INTO {MARKS} (workflow_id) SELECT workflow_id FROM {VISIBILITY} WHERE status = 'running';"
)


def _postgresql_create():
    statements = []
    for name, event, table, condition, row in TRIGGERS:
        statements += [
            _plpgsql(name, _insert(row)),
            f"DROP TRIGGER IF EXISTS {MARKS}_{name} ON {table}",
            f"CREATE TRIGGER {MARKS}_{name} {event} ON {table} FOR EACH ROW "
            f"WHEN ({condition}) EXECUTE FUNCTION {MARKS}_{name}()",
        ]
    statements += [
        _plpgsql("truncated", POSTGRESQL_TRUNCATED),
        f"DROP TRIGGER IF EXISTS {MARKS}_truncated ON {CLAIMS}",
        f"CREATE TRIGGER {MARKS}_truncated AFTER TRUNCATE ON {CLAIMS} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {MARKS}_truncated()",
        f"LOCK TABLE {CLAIMS}, {VISIBILITY} IN SHARE MODE",
    ]
    return statements + FILL


def _postgresql_drop():
    statements = []
    for name, _, table, _, _ in TRIGGERS:
        statements += [
            f"DROP TRIGGER IF EXISTS {MARKS}_{name} ON {table}",
            f"DROP FUNCTION IF EXISTS {MARKS}_{name}()",
        ]
    return statements + [
        f"DROP TRIGGER IF EXISTS {MARKS}_truncated ON {CLAIMS}",
        f"DROP FUNCTION IF EXISTS {MARKS}_truncated()",
    ]


def _sqlite_create():
    return [
        f"CREATE TRIGGER IF NOT EXISTS {MARKS}_{name} {event} ON {table} FOR EACH ROW "
        f"WHEN {condition} BEGIN {_insert(row)} END"
        for name, event, table, condition, row in TRIGGERS
    ] + FILL


def _sqlite_drop():
    return [f"DROP TRIGGER IF EXISTS {MARKS}_{name}" for name, _, _, _, _ in TRIGGERS]


def _run(schema_editor, by_vendor):
    connection = schema_editor.connection
    if connection.vendor not in by_vendor:
        raise NotImplementedError(f"no ownerless-mark triggers for {connection.vendor}")
    with connection.cursor() as cursor:
        for statement in by_vendor[connection.vendor]():
            cursor.execute(statement)


def create(apps, schema_editor):
    _run(schema_editor, {"postgresql": _postgresql_create, "sqlite": _sqlite_create})


def drop(apps, schema_editor):
    _run(schema_editor, {"postgresql": _postgresql_drop, "sqlite": _sqlite_drop})


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0026_workflow_due_time"),
    ]

    operations = [
        migrations.CreateModel(
            name="OwnerlessMark",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("workflow_id", models.CharField(max_length=255)),
            ],
            options={
                "db_table": "claims_ownerlessmark",
            },
        ),
        migrations.RunPython(create, drop),
    ]
