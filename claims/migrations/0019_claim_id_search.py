"""The insert-only table of claimed workflow ids and its trigram index, on PostgreSQL
(claims.models.id_search says why the claim rows cannot carry the index).

A row-level trigger adds each new claim row's id; claim rows are never deleted, and a
TRUNCATE of the claims table (a test or benchmark clearing its fleet) empties this one
too. The table is filled from the existing rows in the same transaction as the trigger
is created, so no id falls between them: claim writes wait for that transaction (a few
seconds at a million claims, well inside a lease). The trigram index is then built
concurrently, outside it, so a running fleet keeps renewing while it is built.

The trigram index needs the pg_trgm extension (in PostgreSQL's contrib, trusted since 13:
a database owner may create it). Where it cannot be created the table is still kept and
searched, without the index: a narrower scan than the claim rows, and the same answers.
"""

from django.db import DatabaseError, migrations, models, transaction

TABLE = "claims_claimidsearch"
CLAIMS = "claims_workflowclaim"
TRIGRAM_INDEX = "claims_claimidsearch_trgm"

CREATE = [
    f"CREATE TABLE IF NOT EXISTS {TABLE} (workflow_id varchar(255) PRIMARY KEY)",
    f"""CREATE OR REPLACE FUNCTION {TABLE}_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TABLE} (workflow_id) VALUES (NEW.workflow_id) ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION {TABLE}_clear() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        TRUNCATE {TABLE};
        RETURN NULL;
    END $$""",
    # Again from the start if the index build below failed: each step can be repeated.
    f"DROP TRIGGER IF EXISTS {TABLE}_add ON {CLAIMS}",
    f"DROP TRIGGER IF EXISTS {TABLE}_clear ON {CLAIMS}",
    f"CREATE TRIGGER {TABLE}_add AFTER INSERT ON {CLAIMS} "
    f"FOR EACH ROW EXECUTE FUNCTION {TABLE}_add()",
    f"CREATE TRIGGER {TABLE}_clear AFTER TRUNCATE ON {CLAIMS} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_clear()",
    f"LOCK TABLE {CLAIMS} IN SHARE MODE",
    f"INSERT INTO {TABLE} (workflow_id) SELECT workflow_id FROM {CLAIMS} ON CONFLICT DO NOTHING",
]
DROP = [
    f"DROP TRIGGER IF EXISTS {TABLE}_clear ON {CLAIMS}",
    f"DROP TRIGGER IF EXISTS {TABLE}_add ON {CLAIMS}",
    f"DROP FUNCTION IF EXISTS {TABLE}_clear()",
    f"DROP FUNCTION IF EXISTS {TABLE}_add()",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def _execute_in_one_transaction(connection, statements):
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def create(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    _execute_in_one_transaction(connection, CREATE)
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError:  # not installed, or not ours to create: search without it
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRIGRAM_INDEX} "
            f"ON {TABLE} USING gin (workflow_id gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    _execute_in_one_transaction(connection, DROP)


class Migration(migrations.Migration):
    atomic = False  # the index is built concurrently, which no transaction may enclose
    dependencies = [
        ("claims", "0018_listing_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="ClaimIdSearch",
            fields=[
                (
                    "workflow_id",
                    models.CharField(max_length=255, primary_key=True, serialize=False),
                ),
            ],
            options={"db_table": "claims_claimidsearch", "managed": False},
        ),
        migrations.RunPython(create, drop),
    ]
