"""The ownerless marks (claims.models.ownerless) and the triggers that write them, on
PostgreSQL and SQLite alike.

The triggers are created and the table is filled from the rows (every running workflow in
the index with no holder) in one transaction, with the claims and visibility tables locked
against writes in between on PostgreSQL (about a second at a million workflows, well
inside a lease), so no write falls between the fill and the triggers."""

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


def _not_indexed_otherwise(workflow_id):
    """Running in the index, or not in it at all (an index insert not visible yet)."""
    return (
        f"NOT EXISTS (SELECT 1 FROM {VISIBILITY} v "
        f"WHERE v.workflow_id = {workflow_id} AND v.status <> 'running')"
    )


RELEASED = f"{_present('OLD')} AND NOT {_present('NEW')}"
FILL = [
    f"DELETE FROM {MARKS}",
    f"INSERT INTO {MARKS} (workflow_id) SELECT v.workflow_id FROM {VISIBILITY} v "
    f"WHERE v.status = 'running' AND NOT {_held('v.workflow_id')}",
]


def _plpgsql(name, body):
    return (
        f"CREATE OR REPLACE FUNCTION {MARKS}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND $$"
    )


def _mark(row, condition=None):
    insert = f"INSERT INTO {MARKS} (workflow_id) VALUES ({row}.workflow_id);"
    return insert if condition is None else f"IF {condition} THEN {insert} END IF;"


POSTGRESQL_TRIGGERS = [
    # (name, function body, table, timing and event, WHEN condition or None)
    ("released", _mark("NEW", _not_indexed_otherwise("NEW.workflow_id")), CLAIMS,
     "AFTER UPDATE", RELEASED),
    ("deleted", _mark("OLD", _not_indexed_otherwise("OLD.workflow_id")), CLAIMS,
     "AFTER DELETE", _present("OLD")),
    ("indexed", _mark("NEW", f"NOT {_held('NEW.workflow_id')}"), VISIBILITY,
     "AFTER INSERT", "NEW.status = 'running'"),
    ("resumed", _mark("NEW"), VISIBILITY,
     "AFTER UPDATE OF status", "NEW.status = 'running' AND OLD.status <> 'running'"),
]
# A TRUNCATE of the claims (a test or benchmark clearing its fleet) leaves every running
# workflow in the index unheld.
POSTGRESQL_TRUNCATED = (
    f"INSERT INTO {MARKS} (workflow_id) SELECT workflow_id FROM {VISIBILITY} WHERE status = 'running';"
)


def _postgresql_create():
    statements = []
    for name, body, table, event, condition in POSTGRESQL_TRIGGERS:
        statements += [
            _plpgsql(name, body),
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
    for name, _, table, _, _ in POSTGRESQL_TRIGGERS:
        statements += [
            f"DROP TRIGGER IF EXISTS {MARKS}_{name} ON {table}",
            f"DROP FUNCTION IF EXISTS {MARKS}_{name}()",
        ]
    return statements + [
        f"DROP TRIGGER IF EXISTS {MARKS}_truncated ON {CLAIMS}",
        f"DROP FUNCTION IF EXISTS {MARKS}_truncated()",
    ]


SQLITE_TRIGGERS = [
    ("released", f"AFTER UPDATE ON {CLAIMS}",
     f"{RELEASED} AND {_not_indexed_otherwise('NEW.workflow_id')}", "NEW"),
    ("deleted", f"AFTER DELETE ON {CLAIMS}",
     f"{_present('OLD')} AND {_not_indexed_otherwise('OLD.workflow_id')}", "OLD"),
    ("indexed", f"AFTER INSERT ON {VISIBILITY}",
     f"NEW.status = 'running' AND NOT {_held('NEW.workflow_id')}", "NEW"),
    ("resumed", f"AFTER UPDATE OF status ON {VISIBILITY}",
     "NEW.status = 'running' AND OLD.status <> 'running'", "NEW"),
]


def _sqlite_create():
    return [
        f"CREATE TRIGGER IF NOT EXISTS {MARKS}_{name} {event} FOR EACH ROW WHEN {condition} "
        f"BEGIN INSERT INTO {MARKS} (workflow_id) VALUES ({row}.workflow_id); END"
        for name, event, condition, row in SQLITE_TRIGGERS
    ] + FILL


def _sqlite_drop():
    return [f"DROP TRIGGER IF EXISTS {MARKS}_{name}" for name, _, _, _ in SQLITE_TRIGGERS]


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
