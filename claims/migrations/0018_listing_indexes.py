"""Four indexes the dashboard's listings read at a million claims.

claim_event_engine_idx: an engine's recent events, newest first, along its own entries
(through the time index alone they are found among every engine's).

workflow_claim_unheld_idx: the claim rows without a holder (finished workflows, and the
stranded ones), for the ownerless state and the state sort. Its predicate is the negation
of workflow_claim_held_idx's, term for term, as claims.store.claim_sets writes it:
PostgreSQL and SQLite use a partial index only for a query that repeats its predicate.
Without it a page of them in descending id order walks every held row first. A row
enters it when its claim is released, in an update that already writes index entries
(the held index's predicate names every holder column).

workflow_claim_garbled_idx: held rows that are garbage in their own columns
(claims.models.claims.HOLDER_GARBLED), for the invalid state: rare, so the index is small,
and the rows are read from it instead of judging every held row.

workflow_status_updated_idx: one status by last change, the workflows page's default sort.
"""

from django.db import migrations, models

UNHELD_INDEX = "workflow_claim_unheld_idx"

CREATE = (
    f"CREATE INDEX {UNHELD_INDEX} ON claims_workflowclaim (workflow_id) "
    "WHERE NOT (holder_engine_id IS NOT NULL OR holder_epoch IS NOT NULL "
    "OR holder_expires_at_ms IS NOT NULL OR holder_claimed_at_ms IS NOT NULL)"
)
DROP = f"DROP INDEX IF EXISTS {UNHELD_INDEX}"


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0017_counter_session_names"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="claimevent",
            index=models.Index(fields=["engine_id", "at_ms", "id"], name="claim_event_engine_idx"),
        ),
        migrations.RunSQL(CREATE, DROP),
        migrations.AddIndex(
            model_name='workflowclaim',
            index=models.Index(condition=models.Q(models.Q(('holder_engine_id__isnull', False), ('holder_epoch__isnull', False), ('holder_expires_at_ms__isnull', False), ('holder_claimed_at_ms__isnull', False), _connector='OR'), models.Q(('holder_engine_id__isnull', True), ('holder_engine_id', ''), ('holder_epoch__isnull', True), models.Q(('holder_epoch', models.F('epoch')), _negated=True), models.Q(('holder_expires_at_ms__isnull', True), ('holder_session_epoch__isnull', True)), ('holder_claimed_at_ms__isnull', True), ('holder_expires_at_ms__lt', 0), ('holder_claimed_at_ms__lt', 0), ('holder_expires_at_ms__gt', 9007199254740991), ('holder_claimed_at_ms__gt', 9007199254740991), _connector='OR')), fields=['workflow_id'], name='workflow_claim_garbled_idx'),
        ),
        migrations.AddIndex(
            model_name='workflow',
            index=models.Index(fields=['status', 'updated_at_ms', 'workflow_id'], name='workflow_status_updated_idx'),
        ),
    ]
