"""The holder index gains the claim time: an engine's claims, and its recent grants alone
(reclaim's audit of the rows naming it, docs/design.md §4).

On PostgreSQL the new index is built concurrently, then the old one dropped concurrently,
outside a transaction: a fleet keeps renewing and granting while the index is built (a
plain build would hold writes to the claims table for its whole length, seconds at a
million claims). The new one exists before the old one goes, so no read is left without
one. SQLite builds and drops them as Django does.
"""

from django.db import migrations, models

TABLE = "claims_workflowclaim"
NEW = "workflow_claim_granted_idx"
OLD = "workflow_claim_holder_idx"
NEW_FIELDS = ["holder_engine_id", "holder_claimed_at_ms"]
OLD_FIELDS = ["holder_engine_id"]


def _swap(schema_editor, model, *, add, add_fields, drop, drop_fields):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        columns = ", ".join(add_fields)
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {add} ON {TABLE} ({columns})")
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {drop}")
        return
    schema_editor.add_index(model, models.Index(fields=add_fields, name=add))
    schema_editor.remove_index(model, models.Index(fields=drop_fields, name=drop))


def forwards(apps, schema_editor):
    model = apps.get_model("claims", "WorkflowClaim")
    _swap(schema_editor, model, add=NEW, add_fields=NEW_FIELDS, drop=OLD, drop_fields=OLD_FIELDS)


def backwards(apps, schema_editor):
    model = apps.get_model("claims", "WorkflowClaim")
    _swap(schema_editor, model, add=OLD, add_fields=OLD_FIELDS, drop=NEW, drop_fields=NEW_FIELDS)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("claims", "0027_ownerless_marks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="workflowclaim",
                    index=models.Index(fields=NEW_FIELDS, name=NEW),
                ),
                migrations.RemoveIndex(model_name="workflowclaim", name=OLD),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
