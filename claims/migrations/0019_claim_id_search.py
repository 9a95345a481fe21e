"""The insert-only table of claimed workflow ids and its trigram index, on PostgreSQL
(claims.models.id_search says why the claim rows cannot carry the index).

A row-level trigger adds each new claim row's id; claim rows are never deleted, and a
TRUNCATE of the claims table (a test or benchmark clearing its fleet) empties this one
too. The table is filled from the existing rows in the same transaction as the trigger
is created, so no id falls between them.

The trigram index needs the pg_trgm extension (in PostgreSQL's contrib, trusted since 13:
a database owner may create it). Where it cannot be created the table is still kept and
searched, without the index: a narrower scan than the claim rows, and the same answers.
"""

from django.db import migrations, models

TABLE = "claims_claimidsearch"
CLAIMS = "claims_workflowclaim"
TRIGRAM_INDEX = "claims_claimidsearch_trgm"

CREATE = [
    f"CREATE TABLE {TABLE} (workflow_id varchar(255) PRIMARY KEY)",
    f"""CREATE FUNCTION {TABLE}_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TABLE} (workflow_id) VALUES (NEW.workflow_id) ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION {TABLE}_clear() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        TRUNCATE {TABLE};
        RETURN NULL;
    END $$""",
    f"CREATE TRIGGER {TABLE}_add AFTER INSERT ON {CLAIMS} "
    f"FOR EACH ROW EXECUTE FUNCTION {TABLE}_add()",
    f"CREATE TRIGGER {TABLE}_clear AFTER TRUNCATE ON {CLAIMS} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_clear()",
    f"LOCK TABLE {CLAIMS} IN SHARE MODE",
    f"INSERT INTO {TABLE} (workflow_id) SELECT workflow_id FROM {CLAIMS}",
]
DROP = [
    f"DROP TRIGGER IF EXISTS {TABLE}_clear ON {CLAIMS}",
    f"DROP TRIGGER IF EXISTS {TABLE}_add ON {CLAIMS}",
    f"DROP FUNCTION IF EXISTS {TABLE}_clear()",
    f"DROP FUNCTION IF EXISTS {TABLE}_add()",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in CREATE:
        schema_editor.execute(statement)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SAVEPOINT claims_trigram")
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except Exception:  # not installed, or not ours to create: search without it
            cursor.execute("ROLLBACK TO SAVEPOINT claims_trigram")
            return
        cursor.execute("RELEASE SAVEPOINT claims_trigram")
    schema_editor.execute(
        f"CREATE INDEX {TRIGRAM_INDEX} ON {TABLE} USING gin (workflow_id gin_trgm_ops)"
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
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
